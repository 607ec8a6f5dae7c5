// SPDX-License-Identifier: Apache-2.0
// Network and process faults. Between two network namespaces joined by a veth pair (needs
// root and iproute2; skips otherwise) the link goes down for 8 seconds in the middle of a
// recorded stream: both ends notice within the peer timeout and say so, the recording of
// what arrived is finalised and plays, and `rdmavideo-send --reconnect` goes on into a new
// stream, which the receiver records to a new file, once the link is back. Over 127.0.0.1,
// either end is stopped (SIGSTOP) for longer than the peer timeout.
#include <gtest/gtest.h>
#include <unistd.h>

#include "output_checks.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool have_ffprobe() { return shell("command -v ffprobe >/dev/null 2>&1") == 0; }

// Two namespaces, "<tag>-r" (10.98.0.1) and "<tag>-s" (10.98.0.2), joined by a veth pair;
// removed again at the end.
class NamespacePair {
 public:
  NamespacePair() : tag_("rvf" + std::to_string(getpid() % 100000)) {
    ok_ = geteuid() == 0 && shell("command -v ip >/dev/null 2>&1") == 0 &&
          shell("ip netns add " + receiver() + " 2>/dev/null") == 0;
    if (!ok_) return;
    ok_ = shell("ip netns add " + sender()) == 0 &&
          shell("ip link add " + tag_ + "r netns " + receiver() + " type veth peer name " + tag_ +
                "s netns " + sender()) == 0 &&
          shell("ip -n " + receiver() + " addr add 10.98.0.1/24 dev " + tag_ + "r") == 0 &&
          shell("ip -n " + sender() + " addr add 10.98.0.2/24 dev " + tag_ + "s") == 0 &&
          shell("ip -n " + receiver() + " link set lo up") == 0 &&
          shell("ip -n " + sender() + " link set lo up") == 0 &&
          shell("ip -n " + receiver() + " link set " + tag_ + "r up") == 0 && link(true);
  }
  ~NamespacePair() {
    shell("ip netns del " + receiver() + " 2>/dev/null");
    shell("ip netns del " + sender() + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  std::string receiver() const { return tag_ + "-r"; }
  std::string sender() const { return tag_ + "-s"; }
  // The sender's end of the link, up or down (its peer loses carrier with it).
  bool link(bool up) {
    return shell("ip -n " + sender() + " link set " + tag_ + "s " + (up ? "up" : "down")) == 0;
  }
  std::vector<std::string> in(const std::string& ns, std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
    return argv;
  }

 private:
  std::string tag_;
  bool ok_ = false;
};

// Waits until `needle` appears `count` times in the process's stderr.
bool wait_for_count(Process& p, const std::string& needle, int count,
                    std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    const std::string text = p.stderr_text();
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      ++n;
    if (n >= count) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(NetworkFaults, LinkDownForEightSecondsThenTheSenderReconnects) {
  NamespacePair net;
  if (!net.ok()) GTEST_SKIP() << "needs root and ip netns (veth) to make two namespaces";
  TempDir dir;
  const bool record = have_ffprobe();
  const std::string ext = record ? ".mkv" : ".yuv";  // FFV1 where FFmpeg is there
  Process recv(
      net.in(net.receiver(), {RDMAVIDEO_RECV_BIN, "--listen", "10.98.0.1:0", "--serve", "--quiet",
                              "--output", (dir / ("{name}-{n}" + ext)).string()}),
      dir / "recv.stderr");
  const auto port = recv.wait_for_stderr(R"(listening on 10\.98\.0\.1:(\d+))", 30s);
  ASSERT_TRUE(port) << recv.stderr_text();
  Process send(net.in(net.sender(), {RDMAVIDEO_SEND_BIN, "--connect", "10.98.0.1:" + *port,
                                     "--testsrc", "-s", "320x240", "-r", "30", "--realtime",
                                     "--reconnect", "--name", "cam", "--quiet"}),
               dir / "send.stderr");
  ASSERT_TRUE(recv.wait_for_stderr("\"cam\"\\] stream 1 ring 1", 30s)) << recv.stderr_text();
  std::this_thread::sleep_for(1500ms);

  ASSERT_TRUE(net.link(false));
  const auto down = Clock::now();
  // Both ends notice within the peer timeout (5 s), and say what happened.
  ASSERT_TRUE(recv.wait_for_stderr("\"cam\": peer silent for 5000 ms", 9s)) << recv.stderr_text();
  const auto receiver_noticed = Clock::now() - down;
  ASSERT_TRUE(send.wait_for_stderr("connecting again", 9s)) << send.stderr_text();
  const auto sender_noticed = Clock::now() - down;
  EXPECT_LT(receiver_noticed, 7s);
  EXPECT_LT(sender_noticed, 7s);
  // The first recording is finalised with what arrived, the receiver still serving.
  const auto first = recv.wait_for_stderr(R"("cam"\] stream 1 failed: (\d+) frames)", 10s);
  ASSERT_TRUE(first) << recv.stderr_text();
  std::this_thread::sleep_until(down + 8s);
  ASSERT_TRUE(net.link(true));

  // The sender's next try gets through: a new stream (its connection's stream 1, the
  // receiver's second) into a new file.
  ASSERT_TRUE(wait_for_count(recv, "\"cam\"] stream 1 ring 1", 2, 20s)) << recv.stderr_text();
  ASSERT_TRUE(send.wait_for_stderr("connected again \\(connection 2\\)", 5s)) << send.stderr_text();
  std::this_thread::sleep_for(1s);
  send.signal(SIGINT);
  ASSERT_EQ(send.wait(20s), 0) << send.stderr_text();
  EXPECT_NE(send.stderr_text().find("over 2 connections"), std::string::npos) << send.stderr_text();
  ASSERT_TRUE(recv.wait_for_stderr(R"("cam"\] stream 2 the sender ended it: (\d+) frames)", 10s))
      << recv.stderr_text();
  recv.signal(SIGTERM);
  // A service stopped by a signal exits 0; the first stream's failure stays in the log.
  EXPECT_EQ(recv.wait(30s), 0) << recv.stderr_text();
  EXPECT_NE(recv.stderr_text().find("\"cam\"] stream 1 failed"), std::string::npos)
      << recv.stderr_text();

  const int first_frames = std::stoi(*first);
  EXPECT_GT(first_frames, 30);
  const auto second = recv.wait_for_stderr(R"("cam"\] stream 2 the sender ended it: (\d+) frames)");
  ASSERT_TRUE(second);
  const int second_frames = std::stoi(*second);
  EXPECT_GT(second_frames, 10);
  const fs::path file1 = dir / ("cam-1" + ext);
  const fs::path file2 = dir / ("cam-2" + ext);
  ASSERT_TRUE(fs::exists(file1)) << recv.stderr_text();
  ASSERT_TRUE(fs::exists(file2)) << recv.stderr_text();
  if (record) {
    EXPECT_EQ(decoded_frames(file1), first_frames) << "the cut recording plays to its last frame";
    EXPECT_EQ(decoded_frames(file2), second_frames);
  } else {
    EXPECT_EQ(fs::file_size(file1), uint64_t(first_frames) * 320 * 240 * 2);
    EXPECT_EQ(fs::file_size(file2), uint64_t(second_frames) * 320 * 240 * 2);
  }
}

// SIGSTOP of either end for longer than the peer timeout (5 s), over TCP on 127.0.0.1: the
// other end notices within the timeout and says so, the receiver's recording of what arrived
// is finalised, and a receiver that was stopped and continued serves the next sender.
class Stopped : public ::testing::Test {
 protected:
  void SetUp() override {
    recv_.emplace(dir_, std::vector<std::string>{"--serve", "--quiet", "--output",
                                                 (dir_ / "{name}-{n}.yuv").string()});
  }
  std::unique_ptr<Process> sender(const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{
        RDMAVIDEO_SEND_BIN, "--connect", recv_->address(), "--testsrc", "-s", "320x240", "-r", "30",
        "--realtime",       "--quiet",   "--name",         name};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, dir_ / (name + ".stderr"));
  }
  TempDir dir_;
  std::optional<Receiver> recv_;
};

TEST_F(Stopped, ReceiverStoppedBeyondThePeerTimeout) {
  auto send = sender("cam");
  ASSERT_TRUE(recv_->process().wait_for_stderr("\"cam\"\\] stream 1 ring 1", 10s));
  std::this_thread::sleep_for(1s);
  recv_->process().signal(SIGSTOP);
  const auto stopped = Clock::now();
  const auto code = send->wait(9s);
  ASSERT_TRUE(code) << "the sender did not notice a stopped receiver: " << send->stderr_text();
  EXPECT_EQ(*code, 1);
  EXPECT_LT(Clock::now() - stopped, 8s);
  EXPECT_NE(send->stderr_text().find("receiver silent for 5000 ms"), std::string::npos)
      << send->stderr_text();
  std::this_thread::sleep_until(stopped + 7s);
  recv_->process().signal(SIGCONT);
  // Continued, the receiver finds its sender gone, finalises the file, and serves the next.
  const auto frames =
      recv_->process().wait_for_stderr(R"("cam"\] stream 1 failed: (\d+) frames)", 10s);
  ASSERT_TRUE(frames) << recv_->process().stderr_text();
  EXPECT_EQ(std::filesystem::file_size(dir_ / "cam-1.yuv"), std::stoull(*frames) * 320 * 240 * 2);
  auto next = sender("next", {"--frames", "30"});
  EXPECT_EQ(next->wait(30s), 0) << next->stderr_text();
  recv_->process().signal(SIGTERM);
  // --serve: the failed stream is in the log, not in the exit code of a service stopped so.
  EXPECT_EQ(recv_->process().wait(30s), 0) << recv_->process().stderr_text();
  EXPECT_NE(recv_->process().stderr_text().find("stream 1 failed"), std::string::npos)
      << recv_->process().stderr_text();
}

TEST_F(Stopped, SenderStoppedBeyondThePeerTimeout) {
  auto send = sender("cam");
  ASSERT_TRUE(recv_->process().wait_for_stderr("\"cam\"\\] stream 1 ring 1", 10s));
  std::this_thread::sleep_for(1s);
  send->signal(SIGSTOP);
  const auto stopped = Clock::now();
  ASSERT_TRUE(recv_->process().wait_for_stderr("\"cam\": peer silent for 5000 ms", 9s))
      << recv_->process().stderr_text();
  EXPECT_LT(Clock::now() - stopped, 8s);
  const auto frames =
      recv_->process().wait_for_stderr(R"("cam"\] stream 1 failed: (\d+) frames)", 10s);
  ASSERT_TRUE(frames) << recv_->process().stderr_text();
  EXPECT_EQ(std::filesystem::file_size(dir_ / "cam-1.yuv"), std::stoull(*frames) * 320 * 240 * 2);
  std::this_thread::sleep_until(stopped + 7s);
  send->signal(SIGCONT);
  // Continued, the sender finds the connection closed and says so.
  const auto code = send->wait(10s);
  ASSERT_TRUE(code) << send->stderr_text();
  EXPECT_EQ(*code, 1);
  EXPECT_NE(send->stderr_text().find("receiver closed the connection"), std::string::npos)
      << send->stderr_text();
  recv_->process().signal(SIGTERM);
  // --serve: the failed stream is in the log, not in the exit code of a service stopped so.
  EXPECT_EQ(recv_->process().wait(30s), 0) << recv_->process().stderr_text();
  EXPECT_NE(recv_->process().stderr_text().find("stream 1 failed"), std::string::npos)
      << recv_->process().stderr_text();
}

}  // namespace
}  // namespace rdmavideo::testing
