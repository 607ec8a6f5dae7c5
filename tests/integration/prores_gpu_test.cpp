// SPDX-License-Identifier: Apache-2.0
// The project's own ProRes encoder recording GPU rings, with the real binaries over
// 127.0.0.1 TCP and the stand-in CUDA driver (tests/fakecuda), which runs the library's
// kernels on the CPU with the very arithmetic the GPU runs: four senders of four formats into
// one receiver's GPU rings, each stream made 10-bit 4:2:2 and coded on the "GPU", recorded
// with its tone and timecode, and no picture downloaded. A build without the kernels (the
// sanitizer build) codes the same streams with the CPU twin after a download of each frame,
// and says so.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "output_checks.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

double psnr(const std::filesystem::path& a, const std::filesystem::path& b) {
  const std::string text = capture("ffmpeg -nostdin -i '" + a.string() + "' -i '" + b.string() +
                                   "' -lavfi psnr -f null - 2>&1");
  const auto at = text.find("average:");
  if (at == std::string::npos) return -1;
  const std::string value = text.substr(at + 8, text.find(' ', at) - at - 8);
  return value == "inf" ? 1000 : std::stod(value);
}

TEST(OwnProresOnGpu, FourStreamsFromGpuRingsAreCodedThereWithSoundAndTimecodeNoneDownloaded) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  WithFakeCuda fake;
  TempDir dir;
  constexpr int kFrames = 75;  // 2.5 s at 30 fps: flashes and beeps at 0, 1 and 2 s
  Receiver recv(dir, {"--max-streams", "4", "--memory", "cuda", "--output",
                      (dir / "{name}.mov").string(), "--codec", "prores_hq", "--encoder",
                      "rdmavideo_prores", "--stats-json", (dir / "recv.json").string()});
  struct Camera {
    const char* name;
    const char* pix_fmt;
    int hz;
  };
  const Camera cameras[] = {{"cam1", "uyvy422", 440},
                            {"cam2", "nv12", 660},
                            {"cam3", "p010le", 880},
                            {"cam4", "v210", 1000}};
  std::vector<std::unique_ptr<Process>> senders;
  for (const auto& c : cameras) {
    senders.push_back(std::make_unique<Process>(
        std::vector<std::string>{RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet",
                                 "--name", c.name, "--testsrc", "-s", "320x180", "-r", "30",
                                 "--pix-fmt", c.pix_fmt, "--tone", std::to_string(c.hz), "--frames",
                                 std::to_string(kFrames)},
        dir / (std::string(c.name) + ".stderr")));
  }
  for (auto& s : senders) ASSERT_EQ(s->wait(180s), 0) << s->stderr_text();
  ASSERT_EQ(recv.process().wait(120s), 0) << recv.process().stderr_text();
  const std::string log = recv.process().stderr_text();
  if (RDMAVIDEO_CUDA_KERNELS) {
    // Each stream's summary gives the GPU's time for its frames (and its encoder's speed, as
    // the status line does, where the stream outlasts their one-second period).
    for (const char* name : {"cam1", "cam2", "cam3", "cam4"}) {
      EXPECT_TRUE(std::regex_search(
          log,
          std::regex(
              std::string("\"") + name +
              R"("\] stream \d+ the sender ended it: .* written to .*\.mov \((encoder [0-9.]+x real time, )?GPU [0-9]+\.[0-9]{2} ms a frame\))")))
          << name << "\n"
          << log;
    }
  }
  const auto summary = read_json(dir / "recv.json");
  ASSERT_EQ(summary["streams"].size(), 4u) << summary.dump(2);
  for (const auto& c : cameras) {
    SCOPED_TRACE(c.name);
    const auto& stream = stream_named(summary, c.name);
    EXPECT_EQ(stream["state"], "ended");
    EXPECT_EQ(stream["frames"], kFrames);
    EXPECT_EQ(stream["memory"], "cuda:0");
    if (RDMAVIDEO_CUDA_KERNELS) {
      // Coded where it lies: not one picture came down.
      EXPECT_NE(log.find(fmt::format("{}.mov] rdmavideo_prores (prores hq, apch) 320x180 "
                                     "yuv422p10le at 30 fps in mov, on the GPU cuda:0",
                                     c.name)),
                std::string::npos)
          << log;
      EXPECT_NE(log.find(fmt::format("from GPU memory, {} made 10-bit 4:2:2 there", c.pix_fmt)),
                std::string::npos)
          << log;
      EXPECT_EQ(stream["downloads"], 0);
    } else {
      // No kernels: each frame downloaded for the CPU twin, which says so.
      EXPECT_NE(log.find("its CPU twin encodes"), std::string::npos) << log;
      EXPECT_EQ(stream["downloads"], kFrames);
    }
    const auto file = dir / (std::string(c.name) + ".mov");
    const auto facts = key_values(
        capture("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                "stream=profile,codec_tag_string,nb_read_frames -of default=noprint_wrappers=1 '" +
                file.string() + "'"));
    EXPECT_EQ(facts.at("profile"), "HQ");
    EXPECT_EQ(facts.at("codec_tag_string"), "apch");
    EXPECT_EQ(facts.at("nb_read_frames"), std::to_string(kFrames));
    EXPECT_EQ(stream_codecs(file), "prores,video\npcm_s24le,audio\nunknown,data\n");
    EXPECT_EQ(capture("ffmpeg -nostdin -v warning -i '" + file.string() + "' -f null - 2>&1"), "");
    expect_in_sync(av_sync(file), 3, c.hz);
  }
  // The picture is the pattern sent: the 8-bit and the 10-bit streams' recordings agree (the
  // same pattern at two depths, made 10-bit 4:2:2 in three ways).
  EXPECT_GT(psnr(dir / "cam1.mov", dir / "cam4.mov"), 35.0);
  EXPECT_GT(psnr(dir / "cam2.mov", dir / "cam3.mov"), 35.0);
}

// The recording machine's GPU preset (configs/obs-prores-gpu-recv.toml) as an operator runs
// it, serving until stopped: a sender's stream coded on the GPU into a dated HQ file, which
// SIGINT leaves finalised.
TEST(OwnProresOnGpu, TheRecordingMachinesGpuPresetCodesOnTheGpuUntilStopped) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  WithFakeCuda fake;
  TempDir dir;
  Receiver recv(dir, {"--config", RDMAVIDEO_SOURCE_DIR "/configs/obs-prores-gpu-recv.toml",
                      "--output", (dir / "{name}.mov").string()});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--name", "obs",
                "--testsrc", "-s", "320x180", "--pix-fmt", "nv12", "--frames", "12"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_TRUE(recv.process().wait_for_stderr("recorded 12 frames", 60s))
      << recv.process().stderr_text();
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_NE(log.find(RDMAVIDEO_CUDA_KERNELS ? "in mov, on the GPU cuda:0"
                                            : "in mov, on the CPU (the GPU encoder's twin"),
            std::string::npos)
      << log;
  EXPECT_EQ(capture("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                    "stream=codec_tag_string,nb_read_frames -of csv=p=0 '" +
                    (dir / "obs.mov").string() + "'"),
            "apch,12\n");
}

}  // namespace
}  // namespace rdmavideo::testing
