// SPDX-License-Identifier: Apache-2.0
// The verbs transport for real, in the Soft-RoCE lab (tests/rxe/run_in_vm.sh): the receiver
// on 10.99.0.1 (rxe0), senders from 10.99.0.2 (rxe1), policy routing making the traffic cross
// the veth pair. Outside the lab every test skips, saying why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include "pattern_run.hpp"
#include "process.hpp"
#include "rdmavideo/auth.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kReceiverHost[] = "10.99.0.1";

bool in_lab() { return std::filesystem::exists("/sys/class/infiniband/rxe0"); }

#define REQUIRE_LAB()                                                  \
  if (!in_lab())                                                       \
  GTEST_SKIP() << "no Soft-RoCE lab here (rxe0 missing): run through " \
                  "tests/rxe/run_in_vm.sh, as ctest -L rxe does"

std::vector<std::string> sender(const Receiver& recv, std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", recv.address(),
                             "--transport",      "verbs",     "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A good sender is served and the receiver exits cleanly with `frames` in its summary.
void expect_good_sender_served(TempDir& dir, Receiver& recv, int frames_before) {
  Process good(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "30", "--checksum"}),
               dir / "good.stderr");
  ASSERT_EQ(good.wait(120s), 0) << good.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"].get<int>(), frames_before + 30);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["transport"], "verbs");
}

// The body tcp_end_to_end_test runs over TCP, here over Soft-RoCE.
TEST(Verbs, TestPattern640x360UyvyVerifiedFrameByFrame) {
  REQUIRE_LAB();
  TempDir dir;
  PatternRun run;
  ASSERT_NO_FATAL_FAILURE(run_test_pattern(dir, "verbs", 640, 360, 300, 180s, run, kReceiverHost));
  // The sender went out through rxe1 and the receiver took it on rxe0.
  EXPECT_NE(run.send_log.find("(rxe1)"), std::string::npos) << run.send_log;
  EXPECT_NE(run.recv_log.find("(rxe0)"), std::string::npos) << run.recv_log;
}

// GPU memory on both ends over Soft-RoCE, through the stand-in CUDA driver: rxe imports no
// dma-buf and there is no nvidia-peermem, so the ladder stages through pinned slots
// registered with rxe1, says why for each rung, and every frame verifies in the GPU ring.
TEST(Verbs, GpuMemoryIsStagedOnSoftRoceAndSaysWhy) {
  REQUIRE_LAB();
  TempDir dir;
  WithFakeCuda fake;
  Receiver recv(dir,
                {"--transport", "verbs", "--verify", "--quiet", "--memory", "cuda", "--stats-json",
                 (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  Process send(sender(recv, {"--testsrc", "-s", "640x360", "--frames", "120", "--checksum",
                             "--memory", "cuda", "--stats-json", (dir / "send.json").string()}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(180s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  const auto s = read_json(dir / "send.json");
  EXPECT_EQ(r["frames"], 120);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(s["transport"], "verbs");
  EXPECT_EQ(s["gpu_copies"], 120);
  const std::string path = s["gpu_path"];
  EXPECT_TRUE(
      path.starts_with("staged (dmabuf: rxe1 cannot import dma-bufs (ibv_reg_dmabuf_mr(fd -1): "))
      << path;
  EXPECT_NE(path.find("; peermem: nvidia-peermem is not loaded"), std::string::npos) << path;
  // The receiver's ladder over rxe0, the same way down.
  const std::string recv_path = r["gpu_path"];
  EXPECT_TRUE(recv_path.starts_with("staged (dmabuf: rxe0 cannot import dma-bufs (")) << recv_path;
  EXPECT_EQ(r["gpu_copies"], 120);
  // A forced GPUDirect rung that rxe cannot give is an error, not a silent fall back.
  Receiver again(dir, {"--transport", "verbs", "--quiet", "--serve"}, {}, "recv2", kReceiverHost);
  Process forced(sender(again, {"--testsrc", "-s", "320x180", "--frames", "10", "--memory", "cuda",
                                "--gpu-path", "dmabuf"}),
                 dir / "forced.stderr");
  ASSERT_EQ(forced.wait(120s), 1) << forced.stderr_text();
  EXPECT_NE(forced.stderr_text().find("--gpu-path dmabuf: rxe1 cannot import dma-bufs"),
            std::string::npos)
      << forced.stderr_text();
  again.process().signal(SIGTERM);
  again.process().wait(30s);
  // The same on the receiver: its StreamStart is refused, saying why.
  Receiver direct(
      dir,
      {"--transport", "verbs", "--quiet", "--serve", "--memory", "cuda", "--gpu-path", "dmabuf"},
      {}, "recv3", kReceiverHost);
  Process refused(sender(direct, {"--testsrc", "-s", "320x180", "--frames", "10"}),
                  dir / "refused.stderr");
  ASSERT_EQ(refused.wait(120s), 1) << refused.stderr_text();
  EXPECT_NE(refused.stderr_text().find("--gpu-path dmabuf: rxe0 cannot import dma-bufs"),
            std::string::npos)
      << refused.stderr_text();
  direct.process().signal(SIGTERM);
  direct.process().wait(30s);
}

// The direct rungs' registration, on real verbs: the sender runs where nvidia-peermem
// appears loaded (a mount namespace with /sys/kernel/mm/memory_peers/nv_mem), so the ladder
// takes peermem, and rxe refuses to pin the stand-in's device memory as it would refuse any
// address it cannot map. With auto the sender says so and stages; forced, it is an error.
TEST(Verbs, AGpuDirectRungThatFailsToRegisterIsPassedOverWithItsError) {
  REQUIRE_LAB();
  TempDir dir;
  WithFakeCuda fake;
  auto with_peermem = [](std::vector<std::string> argv) {
    std::vector<std::string> a{
        "unshare",
        "--mount",
        "sh",
        "-c",
        "d=$(mktemp -d) && mkdir -p $d/memory_peers/nv_mem && echo 1.3 >"
        "$d/memory_peers/nv_mem/version && mount --bind $d /sys/kernel/mm && exec \"$@\"",
        "sh"};
    a.insert(a.end(), argv.begin(), argv.end());
    return a;
  };
  Receiver recv(dir,
                {"--transport", "verbs", "--verify", "--quiet", "--frames", "60", "--stats-json",
                 (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  Process send(with_peermem(sender(
                   recv, {"--testsrc", "-s", "320x180", "--frames", "60", "--checksum", "--memory",
                          "cuda", "--stats-json", (dir / "send.json").string()})),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "recv.json")["checksum_failures"], 0);
  const std::string path = read_json(dir / "send.json")["gpu_path"];
  EXPECT_TRUE(path.starts_with("staged (dmabuf: rxe1 cannot import dma-bufs")) << path;
  EXPECT_NE(path.find("; peermem: verbs rxe1: ibv_reg_mr (nvidia-peermem) of "), std::string::npos)
      << path;
  Receiver again(dir, {"--transport", "verbs", "--quiet", "--serve"}, {}, "recv2", kReceiverHost);
  Process forced(with_peermem(sender(again, {"--testsrc", "-s", "320x180", "--frames", "10",
                                             "--memory", "cuda", "--gpu-path", "peermem"})),
                 dir / "forced.stderr");
  ASSERT_EQ(forced.wait(120s), 1) << forced.stderr_text();
  EXPECT_NE(forced.stderr_text().find("ibv_reg_mr (nvidia-peermem) of "), std::string::npos)
      << forced.stderr_text();
  again.process().signal(SIGTERM);
  again.process().wait(30s);
}

TEST(Verbs, SenderKilledMidStreamCostsOnlyItsConnection) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir,
                {"--transport", "verbs", "--verify", "--quiet", "--serve", "--stats-json",
                 (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  {
    Process doomed(
        sender(recv, {"--testsrc", "-s", "320x180", "--realtime", "-r", "30", "--checksum"}),
        dir / "doomed.stderr");
    ASSERT_TRUE(recv.process().wait_for_stderr("stream 1 ring 1: 320x180", 30s));
    std::this_thread::sleep_for(1500ms);
    doomed.signal(SIGKILL);
    doomed.wait(10s);
  }
  ASSERT_TRUE(recv.process().wait_for_stderr("stream 1 failed", 30s))
      << recv.process().stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_TRUE(log.find("sender disconnected") != std::string::npos ||
              log.find("connection lost") != std::string::npos ||
              log.find("peer silent") != std::string::npos)
      << log;
  // Frames that arrived whole before the kill are counted; the next sender is served.
  Process good(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "30", "--checksum"}),
               dir / "good.stderr");
  ASSERT_EQ(good.wait(120s), 0) << good.stderr_text();
  ASSERT_TRUE(recv.process().wait_for_stderr("stream 2 the sender ended it", 30s));
  recv.process().signal(SIGTERM);
  // --serve: stopped by a signal it exits 0; the killed sender's stream is failed in the summary.
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_GE(r["frames"].get<int>(), 30 + 1);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["streams"][0]["state"], "failed");
  EXPECT_EQ(r["streams"][1]["frames"], 30);
  EXPECT_EQ(r["streams"][1]["state"], "ended");
}

// Waits for two senders and their receiver, and returns its summary after checking that
// `frames` frames arrived over two streams, all verified.
nlohmann::json two_streams_verified(Process& a, Process& b, Receiver& recv, const TempDir& dir,
                                    int frames) {
  EXPECT_EQ(a.wait(180s), 0) << a.stderr_text();
  EXPECT_EQ(b.wait(180s), 0) << b.stderr_text();
  EXPECT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"], frames);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["streams"].size(), 2u);
  return r;
}

TEST(Verbs, TwoStreamsAtOnceEachVerified) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir,
                {"--transport", "verbs", "--max-streams", "2", "--verify", "--quiet", "--output",
                 (dir / "{name}.yuv").string(), "--stats-json", (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  Process a(
      sender(recv, {"--testsrc", "-s", "320x180", "--frames", "120", "--checksum", "--name", "a"}),
      dir / "a.stderr");
  Process b(
      sender(recv, {"--testsrc", "-s", "640x360", "--frames", "60", "--checksum", "--name", "b"}),
      dir / "b.stderr");
  const auto r = two_streams_verified(a, b, recv, dir, 180);
  for (const auto& s : r["streams"]) {
    EXPECT_EQ(s["transport"], "verbs");
    EXPECT_EQ(s["checksum_failures"], 0);
    EXPECT_EQ(s["frames"], s["name"] == "a" ? 120 : 60);
  }
  EXPECT_EQ(std::filesystem::file_size(dir / "a.yuv"), 120u * 320 * 180 * 2);
  EXPECT_EQ(std::filesystem::file_size(dir / "b.yuv"), 60u * 640 * 360 * 2);
}

// --key-file over verbs: the proofs and every sealed control message travel as SENDs; a
// sender with the wrong key is refused before any ring is registered for it, and the right
// one is served after it.
TEST(Verbs, AuthenticatedStreamVerifiedAndAWrongKeyRefused) {
  REQUIRE_LAB();
  TempDir dir;
  ASSERT_TRUE(auth::create_key_file(dir / "shared.key"));
  ASSERT_TRUE(auth::create_key_file(dir / "wrong.key"));
  Receiver recv(dir,
                {"--transport", "verbs", "--verify", "--quiet", "--key-file",
                 (dir / "shared.key").string(), "--stats-json", (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  Process impostor(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "30", "--key-file",
                                 (dir / "wrong.key").string()}),
                   dir / "impostor.stderr");
  ASSERT_EQ(impostor.wait(60s), 1) << impostor.stderr_text();
  EXPECT_NE(impostor.stderr_text().find("receiver refused: authentication failed"),
            std::string::npos)
      << impostor.stderr_text();
  EXPECT_EQ(recv.process().stderr_text().find("ring 1"), std::string::npos)
      << "a ring was made for the impostor: " << recv.process().stderr_text();
  Process good(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "60", "--checksum",
                             "--key-file", (dir / "shared.key").string()}),
               dir / "good.stderr");
  ASSERT_EQ(good.wait(120s), 0) << good.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"], 60);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["transport"], "verbs");
}

// Either end stopped (SIGSTOP) for longer than the peer timeout (5 s), over verbs: the other
// end notices and says so (the NIC, Soft-RoCE's kernel half here, goes on answering for the
// stopped process, so only the protocol's keepalives can tell), the receiver's file keeps what
// arrived, and a continued receiver serves the next sender.
class VerbsStopped : public ::testing::Test {
 protected:
  // A recording receiver and a live sender "cam", streaming for 2 s.
  void SetUp() override {
    REQUIRE_LAB();
    recv_.emplace(dir_,
                  std::vector<std::string>{"--transport", "verbs", "--serve", "--quiet", "--output",
                                           (dir_ / "{name}-{n}.yuv").string()},
                  Redirect{}, "recv", kReceiverHost);
    send_.emplace(
        sender(*recv_, {"--testsrc", "-s", "320x180", "--realtime", "-r", "30", "--name", "cam"}),
        dir_ / "send.stderr");
    ASSERT_TRUE(recv_->process().wait_for_stderr("\"cam\"\\] stream 1 ring 1", 60s))
        << recv_->process().stderr_text();
    std::this_thread::sleep_for(2s);
  }
  TempDir dir_;
  std::optional<Receiver> recv_;
  std::optional<Process> send_;
};

TEST_F(VerbsStopped, ReceiverStoppedBeyondThePeerTimeoutIsNoticed) {
  auto& recv = *recv_;
  auto& send = *send_;
  auto& dir = dir_;
  recv.process().signal(SIGSTOP);
  const auto code = send.wait(20s);
  ASSERT_TRUE(code) << "the sender did not notice a stopped receiver: " << send.stderr_text();
  EXPECT_EQ(*code, 1);
  EXPECT_NE(send.stderr_text().find("receiver silent for 5000 ms"), std::string::npos)
      << send.stderr_text();
  recv.process().signal(SIGCONT);
  const auto frames =
      recv.process().wait_for_stderr(R"("cam"\] stream 1 failed: (\d+) frames)", 30s);
  ASSERT_TRUE(frames) << recv.process().stderr_text();
  EXPECT_EQ(std::filesystem::file_size(dir / "cam-1.yuv"), std::stoull(*frames) * 320 * 180 * 2);
  Process next(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "30", "--name", "next"}),
               dir / "next.stderr");
  EXPECT_EQ(next.wait(120s), 0) << next.stderr_text();
  recv.process().signal(SIGTERM);
  // --serve: the failed stream is in the log, not in the exit code of a service stopped so.
  EXPECT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_NE(recv.process().stderr_text().find("stream 1 failed"), std::string::npos)
      << recv.process().stderr_text();
}

TEST_F(VerbsStopped, SenderStoppedBeyondThePeerTimeoutIsNoticed) {
  auto& recv = *recv_;
  auto& send = *send_;
  auto& dir = dir_;
  send.signal(SIGSTOP);
  ASSERT_TRUE(recv.process().wait_for_stderr("\"cam\": peer silent for 5000 ms", 20s))
      << recv.process().stderr_text();
  const auto frames =
      recv.process().wait_for_stderr(R"("cam"\] stream 1 failed: (\d+) frames)", 30s);
  ASSERT_TRUE(frames) << recv.process().stderr_text();
  EXPECT_EQ(std::filesystem::file_size(dir / "cam-1.yuv"), std::stoull(*frames) * 320 * 180 * 2);
  send.signal(SIGCONT);
  const auto code = send.wait(30s);
  ASSERT_TRUE(code) << send.stderr_text();
  EXPECT_EQ(*code, 1) << send.stderr_text();
  recv.process().signal(SIGTERM);
  // --serve: the failed stream is in the log, not in the exit code of a service stopped so.
  EXPECT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_NE(recv.process().stderr_text().find("stream 1 failed"), std::string::npos)
      << recv.process().stderr_text();
}

// A cold neighbour table, as a real network has it: the entries are flushed before each
// connect, so address resolution has to wait for ARP. A reply that came back before the
// kernel queued the resolution used to leave it waiting its whole timeout ("no rdma_cm event
// within 5000 ms") and only a second run worked; every connect works the first time now.
TEST(Verbs, EveryConnectWorksWithAColdNeighbourTable) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir, {"--transport", "verbs", "--serve", "--quiet"}, {}, "recv", kReceiverHost);
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE(round);
    ASSERT_EQ(shell("ip neigh flush dev veth0 && ip neigh flush dev veth1"), 0);
    const auto start = std::chrono::steady_clock::now();
    Process send(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "10"}),
                 dir / ("cold" + std::to_string(round) + ".stderr"));
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  }
  // Leave the lab as it was: pinned entries, unless this run resolves by ARP anyway.
  if (std::getenv("RXE_NEIGH") == nullptr) {
    const auto mac0 = read_file("/sys/class/net/veth0/address");
    const auto mac1 = read_file("/sys/class/net/veth1/address");
    shell("ip neigh replace 10.99.0.1 lladdr " + mac0.substr(0, 17) + " dev veth1 nud permanent");
    shell("ip neigh replace 10.99.0.2 lladdr " + mac1.substr(0, 17) + " dev veth0 nud permanent");
  }
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

TEST(Verbs, VerbsAndTcpSendersIntoOneAutoReceiver) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(
      dir,
      {"--max-streams", "2", "--verify", "--quiet", "--stats-json", (dir / "recv.json").string()},
      {}, "recv", kReceiverHost);  // --transport auto is the default
  Process over_verbs(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "90", "--checksum",
                                   "--name", "rdma"}),
                     dir / "verbs.stderr");
  Process over_tcp(
      {RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--transport", "tcp", "--quiet",
       "--testsrc", "-s", "320x180", "--frames", "90", "--checksum", "--name", "plain"},
      dir / "tcp.stderr");
  const auto r = two_streams_verified(over_verbs, over_tcp, recv, dir, 180);
  for (const auto& s : r["streams"]) {
    EXPECT_EQ(s["transport"], s["name"] == "rdma" ? "verbs" : "tcp") << s.dump();
    EXPECT_EQ(s["frames"], 90);
  }
}

// Fan-out through one device: two verbs destinations from rxe1 share its protection domain,
// so the pool frames are sent from is registered once (the second destination finds it), and
// each receiver verifies every frame.
TEST(Verbs, TwoDestinationsOnOneDeviceRegisterThePoolOnce) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver a(
      dir,
      {"--transport", "verbs", "--verify", "--quiet", "--stats-json", (dir / "a.json").string()},
      {}, "a", kReceiverHost);
  Receiver b(
      dir,
      {"--transport", "verbs", "--verify", "--quiet", "--stats-json", (dir / "b.json").string()},
      {}, "b", kReceiverHost);
  Process send({RDMAVIDEO_SEND_BIN, "--connect", a.address(), "--connect", b.address(),
                "--transport", "verbs", "--quiet", "--testsrc", "-s", "320x180", "--frames", "120",
                "--checksum", "--stats-json", (dir / "send.json").string()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(180s), 0) << send.stderr_text();
  for (auto* r : {&a, &b}) ASSERT_EQ(r->process().wait(60s), 0) << r->process().stderr_text();
  for (const char* name : {"a.json", "b.json"}) {
    const auto r = read_json(dir / name);
    EXPECT_EQ(r["frames"], 120) << name;
    EXPECT_EQ(r["checksum_failures"], 0) << name;
    EXPECT_EQ(r["transport"], "verbs") << name;
  }
  const auto s = read_json(dir / "send.json");
  ASSERT_EQ(s["destinations"].size(), 2u) << s.dump(2);
  uint32_t held = 0;
  uint32_t shared = 0;
  for (const auto& d : s["destinations"]) {
    EXPECT_EQ(d["transport"], "verbs") << d.dump();
    EXPECT_EQ(d["frames"], 120) << d.dump();
    EXPECT_GE(d["registrations"].get<uint32_t>(), 1u) << d.dump();
    held += d["registrations"].get<uint32_t>();
    shared += d["registrations_shared"].get<uint32_t>();
  }
  // Both send from the same registrations: what one made, the other shares.
  EXPECT_EQ(s["registrations"].get<uint32_t>() * 2, held) << s.dump(2);
  EXPECT_EQ(shared, s["registrations"].get<uint32_t>()) << s.dump(2);
}

// `auto` per destination: one receiver takes verbs, the other only TCP; one sender feeds both
// at once, each over what it can take.
TEST(Verbs, OneVerbsAndOneTcpDestinationAtOnce) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver rdma(
      dir,
      {"--transport", "verbs", "--verify", "--quiet", "--stats-json", (dir / "rdma.json").string()},
      {}, "rdma", kReceiverHost);
  Receiver plain(
      dir,
      {"--transport", "tcp", "--verify", "--quiet", "--stats-json", (dir / "plain.json").string()},
      {}, "plain", kReceiverHost);
  Process send({RDMAVIDEO_SEND_BIN, "--connect", rdma.address(), "--connect", plain.address(),
                "--quiet", "--testsrc", "-s", "320x180", "--frames", "120", "--checksum",
                "--stats-json", (dir / "send.json").string()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(180s), 0) << send.stderr_text();
  for (auto* r : {&rdma, &plain})
    ASSERT_EQ(r->process().wait(60s), 0) << r->process().stderr_text();
  EXPECT_EQ(read_json(dir / "rdma.json")["transport"], "verbs");
  EXPECT_EQ(read_json(dir / "plain.json")["transport"], "tcp");
  for (const char* name : {"rdma.json", "plain.json"}) {
    EXPECT_EQ(read_json(dir / name)["frames"], 120) << name;
    EXPECT_EQ(read_json(dir / name)["checksum_failures"], 0) << name;
  }
  const auto s = read_json(dir / "send.json");
  ASSERT_EQ(s["destinations"].size(), 2u) << s.dump(2);
  EXPECT_EQ(s["destinations"][0]["transport"], "verbs");
  EXPECT_EQ(s["destinations"][1]["transport"], "tcp");
  EXPECT_EQ(s["destinations"][1]["registrations"], 0);
  for (const auto& d : s["destinations"]) EXPECT_EQ(d["frames"], 120) << d.dump();
}

TEST(Verbs, ReceiverKilledMidStreamIsAClearSenderError) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir, {"--transport", "verbs", "--quiet"}, {}, "recv", kReceiverHost);
  Process send(sender(recv, {"--testsrc", "-s", "320x180", "--frames", "1000000"}),
               dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr("stream 1 ring 1: 320x180", 30s));
  std::this_thread::sleep_for(1500ms);
  recv.process().signal(SIGKILL);
  const auto code = send.wait(60s);
  ASSERT_TRUE(code) << "sender did not notice the dead receiver";
  EXPECT_EQ(*code, 1);
  const std::string err = send.stderr_text();
  EXPECT_TRUE(err.find("receiver disconnected") != std::string::npos ||
              err.find("connection lost") != std::string::npos ||
              err.find("completion error") != std::string::npos ||
              err.find("receiver silent") != std::string::npos)
      << err;
}

TEST(Verbs, AutoPicksVerbsWhenBothEndsCan) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir, {"--quiet", "--verify", "--stats-json", (dir / "recv.json").string()}, {},
                "recv", kReceiverHost);  // --transport auto is the default
  EXPECT_TRUE(recv.process().wait_for_stderr(R"(listening on 10\.99\.0\.1:\d+ \(tcp\+verbs\))", 5s))
      << recv.process().stderr_text();
  Process send(
      {RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "-s", "320x180", "--frames",
       "30", "--checksum", "--quiet", "--stats-json", (dir / "send.json").string()},
      dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "send.json")["transport"], "verbs");
  EXPECT_EQ(read_json(dir / "recv.json")["transport"], "verbs");
  EXPECT_EQ(read_json(dir / "recv.json")["checksum_failures"], 0);
  EXPECT_NE(send.stderr_text().find("connected over verbs (auto)"), std::string::npos)
      << send.stderr_text();
}

TEST(Verbs, AutoFallsBackToTcpWhenTheReceiverTakesOnlyTcp) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir,
                {"--transport", "tcp", "--quiet", "--stats-json", (dir / "recv.json").string()}, {},
                "recv", kReceiverHost);
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "-s", "320x180",
                "--frames", "30", "--quiet", "--stats-json", (dir / "send.json").string()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "send.json")["transport"], "tcp");
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 30);
  EXPECT_NE(send.stderr_text().find("falling back to tcp"), std::string::npos)
      << send.stderr_text();
}

// A client that speaks rdma_cm but not our protocol: it connects with the given private
// data and reports how the receiver answered.
std::string raw_cm_connect(const std::string& address, std::vector<std::byte> private_data) {
  rdma_event_channel* channel = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP);
  const auto colon = address.rfind(':');
  addrinfo* ai = nullptr;
  getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), nullptr, &ai);
  std::string outcome = "no answer";
  auto next = [&](rdma_cm_event_type want) {
    pollfd pfd{channel->fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0) return false;
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) != 0) return false;
    const bool ok = event->event == want;
    if (event->event == RDMA_CM_EVENT_REJECTED) {
      const char* reason = static_cast<const char*>(event->param.conn.private_data);
      outcome =
          std::string("rejected: ") +
          (reason ? std::string(reason, strnlen(reason, event->param.conn.private_data_len)) : "");
    } else if (event->event == RDMA_CM_EVENT_ESTABLISHED) {
      outcome = "accepted";
    }
    rdma_ack_cm_event(event);
    return ok;
  };
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  if (rdma_resolve_addr(id, nullptr, ai->ai_addr, 5000) == 0 && next(RDMA_CM_EVENT_ADDR_RESOLVED) &&
      rdma_resolve_route(id, 5000) == 0 && next(RDMA_CM_EVENT_ROUTE_RESOLVED)) {
    pd = ibv_alloc_pd(id->verbs);
    cq = ibv_create_cq(id->verbs, 8, nullptr, nullptr, 0);
    ibv_qp_init_attr attr{};
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap = {4, 4, 1, 1, 0};
    rdma_create_qp(id, pd, &attr);
    rdma_conn_param param{};
    param.private_data = private_data.empty() ? nullptr : private_data.data();
    param.private_data_len = static_cast<uint8_t>(private_data.size());
    param.retry_count = 1;
    param.rnr_retry_count = 1;
    rdma_connect(id, &param);
    next(RDMA_CM_EVENT_ESTABLISHED);
    rdma_disconnect(id);
  }
  if (id->qp) rdma_destroy_qp(id);
  if (cq) ibv_destroy_cq(cq);
  if (pd) ibv_dealloc_pd(pd);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(channel);
  freeaddrinfo(ai);
  return outcome;
}

std::vector<std::byte> connect_request(uint32_t magic, uint16_t min_version, uint16_t max_version) {
  std::vector<std::byte> out(16);
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &min_version, 2);
  std::memcpy(out.data() + 6, &max_version, 2);
  return out;
}

TEST(Verbs, GarbagePeersOnTheCmPortAreRejectedWithAReason) {
  REQUIRE_LAB();
  TempDir dir;
  Receiver recv(dir,
                {"--transport", "verbs", "--quiet", "--stats-json", (dir / "recv.json").string()},
                {}, "recv", kReceiverHost);
  struct Case {
    std::vector<std::byte> private_data;
    const char* reason;
  };
  const Case cases[] = {
      {connect_request(0xdeadbeef, 1, 1), "ConnectRequest.magic 0xdeadbeef is not RDVF"},
      {connect_request(proto::kMagic, 7, 9), "ConnectRequest versions 7..9 do not overlap"},
      {{}, "ConnectRequest missing"},  // IB and RoCE pad private data: empty arrives as zeros
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    const std::string outcome = raw_cm_connect(recv.address(), c.private_data);
    EXPECT_NE(outcome.find(std::string("rejected: ") + c.reason), std::string::npos) << outcome;
    EXPECT_TRUE(recv.process().wait_for_stderr(
        std::regex_replace(c.reason, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"), 10s))
        << recv.process().stderr_text();
  }
  expect_good_sender_served(dir, recv, 0);
}

}  // namespace
}  // namespace rdmavideo::testing
