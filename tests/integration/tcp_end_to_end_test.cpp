// SPDX-License-Identifier: Apache-2.0
// End-to-end over 127.0.0.1 with the real binaries: the test pattern verified frame by frame,
// raw frames from ffmpeg through stdin and back out byte for byte, and live versus no-drop
// behaviour with a receiver that cannot keep up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "pattern_run.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> sender_args(const Receiver& recv, std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The body verbs_test runs over Soft-RoCE, here over TCP at 1080p, with the summary's rates.
TEST(TcpEndToEnd, TestPatternUyvy1080pIsVerifiedFrameByFrame) {
  TempDir dir;
  PatternRun run;
  ASSERT_NO_FATAL_FAILURE(run_test_pattern(dir, "tcp", 1920, 1080, 600, 60s, run));
  for (const char* key : {"seconds", "fps", "gbytes_per_s", "cpu_seconds"}) {
    EXPECT_GT(run.received[key].get<double>(), 0) << key;
  }
  EXPECT_TRUE(run.received["latency_ms"].contains("p99"));
}

TEST(TcpEndToEnd, ChecksummedFramesFromStdinVerify) {
  // Not the test pattern, so --verify checks the checksums alone (bad_peer_test shows a
  // wrong checksum is caught).
  TempDir dir;
  const auto raw = dir / "in.raw";
  {
    std::ofstream out(raw, std::ios::binary);
    std::vector<char> frame(64 * 36 * 4);
    for (int f = 0; f < 5; ++f) {
      for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<char>(i * 7 + f);
      out.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    }
  }
  Receiver recv(dir, {"--verify", "--quiet", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"-i", "-", "-s", "64x36", "--pix-fmt", "rgba", "--checksum"}),
               dir / "send.stderr", Redirect{raw.string(), "", false, false});
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 5);
  EXPECT_EQ(read_json(dir / "recv.json")["checksum_failures"], 0);
}

struct RawCase {
  const char* pix_fmt;
  const char* size;
};

class RawThroughStdin : public ::testing::TestWithParam<RawCase> {};

// ffmpeg renders testsrc2 as raw frames; they go in through stdin and come out of the
// receiver's stdout (and a .yuv file) byte for byte.
TEST_P(RawThroughStdin, ByteForByte) {
  const RawCase c = GetParam();
  TempDir dir;
  const auto reference = dir / "reference.raw";
  const std::string codec =
      std::string(c.pix_fmt) == "v210" ? "-c:v v210" : std::string("-pix_fmt ") + c.pix_fmt;
  std::string scale = c.size;
  std::replace(scale.begin(), scale.end(), 'x', ':');  // testsrc2 rounds odd sizes down
  const std::string make =
      "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=" + std::string(c.size) +
      ":rate=30 -vf scale=" + scale + " -frames:v 24 " + codec + " -f rawvideo -y " +
      reference.string();
  ASSERT_EQ(shell(make), 0) << make;
  ASSERT_GT(std::filesystem::file_size(reference), 0u);

  const auto piped = dir / "piped.raw";
  {
    Receiver recv(dir, {"--output", "-", "--quiet"}, Redirect{"", piped.string(), false, false});
    Process send(sender_args(recv, {"-i", "-", "-s", c.size, "--pix-fmt", c.pix_fmt, "-r", "30",
                                    "--checksum"}),
                 dir / "send.stderr", Redirect{reference.string(), "", false, false});
    ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  }
  const auto file = dir / "out.yuv";
  {
    Receiver recv(dir, {"--output", file.string(), "--quiet"}, {}, "recv2");
    Process send(sender_args(recv, {"-i", "-", "-s", c.size, "--pix-fmt", c.pix_fmt}),
                 dir / "send2.stderr", Redirect{reference.string(), "", false, false});
    ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  }
  const std::string want = read_file(reference);
  const std::string got_pipe = read_file(piped);
  const std::string got_file = read_file(file);
  ASSERT_EQ(got_pipe.size(), want.size());
  ASSERT_EQ(got_file.size(), want.size());
  const auto first_diff = [&](const std::string& got) {
    return std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
  };
  EXPECT_TRUE(got_pipe == want) << "stdout differs at byte " << first_diff(got_pipe);
  EXPECT_TRUE(got_file == want) << ".yuv differs at byte " << first_diff(got_file);
}

INSTANTIATE_TEST_SUITE_P(
    EveryFormat, RawThroughStdin,
    ::testing::Values(RawCase{"nv12", "1280x720"}, RawCase{"yuv420p", "1280x720"},
                      RawCase{"yuv420p", "641x361"}, RawCase{"p010le", "640x360"},
                      RawCase{"uyvy422", "1280x720"}, RawCase{"uyvy422", "641x360"},
                      RawCase{"yuyv422", "640x360"}, RawCase{"rgba", "640x360"},
                      RawCase{"bgra", "640x360"}, RawCase{"rgb24", "641x361"},
                      RawCase{"yuv422p10le", "1280x720"}, RawCase{"v210", "1280x720"},
                      RawCase{"v210", "642x360"}),
    [](const auto& param_info) {
      std::string name = std::string(param_info.param.pix_fmt) + "_" + param_info.param.size;
      std::replace(name.begin(), name.end(), 'x', '_');
      return name;
    });

// Reads the receiver's stdout slowly, like a consumer that cannot keep up: `per_frame` after
// each frame, or only after the first when `once`.
void drain_slowly(int fd, size_t frame_bytes, std::chrono::milliseconds per_frame,
                  bool once = false) {
  std::vector<char> buf(frame_bytes);
  for (bool first = true;; first = false) {
    size_t done = 0;
    while (done < frame_bytes) {
      const ssize_t n = read(fd, buf.data() + done, frame_bytes - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
    if (first || !once) std::this_thread::sleep_for(per_frame);
  }
}

TEST(TcpEndToEnd, LiveModeDropsAtTheSenderWhenTheReceiverIsSlow) {
  TempDir dir;
  Receiver recv(
      dir,
      {"--output", "-", "--ring", "2", "--quiet", "--stats-json", (dir / "recv.json").string()},
      Redirect{"", "", true, false});
  std::thread reader(drain_slowly, recv.process().stdout_fd(), size_t{640} * 360 * 2, 60ms, false);
  Process send(sender_args(recv, {"--testsrc", "-s", "640x360", "-r", "60", "--frames", "120",
                                  "--realtime", "--stats-json", (dir / "send.json").string(),
                                  "--trace", (dir / "trace.jsonl").string()}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  reader.join();
  const auto s = read_json(dir / "send.json");
  const auto r = read_json(dir / "recv.json");
  EXPECT_GT(s["dropped"].get<int>(), 0);
  EXPECT_EQ(s["frames"].get<int>() + s["dropped"].get<int>(), 120);
  EXPECT_EQ(r["frames"], s["frames"]);
  EXPECT_EQ(r["dropped"], s["dropped"]);  // reported to the receiver in EndOfStream
  // Every drop has its cause: the receiver's slots were busy (no credit within the bound)
  // or the sender came to the frame past the bound (late), nothing else.
  ASSERT_TRUE(s.contains("drops")) << s.dump();
  const auto& drops = s["drops"];
  EXPECT_EQ(drops["no_credit"].get<int>() + drops["late"].get<int>(), s["dropped"].get<int>())
      << drops.dump();
  EXPECT_EQ(drops["behind"], 0);
  EXPECT_EQ(drops["not_up"], 0);
  EXPECT_EQ(drops["no_buffer"], 0);
  EXPECT_NE(send.stderr_text().find("dropped " + std::to_string(s["dropped"].get<int>()) + " ("),
            std::string::npos)
      << send.stderr_text();
  // The trace has the source's line for every frame, and a destination's for every frame it
  // sent or gave up a credit for, its times in order.
  std::ifstream trace(dir / "trace.jsonl");
  std::string line;
  int sources = 0, sent = 0, no_credit = 0, late = 0;
  while (std::getline(trace, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("dest")) {
      EXPECT_LE(j["ready"].get<double>(), j["taken"].get<double>() + 1e-3) << line;
      EXPECT_LE(j["taken"].get<double>(), j["credited"].get<double>() + 1e-3) << line;
      EXPECT_LE(j["credited"].get<double>(), j["written"].get<double>() + 1e-3) << line;
      (j.contains("dropped") ? no_credit : sent) += 1;
    } else {
      ++sources;
      EXPECT_LE(j["due"].get<double>(), j["woke"].get<double>() + 1e-3) << line;
      if (j["outcome"] == "late") ++late;
    }
  }
  EXPECT_EQ(sources, 120);
  EXPECT_EQ(sent, s["frames"].get<int>());
  EXPECT_EQ(no_credit, drops["no_credit"].get<int>());
  EXPECT_EQ(late, drops["late"].get<int>());
}

TEST(TcpEndToEnd, NoDropModeWaitsForTheSlowReceiver) {
  TempDir dir;
  Receiver recv(
      dir,
      {"--output", "-", "--ring", "2", "--quiet", "--stats-json", (dir / "recv.json").string()},
      Redirect{"", "", true, false});
  std::thread reader(drain_slowly, recv.process().stdout_fd(), size_t{640} * 360 * 2, 30ms, false);
  Process send(sender_args(recv, {"--testsrc", "-s", "640x360", "--frames", "40", "--no-drop",
                                  "--checksum", "--stats-json", (dir / "send.json").string()}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  reader.join();
  const auto s = read_json(dir / "send.json");
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(s["dropped"], 0);
  EXPECT_EQ(s["frames"], 40);
  EXPECT_EQ(r["frames"], 40);
  // 40 frames at 30 ms each: the sender really waited for the consumer.
  EXPECT_GE(s["seconds"].get<double>(), 0.9);
}

// Longer than Timeouts::peer (5 s): only keepalives keep these connections up.
constexpr auto kLongerThanPeerTimeout = 6500ms;

TEST(TcpEndToEnd, KeepalivesCarryASenderWhoseInputIsQuiet) {
  TempDir dir;
  Receiver recv(dir, {"--quiet", "--verify", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"-i", "-", "-s", "64x36", "--pix-fmt", "rgba", "--checksum"}),
               dir / "send.stderr", Redirect{"", "", false, true});
  std::vector<char> frame(64 * 36 * 4, 'a');
  ASSERT_TRUE(send.write_stdin(frame.data(), frame.size()));
  std::this_thread::sleep_for(kLongerThanPeerTimeout);
  ASSERT_TRUE(send.write_stdin(frame.data(), frame.size()));
  send.close_stdin();
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 2);
}

TEST(TcpEndToEnd, KeepalivesCarryASenderWaitingOnAStalledConsumer) {
  TempDir dir;
  Receiver recv(
      dir,
      {"--output", "-", "--ring", "1", "--quiet", "--stats-json", (dir / "recv.json").string()},
      Redirect{"", "", true, false});
  // The consumer takes one frame, then stalls: the only slot stays full, no credit flows.
  std::thread reader(drain_slowly, recv.process().stdout_fd(), size_t{64} * 36 * 2,
                     std::chrono::duration_cast<std::chrono::milliseconds>(kLongerThanPeerTimeout),
                     true);
  Process send(sender_args(recv, {"--testsrc", "-s", "64x36", "--frames", "3", "--stats-json",
                                  (dir / "send.json").string()}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  reader.join();
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 3);
  EXPECT_EQ(read_json(dir / "send.json")["dropped"], 0);
  // The sender ended it: the receiver's answering EndOfStream is not its own end.
  EXPECT_EQ(send.stderr_text().find("the receiver ended the stream"), std::string::npos)
      << send.stderr_text();
}

TEST(TcpEndToEnd, ReceiverFramesLimitStopsTheSenderCleanly) {
  TempDir dir;
  Receiver recv(dir, {"--frames", "25", "--quiet", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"--testsrc", "-s", "320x240", "--stats-json",
                                  (dir / "send.json").string()}),
               dir / "send.stderr");
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 25);
  EXPECT_NE(send.stderr_text().find("the receiver ended the stream"), std::string::npos);
}

TEST(TcpEndToEnd, SigintFinishesTheReceiverWithItsSummary) {
  TempDir dir;
  const auto out = dir / "out.yuv";
  Receiver recv(
      dir, {"--output", out.string(), "--quiet", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"--testsrc", "-s", "320x240", "--realtime", "-r", "100"}),
               dir / "send.stderr");
  std::this_thread::sleep_for(700ms);
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(10s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(10s), 0) << send.stderr_text();
  const auto frames = read_json(dir / "recv.json")["frames"].get<uint64_t>();
  EXPECT_GT(frames, 0u);
  // Every frame counted is in the file, whole.
  EXPECT_EQ(std::filesystem::file_size(out), frames * 320 * 240 * 2);
}

// Ctrl-Z then fg: stopping and continuing either end makes its blocked socket calls fail
// with EINTR (SO_RCVTIMEO calls are never restarted), which must not end the stream: only
// SIGINT/SIGTERM stop the tools. Every frame still arrives, verified.
TEST(TcpEndToEnd, StopAndContinueDoNotEndTheStream) {
  TempDir dir;
  constexpr int kFrames = 150;
  Receiver recv(dir, {"--verify", "--quiet", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"--testsrc", "-s", "320x240", "--realtime", "-r", "100",
                                  "--frames", std::to_string(kFrames), "--checksum", "--stats-json",
                                  (dir / "send.json").string()}),
               dir / "send.stderr");
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(200ms);
    Process& stopped = i % 2 == 0 ? recv.process() : send;
    stopped.signal(SIGSTOP);
    std::this_thread::sleep_for(300ms);
    stopped.signal(SIGCONT);
  }
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  // The sender went through all its frames (a live sender drops while the receiver is
  // stopped) and was not told to stop early; every frame it sent arrived and verified.
  const auto sent = read_json(dir / "send.json");
  const auto received = read_json(dir / "recv.json");
  EXPECT_EQ(sent["frames"].get<uint64_t>() + sent["dropped"].get<uint64_t>(),
            static_cast<uint64_t>(kFrames));
  EXPECT_EQ(received["frames"], sent["frames"]);
  EXPECT_GT(received["frames"].get<uint64_t>(), 0u);
  EXPECT_EQ(received["checksum_failures"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace rdmavideo::testing
