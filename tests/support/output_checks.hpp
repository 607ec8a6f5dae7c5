// SPDX-License-Identifier: Apache-2.0
// What the tests read of the programs' results: the error lines a program printed, a
// recording's streams (ffprobe), and its sync as heard (tests/support/av_sync.py; the test
// defines RDMAVIDEO_SOURCE_DIR).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"

namespace rdmavideo::testing {

/// The lines of `text` that say "error" (a program's log lines at error level).
inline std::vector<std::string> error_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") != std::string::npos) out.push_back(line);
  }
  return out;
}

/// "codec,type" of each stream of `file`, one a line, as ffprobe says them.
inline std::string stream_codecs(const std::filesystem::path& file) {
  return capture("ffprobe -v error -show_entries stream=codec_name,codec_type -of csv=p=0 '" +
                 file.string() + "'");
}

/// The frames of `file`'s first video stream that ffprobe counts, decoding it to the end; -1
/// where it counts none.
inline int decoded_frames(const std::filesystem::path& file) {
  const std::string out = capture(
      "ffprobe -v error -count_frames -select_streams v:0 -show_entries "
      "stream=nb_read_frames -of csv=p=0 '" +
      file.string() + "'");
  return out.empty() ? -1 : std::atoi(out.c_str());
}

#ifdef RDMAVIDEO_SOURCE_DIR
/// av_sync.py's measure of `file`'s audio track `track` against its picture's flashes (within
/// `crop`, W:H:X:Y, where given); an empty object, and a failure, where it measured nothing.
inline nlohmann::json av_sync(const std::filesystem::path& file, int track = 0,
                              const std::string& crop = "") {
  const std::string text =
      capture("python3 '" RDMAVIDEO_SOURCE_DIR "/tests/support/av_sync.py' '" + file.string() +
              "' --audio " + std::to_string(track) + (crop.empty() ? "" : " --crop " + crop));
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    ADD_FAILURE() << "av_sync.py gave no result for " << file << ": " << text;
    return nlohmann::json::object();
  }
}
#endif

/// Every beep within one frame period of its flash, as many beeps as flashes (at least
/// `beeps`), the tone at `hz`, and the audio as long as the picture within one frame
/// (`extra_s` more where the codec pads, as AAC does).
inline void expect_in_sync(const nlohmann::json& m, int beeps, double hz, double extra_s = 0) {
  ASSERT_TRUE(m.contains("beeps")) << m.dump();
  const double frame_ms = m["frame_ms"];
  EXPECT_GE(m["beeps"].get<int>(), beeps) << m.dump();
  EXPECT_EQ(m["beeps"], m["flashes"]) << m.dump();
  EXPECT_LE(m["max_abs_offset_ms"].get<double>(), frame_ms + 0.5) << m.dump();
  EXPECT_NEAR(m["tone_hz"].get<double>(), hz, hz * 0.01) << m.dump();
  EXPECT_LE(std::abs(m["video_s"].get<double>() - m["audio_s"].get<double>()),
            frame_ms / 1000 + extra_s + 1e-3)
      << m.dump();
}

}  // namespace rdmavideo::testing
