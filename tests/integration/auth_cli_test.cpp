// SPDX-License-Identifier: Apache-2.0
// --key-file with the real binaries over 127.0.0.1: both ends with the key stream and verify;
// a missing key on either side, a wrong key and a key file others may read are refused with
// one clear line and a non-zero exit, and the receiver goes on serving; an on-path relay
// that changes one byte of a control message after the handshake ends the stream.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include "output_checks.hpp"
#include "process.hpp"
#include "rdmavideo/auth.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

fs::path new_key(const TempDir& dir, const std::string& name) {
  const fs::path p = dir / name;
  if (auto ok = auth::create_key_file(p); !ok) throw std::runtime_error(ok.error().message());
  return p;
}

std::vector<std::string> sender(const std::string& address, const std::string& name,
                                std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", address, "--testsrc",  "-s",
                             "320x240",          "--frames",  "30",    "--checksum", "--quiet",
                             "--name",           name};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Authentication, BothEndsWithTheKeyStreamAndVerify) {
  TempDir dir;
  const auto key = new_key(dir, "shared.key");
  Receiver recv(dir, {"--key-file", key.string(), "--verify", "--quiet", "--stats-json",
                      (dir / "recv.json").string()});
  Process send(sender(recv.address(), "cam", {"--key-file", key.string()}), dir / "send.stderr");
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"].get<int>(), 30);
  EXPECT_EQ(r["checksum_failures"].get<int>(), 0);
}

class Refusals : public ::testing::Test {
 protected:
  // The refused sender exits 1 within 5 s with one error line holding `expected`; the
  // receiver logs the refusal and still serves a sender with the right key.
  void expect_refused(Receiver& recv, std::vector<std::string> sender_extra,
                      const std::string& expected, const std::string& receiver_logs) {
    Process bad(sender(recv.address(), "impostor", sender_extra), dir_ / "bad.stderr");
    const auto code = bad.wait(5s);
    ASSERT_TRUE(code) << "the refused sender hung: " << bad.stderr_text();
    EXPECT_EQ(*code, 1);
    const auto lines = error_lines(bad.stderr_text());
    ASSERT_EQ(lines.size(), 1u) << bad.stderr_text();
    EXPECT_NE(lines[0].find(expected), std::string::npos) << lines[0];
    EXPECT_TRUE(recv.process().wait_for_stderr(receiver_logs, 10s)) << recv.process().stderr_text();
  }

  TempDir dir_;
  fs::path key_ = new_key(dir_, "shared.key");
};

TEST_F(Refusals, AReceiverWithAKeyRefusesASenderWithoutOne) {
  Receiver recv(dir_, {"--key-file", key_.string(), "--serve", "--quiet"});
  expect_refused(recv, {},
                 "receiver refused: authentication failed: this receiver requires a shared key",
                 "authentication failed: this receiver requires a shared key");
  Process good(sender(recv.address(), "good", {"--key-file", key_.string()}), dir_ / "good.stderr");
  ASSERT_EQ(good.wait(30s), 0) << good.stderr_text();
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

TEST_F(Refusals, ASenderWithAKeyRefusesAReceiverWithoutOne) {
  Receiver recv(dir_, {"--serve", "--quiet"});
  expect_refused(recv, {"--key-file", key_.string()},
                 "authentication failed: the receiver holds no key",
                 "sender reported: authentication failed: the receiver holds no key");
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

TEST_F(Refusals, AWrongKeyIsRefusedWithoutSayingMore) {
  Receiver recv(dir_, {"--key-file", key_.string(), "--serve", "--quiet"});
  const auto wrong = new_key(dir_, "wrong.key");
  expect_refused(recv, {"--key-file", wrong.string()}, "receiver refused: authentication failed",
                 R"(127\.0\.0\.1:\d+: authentication failed; closing)");
  Process good(sender(recv.address(), "good", {"--key-file", key_.string()}), dir_ / "good.stderr");
  ASSERT_EQ(good.wait(30s), 0) << good.stderr_text();
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

TEST_F(Refusals, AKeyFileOthersMayReadIsAUsageErrorOnBothEnds) {
  fs::permissions(key_, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  Process recv({RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0", "--key-file", key_.string()},
               dir_ / "recv.stderr");
  EXPECT_EQ(recv.wait(10s), 2);
  EXPECT_NE(recv.stderr_text().find("chmod 600 " + key_.string()), std::string::npos)
      << recv.stderr_text();
  Process send(sender("127.0.0.1:9", "cam", {"--key-file", key_.string()}), dir_ / "send.stderr");
  EXPECT_EQ(send.wait(10s), 2);
  EXPECT_NE(send.stderr_text().find("accessible by group or others (mode 0644)"), std::string::npos)
      << send.stderr_text();
}

// A TCP relay between sender and receiver that flips one bit of the sender's byte stream at
// `offset`, as an on-path attacker would.
class FlippingRelay {
 public:
  FlippingRelay(int target_port, size_t offset) : offset_(offset) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 1) != 0) {
      throw std::runtime_error("relay: bind/listen failed");
    }
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, target_port] { run(target_port); });
  }
  ~FlippingRelay() {
    done_ = true;
    thread_.join();
    close(listen_fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void run(int target_port) {
    pollfd accept_poll{listen_fd_, POLLIN, 0};
    while (!done_ && poll(&accept_poll, 1, 100) == 0) {
    }
    if (done_) return;
    const int client = accept(listen_fd_, nullptr, nullptr);
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(target_port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    size_t forwarded = 0;  // sender bytes passed on so far
    std::vector<char> buf(1 << 16);
    while (!done_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(fds, 2, 100) <= 0) continue;
      if (fds[0].revents) {
        const ssize_t n = read(client, buf.data(), buf.size());
        if (n <= 0) break;
        if (forwarded <= offset_ && offset_ < forwarded + static_cast<size_t>(n)) {
          buf[offset_ - forwarded] ^= 0x01;
        }
        forwarded += static_cast<size_t>(n);
        if (write(server, buf.data(), static_cast<size_t>(n)) != n) break;
      }
      if (fds[1].revents) {
        const ssize_t n = read(server, buf.data(), buf.size());
        if (n <= 0) break;
        if (write(client, buf.data(), static_cast<size_t>(n)) != n) break;
      }
    }
    close(client);
    close(server);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  size_t offset_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST(Authentication, AnOnPathChangeToAControlMessageEndsTheStream) {
  TempDir dir;
  const auto key = new_key(dir, "shared.key");
  Receiver recv(dir, {"--key-file", key.string(), "--quiet"});
  // The sender's Hello (72 bytes) and proof (80) pass; the bit flipped is in the body of its
  // first sealed message, the StreamStart (width, at body offset 16).
  FlippingRelay relay(recv.port(), 72 + 80 + proto::kHeaderBytes + 16);
  Process send(sender(relay.address(), "cam", {"--key-file", key.string()}), dir / "send.stderr");
  const auto code = send.wait(10s);
  ASSERT_TRUE(code) << send.stderr_text();
  EXPECT_EQ(*code, 1);
  EXPECT_NE(
      send.stderr_text().find("authentication failed: a control message's tag does not verify"),
      std::string::npos)
      << send.stderr_text();
  // That connection never became a stream: the receiver logs it and waits for a real one.
  EXPECT_TRUE(recv.process().wait_for_stderr("tag does not verify", 10s))
      << recv.process().stderr_text();
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(10s), 0) << recv.process().stderr_text();
}

}  // namespace
}  // namespace rdmavideo::testing
