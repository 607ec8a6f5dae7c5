// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send.exe, cross-built with MinGW-w64 and run under wine, into the Linux
// rdmavideo-recv over 127.0.0.1: the path a Windows streamer takes into a Linux recorder.
// 1080p60 with a tone, every frame verified, recorded as ProRes with its track and its sync
// measured as heard (tests/support/av_sync.py); the shared key proven both ways and a wrong
// one refused, both ends saying why; raw frames on stdin arriving bit-exact (0x1A and CR LF
// bytes included, which a text-mode read would change); and Ctrl+C (SIGINT, which wine turns
// into the console's CTRL_C_EVENT) ending the stream as on Linux. wine is not Windows: these
// check the program's logic and its use of the Win32 API, not Windows itself.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "output_checks.hpp"
#include "process.hpp"
#include "rdmavideo/auth.hpp"
#include "windows_build.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const fs::path kSendExe = RDMAVIDEO_WINDOWS_BUILD_DIR "/sender/rdmavideo-send.exe";

class WindowsSender : public ::testing::Test {
 protected:
  void SetUp() override { use_windows_build({kSendExe}); }

  // rdmavideo-send.exe under wine, to `recv`, with `extra`.
  static std::vector<std::string> sender(const std::string& address,
                                         std::vector<std::string> extra) {
    std::vector<std::string> a{RDMAVIDEO_WINE_RUN, kSendExe.string(), "--connect", address,
                               "--quiet"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  fs::path new_key(const std::string& name) const {
    const fs::path p = dir_ / name;
    if (auto ok = auth::create_key_file(p); !ok) throw std::runtime_error(ok.error().message());
    return p;
  }

  TempDir dir_;
};

TEST_F(WindowsSender, TenEightyP60WithAToneIsVerifiedRecordedAsProResAndInSync) {
  const auto key = new_key("shared.key");
  const auto out = dir_ / "take.mov";
  const auto stats = dir_ / "recv.json";
  Receiver recv(dir_, {"--key-file", key.string(), "--verify", "--output", out.string(),
                       "--stats-json", stats.string(), "--quiet"});
  Process send(sender(recv.address(), {"--testsrc", "-s", "1920x1080", "-r", "60", "--tone", "1000",
                                       "--frames", "180", "--key-file", key.string(),
                                       "--stats-json", (dir_ / "send.json").string()}),
               dir_ / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  // The sender ran as Windows's: no verbs there, and it says so.
  EXPECT_NE(send.stderr_text().find(
                "connected over tcp (auto: the Windows build has no RDMA verbs transport)"),
            std::string::npos)
      << send.stderr_text();
  const auto r = read_json(stats);
  EXPECT_EQ(r["frames"], 180);
  EXPECT_EQ(r["dropped"], 0);
  EXPECT_EQ(r["checksum_failures"], 0);  // --verify: every frame's checksum and pattern
  const auto& track = r["streams"][0]["audio"].at(0);
  EXPECT_EQ(track["name"], "tone 1000 Hz");
  EXPECT_EQ(track["samples"], 180 * 48000 / 60);
  EXPECT_EQ(track["recorded"], true);
  EXPECT_EQ(read_json(dir_ / "send.json")["frames"], 180);
  EXPECT_EQ(stream_codecs(out), "prores,video\npcm_s24le,audio\nunknown,data\n");
  const auto m = av_sync(out);
  ASSERT_TRUE(m.contains("beeps")) << m.dump();
  EXPECT_EQ(m["beeps"], 3) << m.dump();
  EXPECT_EQ(m["flashes"], 3) << m.dump();
  EXPECT_LE(m["max_abs_offset_ms"].get<double>(), m["frame_ms"].get<double>() + 0.5) << m.dump();
  EXPECT_NEAR(m["tone_hz"].get<double>(), 1000, 10) << m.dump();
}

TEST_F(WindowsSender, AWrongKeyIsRefusedAndBothEndsSayWhy) {
  const auto key = new_key("shared.key");
  const auto wrong = new_key("wrong.key");
  Receiver recv(dir_, {"--key-file", key.string(), "--serve", "--quiet"});
  Process bad(sender(recv.address(), {"--testsrc", "--frames", "30", "--key-file", wrong.string()}),
              dir_ / "bad.stderr");
  ASSERT_EQ(bad.wait(30s), 1) << bad.stderr_text();
  const auto lines = error_lines(bad.stderr_text());
  ASSERT_EQ(lines.size(), 1u) << bad.stderr_text();
  EXPECT_NE(lines[0].find("receiver refused: authentication failed"), std::string::npos)
      << lines[0];
  EXPECT_TRUE(recv.process().wait_for_stderr(R"(127\.0\.0\.1:\d+: authentication failed)", 10s))
      << recv.process().stderr_text();
  // The right key from Windows is still served.
  Process good(sender(recv.address(), {"--testsrc", "--frames", "30", "--key-file", key.string()}),
               dir_ / "good.stderr");
  EXPECT_EQ(good.wait(30s), 0) << good.stderr_text();
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_NE(recv.process().stderr_text().find("30 frames"), std::string::npos)
      << recv.process().stderr_text();
}

TEST_F(WindowsSender, AKeyedSenderRefusesAReceiverThatCannotProveTheKey) {
  const auto key = new_key("shared.key");
  Receiver recv(dir_, {"--serve", "--quiet"});
  Process send(sender(recv.address(), {"--testsrc", "--frames", "30", "--key-file", key.string()}),
               dir_ / "send.stderr");
  ASSERT_EQ(send.wait(30s), 1) << send.stderr_text();
  EXPECT_NE(send.stderr_text().find("authentication failed: the receiver holds no key"),
            std::string::npos)
      << send.stderr_text();
  EXPECT_TRUE(recv.process().wait_for_stderr(
      "sender reported: authentication failed: the receiver holds no key", 10s))
      << recv.process().stderr_text();
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0);
}

TEST_F(WindowsSender, RawFramesOnStdinArriveBitExact) {
  // 64x32 UYVY, 12 frames of noise with 0x1A (a text-mode read's end of file) and CR LF
  // (which text mode makes LF) sown through them.
  constexpr size_t kFrame = 64 * 32 * 2;
  std::vector<char> frames(kFrame * 12);
  std::mt19937 noise(31);
  for (auto& b : frames) b = static_cast<char>(noise());
  for (size_t i = 0; i < frames.size(); i += 97) frames[i] = 0x1a;
  for (size_t i = 5; i + 1 < frames.size(); i += 89) frames[i] = '\r', frames[i + 1] = '\n';
  const auto out = dir_ / "out.raw";
  Receiver recv(dir_, {"--output", out.string(), "--quiet"});
  Process send(
      sender(recv.address(), {"-i", "-", "-s", "64x32", "-r", "30", "--pix-fmt", "uyvy422"}),
      dir_ / "send.stderr", Redirect{"", "", false, true});
  ASSERT_TRUE(send.write_stdin(frames.data(), frames.size()));
  send.close_stdin();
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  std::ifstream in(out, std::ios::binary);
  const std::vector<char> got((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(got.size(), frames.size());
  EXPECT_TRUE(got == frames) << "the frames changed on the way";
}

TEST_F(WindowsSender, CtrlCEndsTheStreamAndWritesTheSummary) {
  const auto stats = dir_ / "send.json";
  Receiver recv(dir_, {"--verify"});
  Process send(sender(recv.address(), {"--testsrc", "-s", "320x180", "-r", "60", "--realtime",
                                       "--stats-json", stats.string()}),
               dir_ / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(frames ([3-9]\d|\d{3,}) )", 30s))
      << recv.process().stderr_text();
  send.signal(SIGINT);
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  // EndOfStream reached the receiver after every frame sent, and the sender wrote its summary.
  const int frames = read_json(stats)["frames"];
  EXPECT_GE(frames, 30);
  EXPECT_NE(send.stderr_text().find("sent " + std::to_string(frames) + " frames"),
            std::string::npos)
      << send.stderr_text();
  EXPECT_NE(recv.process().stderr_text().find("the sender ended it: " + std::to_string(frames) +
                                              " frames"),
            std::string::npos)
      << recv.process().stderr_text();
}

// The SDK on Windows: the C example, cross-built against rdmavideo.dll's import library, runs
// under wine (the DLL beside it) into the Linux receiver: every frame verified, the tone there.
TEST(WindowsSdk, TheCExampleAgainstTheDllSendsIntoTheLinuxReceiver) {
  const fs::path example = RDMAVIDEO_WINDOWS_BUILD_DIR "/sdk/rdmavideo-example-sender.exe";
  use_windows_build({example, fs::path(RDMAVIDEO_WINDOWS_BUILD_DIR "/sdk/rdmavideo.dll")});
  if (IsSkipped()) return;
  TempDir dir;
  const auto stats = dir / "recv.json";
  Receiver recv(dir, {"--verify", "--stats-json", stats.string(), "--quiet"});
  Process send({RDMAVIDEO_WINE_RUN, example.string(), "-n", "60", "-s", "640x360", recv.address()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(stats);
  EXPECT_EQ(r["frames"], 60);
  EXPECT_EQ(r["dropped"], 0);
  EXPECT_EQ(r["checksum_failures"], 0);  // the example checksums every frame
  EXPECT_EQ(r["streams"][0]["name"], "c example");
  const auto& track = r["streams"][0]["audio"].at(0);
  EXPECT_EQ(track["name"], "1 kHz");
  EXPECT_EQ(track["samples"], 60 * 48000 / 60);
}

}  // namespace
}  // namespace rdmavideo::testing
