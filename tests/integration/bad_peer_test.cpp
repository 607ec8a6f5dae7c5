// SPDX-License-Identifier: Apache-2.0
// A receiver faced with broken peers: garbage, truncated and oversized messages, a wrong
// version, a slot out of range, a frame larger than its slot, a sender that dies mid-frame,
// and a corrupted payload. Each costs only its own connection: the error names the field,
// the peer is told why, and the next good sender is served. The receiver runs with --serve,
// as one left running does: a peer that got as far as a stream is a stream that failed, and
// the receiver goes on; one that did not is no stream at all.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>

#include "process.hpp"
#include "raw_peer.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

int peer_fd(const RawPeer& peer) { return peer.fd(); }

class BadPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    recv_.emplace(dir_, std::vector<std::string>{"--verify", "--quiet", "--ring", "8", "--serve",
                                                 "--stats-json", (dir_ / "recv.json").string()});
  }

  // The receiver logged `needle` (the field and value) for this peer.
  void expect_logged(const std::string& needle) {
    EXPECT_TRUE(recv_->process().wait_for_stderr(
        std::regex_replace(needle, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"), 10s))
        << "receiver log lacks \"" << needle << "\":\n"
        << recv_->process().stderr_text();
  }

  // After any bad peer, a good sender is served, its frames all verified; on SIGTERM the
  // receiver (a service, --serve) exits 0 whatever its peers did, and 1 only when frames
  // failed --verify: a stream that failed is in the summary (state "failed"), not the exit.
  void expect_next_sender_served(bool bad_peer_was_a_stream = false) {
    Process send({RDMAVIDEO_SEND_BIN, "--connect", recv_->address(), "--testsrc", "-s", "320x240",
                  "--frames", "10", "--checksum", "--quiet", "--name", "good"},
                 dir_ / "good.stderr");
    ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
    ASSERT_TRUE(
        recv_->process().wait_for_stderr("\"good\"\\] stream [0-9]+ the sender ended it", 10s))
        << recv_->process().stderr_text();
    recv_->process().signal(SIGTERM);
    ASSERT_EQ(recv_->process().wait(30s), expected_failures_ > 0 ? 1 : 0)
        << recv_->process().stderr_text();
    const auto r = read_json(dir_ / "recv.json");
    EXPECT_EQ(r["frames"].get<int>(), 10 + extra_frames_);
    EXPECT_EQ(r["checksum_failures"].get<int>(), expected_failures_);
    // Verification is per stream: the good stream is clean whatever the bad peer sent.
    ASSERT_EQ(r["streams"].size(), bad_peer_was_a_stream ? 2u : 1u) << r.dump(2);
    const auto& good = r["streams"].back();
    EXPECT_EQ(good["name"], "good");
    EXPECT_EQ(good["state"], "ended");
    EXPECT_EQ(good["frames"], 10);
    EXPECT_EQ(good["checksum_failures"], 0);
    if (bad_peer_was_a_stream) {
      EXPECT_EQ(r["streams"][0]["state"], "failed");
    }
  }

  TempDir dir_;
  std::optional<Receiver> recv_;
  int extra_frames_ = 0;       // frames a bad peer delivered whole before failing
  int expected_failures_ = 0;  // frames meant to fail --verify
};

TEST_F(BadPeer, GarbageBytes) {
  {
    RawPeer peer(recv_->port());
    std::vector<std::byte> garbage(64);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = std::byte(i * 37 + 11);
    peer.send_bytes(garbage);
    auto error = peer.error_before_close();
    ASSERT_TRUE(error);
    EXPECT_NE(error->text.find("Header.magic"), std::string::npos) << error->text;
  }
  expect_logged("Header.magic 0x");
  expect_next_sender_served();
}

TEST_F(BadPeer, TruncatedMessage) {
  {
    RawPeer peer(recv_->port());
    auto hello =
        proto::encode(proto::Hello{proto::kMinVersion, proto::kVersion, 0, 1 << 20, 0, "x"});
    peer.send_bytes(std::span(hello).first(proto::kHeaderBytes + 10));
  }  // closed mid-body
  expect_logged("in the middle of Hello (10 of 56 bytes)");
  expect_next_sender_served();
}

TEST_F(BadPeer, OversizedMessage) {
  {
    RawPeer peer(recv_->port());
    auto bytes =
        proto::encode(proto::Hello{proto::kMinVersion, proto::kVersion, 0, 1 << 20, 0, "x"});
    const uint32_t huge = 1 << 20;
    std::memcpy(bytes.data() + 8, &huge, 4);
    peer.send_bytes(bytes);
    auto error = peer.error_before_close();
    ASSERT_TRUE(error);
    EXPECT_EQ(error->code, ErrorCode::protocol);
  }
  expect_logged("Header.length 1048576 exceeds 65536");
  expect_next_sender_served();
}

TEST_F(BadPeer, WrongVersionInHello) {
  {
    RawPeer peer(recv_->port());
    peer.send(proto::Hello{7, 9, 0, 1 << 20, 0, "future"});
    auto error = peer.error_before_close();
    ASSERT_TRUE(error);
    EXPECT_EQ(error->code, ErrorCode::unsupported);
    EXPECT_NE(error->text.find("7..9"), std::string::npos) << error->text;
  }
  expect_logged("Hello versions 7..9 do not overlap this receiver's 2..3");
  expect_next_sender_served();
}

TEST_F(BadPeer, WrongHeaderVersion) {
  {
    RawPeer peer(recv_->port());
    auto bytes =
        proto::encode(proto::Hello{proto::kMinVersion, proto::kVersion, 0, 1 << 20, 0, "x"});
    bytes[4] = std::byte{proto::kVersion + 1};
    peer.send_bytes(bytes);
    EXPECT_TRUE(peer.error_before_close());
  }
  expect_logged("Header.version 4 not spoken here (1..3 for Hello)");
  expect_next_sender_served();
}

TEST_F(BadPeer, SlotOutOfRange) {
  {
    RawPeer peer(recv_->port());
    peer.handshake();
    auto [ring, credits] = peer.start(small_format());
    EXPECT_EQ(ring.slot_count, 8u);
    EXPECT_EQ(credits.slots.size(), 8u);
    proto::FrameWritten frame{
        ring.ring_epoch, 12, 0, 0, 0, small_format().layout.frame_bytes, 0, 0};
    peer.send(frame);
    auto error = peer.error_before_close();
    ASSERT_TRUE(error);
    EXPECT_NE(error->text.find("FrameWritten.slot 12 out of range (ring has 8 slots)"),
              std::string::npos)
        << error->text;
  }
  expect_logged("FrameWritten.slot 12 out of range (ring has 8 slots); ");
  expect_next_sender_served(true);
}

TEST_F(BadPeer, FrameLargerThanSlot) {
  {
    RawPeer peer(recv_->port());
    peer.handshake();
    auto [ring, credits] = peer.start(small_format());
    const uint32_t too_big = small_format().layout.frame_bytes + 4096;
    peer.send(proto::FrameWritten{ring.ring_epoch, credits.slots[0], 0, 0, 0, too_big, 0, 0});
    EXPECT_TRUE(peer.error_before_close());
  }
  expect_logged("FrameWritten.bytes " + std::to_string(small_format().layout.frame_bytes + 4096) +
                " larger than the slot");
  expect_next_sender_served(true);
}

TEST_F(BadPeer, FrameInSlotNotGranted) {
  {
    RawPeer peer(recv_->port());
    peer.handshake();
    const auto format = small_format();
    auto [ring, credits] = peer.start(format);
    std::vector<std::byte> payload(format.layout.frame_bytes);
    proto::FrameWritten frame{ring.ring_epoch, 3, 0, 0, 0, format.layout.frame_bytes, 0, 0};
    peer.send(frame);
    peer.send_bytes(payload);
    peer.send(frame);  // slot 3 again, before any credit came back
    EXPECT_TRUE(peer.error_before_close());
  }
  extra_frames_ = 1;
  // Filled, or held by the receiver if the sink already let it go: never granted.
  expect_logged("FrameWritten.slot 3 not granted (it is ");
  expect_next_sender_served(true);
}

TEST_F(BadPeer, SenderDiesMidFrame) {
  {
    RawPeer peer(recv_->port());
    const auto format = peer.begin_frame();
    std::vector<std::byte> half(format.layout.frame_bytes / 2);
    peer.send_bytes(half);
  }
  expect_logged("in the middle of FrameWritten payload (2304 of 4608 bytes)");
  expect_next_sender_served(true);
}

TEST_F(BadPeer, CorruptedPayloadFailsVerify) {
  {
    RawPeer peer(recv_->port());
    peer.handshake();
    auto format = small_format();
    format.flags = proto::kStreamChecksums | proto::kStreamTestPattern;
    auto [ring, credits] = peer.start(format);
    TestPattern pattern(format);
    auto frame = pattern.frame(0);
    std::vector<std::byte> payload(frame.begin(), frame.end());
    proto::FrameWritten info{
        ring.ring_epoch,          credits.slots[0],       0, 0, 0, format.layout.frame_bytes,
        proto::kFrameHasChecksum, frame_checksum(payload)};
    payload[1000] ^= std::byte{0x40};  // corrupted after the checksum was taken
    peer.send(info);
    peer.send_bytes(payload);
    peer.send(proto::EndOfStream{1, 0});
    EXPECT_FALSE(peer.error_before_close());
  }
  // The stream ended normally but a frame failed --verify: that stream failed, no other.
  expect_logged("does not match FrameWritten.checksum");
  extra_frames_ = 1;
  expected_failures_ = 1;
  expect_next_sender_served(true);
  const auto r = read_json(dir_ / "recv.json");
  EXPECT_EQ(r["streams"][0]["frames"], 1);
  EXPECT_EQ(r["streams"][0]["checksum_failures"], 1);
  // Its FrameWritten said no send time (sent_ns 0): no latency, rather than 56 years.
  EXPECT_EQ(r["streams"][0]["latency_ms"]["max"], 0.0) << r["streams"][0];
}

// pts a sender should never send, but may: huge jumps and the extremes of int64. The
// recording repairs them (docs/protocol.md §3.9) and stays valid; nothing fails.
// A hundred idle sockets (connected, never a byte) hold neither the listener nor the
// descriptors: the receiver accepts them all at once, drops the oldest beyond 64 in
// handshake, ends the rest at the handshake deadline, and a good sender arriving among them
// is streaming within a second.
TEST_F(BadPeer, AHundredIdleSocketsDoNotLockOutAGoodSender) {
  std::vector<std::unique_ptr<RawPeer>> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(std::make_unique<RawPeer>(recv_->port()));
  expect_logged("connections are in their handshake (the limit): shedding the oldest");
  const auto start = std::chrono::steady_clock::now();
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv_->address(), "--testsrc", "-s", "320x240",
                "--frames", "10", "--checksum", "--quiet", "--name", "good"},
               dir_ / "good.stderr");
  ASSERT_TRUE(recv_->process().wait_for_stderr("\"good\"\\] stream [0-9]+ ring 1", 10s))
      << recv_->process().stderr_text();
  const auto served = std::chrono::steady_clock::now() - start;
  EXPECT_LT(served, 1s) << "served after "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(served).count()
                        << " ms";
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  // The idle ones are closed by the receiver: dropped, or at the 5 s handshake deadline.
  int closed = 0;
  for (auto& peer : idle) {
    std::byte b;
    if (::recv(peer->fd(), &b, 1, 0) <= 0) ++closed;
  }
  EXPECT_EQ(closed, 100);
  recv_->process().signal(SIGTERM);
  ASSERT_EQ(recv_->process().wait(30s), 0) << recv_->process().stderr_text();
}

TEST(BadPeerRecording, ExtremePtsAreRepairedNotFatal) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  TempDir dir;
  Receiver recv(dir, {"--quiet", "--output", (dir / "rec.mkv").string(), "--stats-json",
                      (dir / "recv.json").string()});
  const std::vector<int64_t> pts = {
      0, int64_t{1} << 62, INT64_MIN, INT64_MAX, -(int64_t{1} << 62), 33333333, 66666666};
  {
    RawPeer peer(recv.port());
    peer.handshake();
    const auto format = small_format();
    auto [ring, credits] = peer.start(format);
    std::vector<std::byte> payload(format.layout.frame_bytes, std::byte{0x40});
    for (size_t i = 0; i < pts.size(); ++i) {
      peer.send(proto::FrameWritten{ring.ring_epoch, credits.slots[i], i, pts[i], 0,
                                    format.layout.frame_bytes, 0, 0});
      peer.send_bytes(payload);
    }
    peer.send(proto::EndOfStream{pts.size(), 0});
    EXPECT_FALSE(peer.error_before_close());
  }
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_NE(recv.process().stderr_text().find("jumps more than 10 s"), std::string::npos);
  EXPECT_NE(recv.process().stderr_text().find("recorded 7 frames"), std::string::npos)
      << recv.process().stderr_text();
  const auto facts = key_values(capture(
      "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames "
      "-of default=noprint_wrappers=1 '" +
      (dir / "rec.mkv").string() + "'"));
  EXPECT_EQ(facts.count("nb_read_frames") ? facts.at("nb_read_frames") : "", "7");
}

// A stream name that would rewrite a terminal or reverse the log's text: escaped wherever it
// is printed. A byte that is not UTF-8 becomes U+FFFD as the name arrives, so the log, the
// summary and anything else the name reaches (a GStreamer tag) get the same valid text.
TEST(BadPeerName, ControlAndBidiCharactersAreEscapedInTheLog) {
  TempDir dir;
  Receiver recv(dir, {"--stats-json", (dir / "recv.json").string()});
  const std::string hostile =
      "cam\xc2\x9b[2J\xe2\x80\xae"
      "4pm\x9b";
  {
    RawPeer peer(recv.port());
    peer.handshake();
    auto format = small_format();
    format.name = hostile;
    peer.start(format);
    peer.send(proto::EndOfStream{0, 0});
    EXPECT_FALSE(peer.error_before_close());
  }
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_NE(log.find("\"cam\\u009b[2J\\u202e4pm\xef\xbf\xbd\""), std::string::npos) << log;
  EXPECT_EQ(log.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(log.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(log.find('\x9b'), std::string::npos);
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["streams"][0]["name"],
            "cam\xc2\x9b[2J\xe2\x80\xae"
            "4pm\xef\xbf\xbd");
}

// Time limits that restarted with every byte let one byte every few seconds hold a
// connection for hours; each handshake and each payload has a deadline of its own.
TEST_F(BadPeer, TricklingHelloIsDroppedAtTheHandshakeDeadline) {
  const auto start = std::chrono::steady_clock::now();
  {
    RawPeer peer(recv_->port());
    const auto hello =
        proto::encode(proto::Hello{proto::kMinVersion, proto::kVersion, 0, 1 << 20, 0, "slow"});
    for (size_t i = 0; i < hello.size(); ++i) {  // 72 bytes, one a second: 72 s if allowed
      if (recv_->process().stderr_text().find("not complete in time") != std::string::npos) break;
      ::send(peer_fd(peer), &hello[i], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(1s);
    }
  }
  // The header is still arriving when the handshake's 5 s run out.
  expect_logged("peer too slow: message header not complete in time");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  expect_next_sender_served();
}

TEST_F(BadPeer, TricklingPayloadIsDroppedAtItsDeadline) {
  {
    RawPeer peer(recv_->port());
    const auto format = peer.begin_frame();
    const std::vector<std::byte> some(64);
    for (int i = 0; i < 30; ++i) {  // 64 bytes a second of a 4608-byte frame
      if (recv_->process().stderr_text().find("payload not complete in time") !=
          std::string::npos) {
        break;
      }
      ::send(peer_fd(peer), some.data(), some.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(1s);
    }
  }
  expect_logged("peer too slow: FrameWritten payload not complete in time");
  expect_next_sender_served(true);
}

// The receiver's resident memory, from /proc.
uint64_t rss_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// An attack on memory: with --output - into a pipe nobody reads, a peer changes format again
// and again, filling each new ring with frames that wait for the stalled output. Every ring
// stays counted while its frames wait, so the peer is refused once --max-memory is used, with
// an Error naming request and limit, and the receiver's RSS stays within the budget. Then a
// stop ends the receiver at once, though its output still is not read.
TEST(BadPeerMemory, FormatChangesIntoAStalledOutputStayInsideTheBudget) {
  TempDir dir;
  Redirect stalled;
  stalled.stdout_pipe = true;  // never read
  Receiver recv(dir, {"--max-memory", "32M", "--output", "-", "--quiet"}, stalled);
  const uint64_t rss_before = rss_bytes(recv.process().pid());
  RawPeer peer(recv.port());
  peer.handshake();
  std::optional<proto::ErrorMessage> refused;
  uint64_t sequence = 0;
  for (uint32_t epoch = 1; epoch <= 100 && !refused; ++epoch) {
    auto f = proto::make_stream_start(PixelFormat::uyvy, 640, 360 + 2 * (epoch % 2), {30, 1});
    f->stream_id = 1;
    f->ring_epoch = epoch;
    f->name = "grower";
    peer.send(*f);
    auto ring = peer.receive();
    ASSERT_TRUE(ring);
    if (auto* error = std::get_if<proto::ErrorMessage>(&*ring)) {
      refused = *error;
      break;
    }
    auto credits = peer.receive();
    ASSERT_TRUE(credits && std::holds_alternative<proto::CreditReturn>(*credits));
    const std::vector<std::byte> payload(f->layout.frame_bytes, std::byte{0x80});
    for (uint32_t slot : std::get<proto::CreditReturn>(*credits).slots) {
      proto::FrameWritten m;
      m.ring_epoch = epoch;
      m.slot = slot;
      m.sequence = sequence++;
      m.bytes = f->layout.frame_bytes;
      peer.send(m);
      peer.send_bytes(payload);
    }
  }
  ASSERT_TRUE(refused) << "100 format changes and no refusal";
  EXPECT_EQ(refused->code, ErrorCode::resource);
  EXPECT_NE(refused->text.find("beyond the receiver's memory budget of 32 MiB"), std::string::npos)
      << refused->text;
  const uint64_t rss = rss_bytes(recv.process().pid());
  EXPECT_LT(rss, rss_before + (40ull << 20)) << "RSS grew from " << rss_before << " to " << rss;
  // The stream failed; its frames still wait for the output. A stop does not.
  const auto start = std::chrono::steady_clock::now();
  recv.process().signal(SIGINT);
  const auto code = recv.process().wait(10s);
  ASSERT_TRUE(code) << "SIGINT did not end a receiver whose output is not read";
  EXPECT_EQ(*code, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_NE(recv.process().stderr_text().find("stopped while the output was not being read"),
            std::string::npos)
      << recv.process().stderr_text();
}

// --idle-timeout: a stream that sends only keepalives ends, its sender told why.
TEST(BadPeerIdle, IdleTimeoutEndsAStreamOfKeepalives) {
  TempDir dir;
  Receiver recv(dir, {"--idle-timeout", "1", "--quiet"});
  RawPeer peer(recv.port());
  peer.handshake();
  peer.start(small_format());
  for (int i = 0; i < 6; ++i) {
    peer.send(proto::Keepalive{0});
    std::this_thread::sleep_for(300ms);
  }
  auto error = peer.error_before_close();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::timeout);
  EXPECT_EQ(error->text, "no frame for 1000 ms (the receiver's idle timeout)");
  EXPECT_EQ(recv.process().wait(30s), 1);  // the one stream failed
}

TEST_F(BadPeer, SilentPeerTimesOutInHandshake) {
  {
    RawPeer peer(recv_->port());
    auto error = peer.error_before_close();  // the receiver gives up on us
    EXPECT_FALSE(error);
  }
  expect_logged("no Hello within 5000 ms");
  expect_next_sender_served();
}

}  // namespace
}  // namespace rdmavideo::testing
