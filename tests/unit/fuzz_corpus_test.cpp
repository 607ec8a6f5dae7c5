// SPDX-License-Identifier: Apache-2.0
// The fuzz targets (tests/fuzz/targets.hpp) over every file of the seed corpus and every input kept
// from a finding (tests/fuzz/regressions), in every build and under the sanitizers: a crash that
// fuzzing found stays fixed, and the seeds stay meaningful (each receiver session seed must
// reach a stream, or the corpus no longer exercises what it was made for).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "targets.hpp"

namespace rdmavideo::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md")
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const fs::path kFuzzDir = RDMAVIDEO_FUZZ_DIR;

// `run(bytes, name)` on each of `files`, its failures traced to the file.
template <typename Run>
void each(const std::vector<fs::path>& files, Run run) {
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const auto b = bytes_of(f);
    run(b, f.filename().string());
  }
}

TEST(FuzzCorpus, DecoderSeedsDecodeAndRoundTrip) {
  const auto files = files_in(kFuzzDir / "corpus" / "decode");
  ASSERT_GE(files.size(), 10u) << "one seed per message type";
  each(files, [](const auto& b, const std::string&) { decode_one(b.data(), b.size()); });
}

TEST(FuzzCorpus, StreamTimeLineSeedsRunEveryOperation) {
  const auto files = files_in(kFuzzDir / "corpus" / "stream");
  ASSERT_GE(files.size(), 3u);
  each(files, [](const auto& b, const std::string&) {
    EXPECT_GE(place_stream(b.data(), b.size()), 180u);
  });
}

TEST(FuzzCorpus, ReceiverSeedsRunToTheirEnd) {
  const auto files = files_in(kFuzzDir / "corpus" / "receiver");
  ASSERT_GE(files.size(), 10u);
  each(files, [](const auto& b, const std::string& name) {
    const uint64_t frames = receive_stream(b.data(), b.size());
    if (name.find("mode128") != std::string::npos || name.find("mode201") != std::string::npos) {
      EXPECT_EQ(frames, 0u);  // shed while it waited for StreamStart
    } else if (name.rfind("rate_refused", 0) == 0) {
      EXPECT_EQ(frames, 0u);  // the front end's check refused the format
    } else if (name.find("mode16") != std::string::npos) {
      EXPECT_EQ(frames, 3u);  // the frame limit
    } else if (name == "format_change_mode43") {
      EXPECT_EQ(frames, 4u);  // the sink holds frames of the first ring: no room for a second
    } else if (name == "v2_session_mode0") {
      EXPECT_EQ(frames, 5u);  // a version 2 sender, as it always streamed
    } else if (name == "v2_format_change_mode8") {
      EXPECT_EQ(frames, 8u);
    } else if (name.rfind("audio_session", 0) == 0) {
      EXPECT_EQ(frames, 5u);  // every frame, the audio beside them
    } else if (name.rfind("audio_on_v2", 0) == 0) {
      EXPECT_EQ(frames, 2u);  // refused at the first audio message
    } else if (name.rfind("audio_only", 0) == 0) {
      EXPECT_EQ(frames, 0u);  // refused before any frame
    } else if (name.rfind("session", 0) == 0) {
      EXPECT_EQ(frames, 5u);
    } else if (name.rfind("format_change", 0) == 0) {
      EXPECT_EQ(frames, 8u);  // mode 8 too: the old ring is freed before the new one counts
    } else {
      EXPECT_EQ(frames, 0u);  // a keyed receiver and a wrong proof
    }
  });
}

TEST(FuzzCorpus, KeptFindingsStayFixed) {
  each(files_in(kFuzzDir / "regressions"), [](const auto& b, const std::string&) {
    decode_one(b.data(), b.size());
    receive_stream(b.data(), b.size());
  });
}

#if RDMAVIDEO_FUZZ_MEDIA
// The sinks' seeds: each program's sound reaches the converter (the tile's clock tied, the
// chunks converted), and the recordings and placements they make hold their invariants.
TEST(FuzzCorpus, SoundSeedsReachTheConverterAndTheRecording) {
  const auto files = files_in(kFuzzDir / "corpus" / "sound");
  ASSERT_GE(files.size(), 4u);
  each(files, [](const auto& b, const std::string&) {
    const auto run = place_sound(b.data(), b.size());
    EXPECT_GT(run.converted, 0u) << "the tile's sound was converted";
    EXPECT_EQ(run.frames, 6u) << "the recording took its frames";
    EXPECT_GT(run.recorded, 0u) << "and its sound";
  });
}

// Inputs that made the sinks' targets fail (regressions/sound, regressions/tiles).
TEST(FuzzCorpus, KeptSinkFindingsStayFixed) {
  each(files_in(kFuzzDir / "regressions" / "sound"),
       [](const auto& b, const std::string&) { (void)place_sound(b.data(), b.size()); });
  each(files_in(kFuzzDir / "regressions" / "tiles"),
       [](const auto& b, const std::string&) { place_tiles(b.data(), b.size()); });
}

TEST(FuzzCorpus, TileSeedsPlaceTheirFrames) {
  const auto files = files_in(kFuzzDir / "corpus" / "tiles");
  ASSERT_GE(files.size(), 4u);
  each(files, [](const auto& b, const std::string&) { place_tiles(b.data(), b.size()); });
}
#endif

}  // namespace
}  // namespace rdmavideo::fuzz
