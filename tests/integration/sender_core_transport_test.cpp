// SPDX-License-Identifier: Apache-2.0
// One test body for the sender core over every transport: the real channel of each (TCP on
// loopback everywhere; verbs in the Soft-RoCE lab, where the rxe_sender_core test runs this
// binary, and skipped elsewhere) against the receiver service in this process. The body
// drives the core as a session does: the handshake, a stream, frames from registered memory
// with a hold each, a second format on the same connection (a new ring), the end of the
// stream. Every frame carries a checksum the receiver verifies; every hold is let go once
// its frame is read, and the core's one list of frames in flight is empty at the end.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "rdmavideo/checksum.hpp"
#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "sender/sender_core.hpp"

namespace rdmavideo::sender {
namespace {

using namespace std::chrono_literals;

struct Received {
  std::atomic<uint64_t> frames{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> bad{0};
  std::atomic<uint64_t> formats{0};
  std::atomic<bool> finished{false};
};

// Verifies every frame against the checksum it carries, and lets its slot go at once.
class VerifyingSink final : public StreamSink {
 public:
  explicit VerifyingSink(std::shared_ptr<Received> received) : received_(std::move(received)) {}
  void frame(FrameLease frame) override {
    if (frame.shared_format() != format_) {
      format_ = frame.shared_format();
      verifier_.emplace(*format_);
      ++received_->formats;
    }
    if (auto bad = verifier_->verify(frame.info(), frame.data())) {
      ADD_FAILURE() << *bad;
      ++received_->bad;
    }
    ++received_->frames;
    received_->bytes += frame.data().size();
  }
  Result<void> finish(const StreamEnd& end) override {
    EXPECT_TRUE(end.ok()) << (end.error ? end.error->message() : "");
    received_->finished = true;
    return {};
  }

 private:
  std::shared_ptr<Received> received_;
  std::shared_ptr<const proto::StreamStart> format_;
  std::optional<FrameVerifier> verifier_;
};

struct Transport {
  TransportKind kind;
  const char* host;  // the receiver's address
};
void PrintTo(const Transport& t, std::ostream* os) { *os << to_string(t.kind) << " to " << t.host; }

class SenderCoreOver : public ::testing::TestWithParam<Transport> {};

proto::StreamStart checksummed(uint32_t width, uint32_t height) {
  auto format = proto::make_stream_start(PixelFormat::uyvy, width, height, {60, 1});
  format->name = "core";
  format->flags |= proto::kStreamChecksums;
  return *format;
}

TEST_P(SenderCoreOver, FramesFromRegisteredMemoryAcrossTwoFormatsEachVerified) {
  const Transport t = GetParam();
  if (t.kind == TransportKind::verbs && !std::filesystem::exists("/sys/class/infiniband/rxe0")) {
    GTEST_SKIP() << "no Soft-RoCE lab here (rxe0 missing): ctest -L rxe runs this in it";
  }
  auto received = std::make_shared<Received>();
  ReceiverServiceOptions service_options;
  service_options.transport = t.kind;
  service_options.listen.endpoint = Endpoint{t.host, 0};
  service_options.listen.ring_size = 4;
  service_options.sink_factory =
      [received](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return std::unique_ptr<StreamSink>(std::make_unique<VerifyingSink>(received));
  };
  auto service = ReceiverService::start(std::move(service_options));
  ASSERT_TRUE(service) << service.error().message();

  ConnectOptions options;
  options.endpoint = (*service)->local_endpoint();
  auto connected = SenderCore::connect(t.kind, options);
  ASSERT_TRUE(connected) << connected.error().message();
  SenderCore& core = **connected;
  EXPECT_EQ(core.kind(), t.kind);

  // Three frame buffers of the larger format in one registration, as a session's pool.
  constexpr size_t kBuffers = 3;
  const auto large = checksummed(320, 180);
  const auto small = checksummed(64, 36);
  const size_t stride = large.layout.frame_bytes;
  auto pool = std::make_shared<std::vector<std::byte>>(kBuffers * stride);
  ASSERT_TRUE(core.channel().register_memory(*pool, pool));
  EXPECT_EQ(core.channel().registrations(), t.kind == TransportKind::verbs ? 1u : 0u);

  std::vector<std::weak_ptr<const void>> holds(kBuffers);
  uint64_t sequence = 0;
  uint64_t sent_bytes = 0;
  constexpr uint64_t kFramesEach = 40;
  for (const auto* format : {&large, &small}) {
    const auto ring = core.start_stream(*format);
    ASSERT_TRUE(ring) << ring.error().message();
    EXPECT_EQ(ring->slot_count, 4u);
    for (uint64_t i = 0; i < kFramesEach; ++i, ++sequence) {
      const size_t b = sequence % kBuffers;
      // The buffer is written again only once no transfer reads it: its hold has gone.
      while (!holds[b].expired()) ASSERT_TRUE(core.retire_oldest());
      std::span<std::byte> frame(pool->data() + b * stride, format->layout.frame_bytes);
      for (size_t j = 0; j < frame.size(); ++j)
        frame[j] = static_cast<std::byte>((sequence * 31 + j) & 0xff);
      std::optional<Credit> credit;
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!credit && std::chrono::steady_clock::now() < deadline) {
        auto got = core.acquire(100ms);
        ASSERT_TRUE(got) << got.error().message();
        credit = *got;
      }
      ASSERT_TRUE(credit) << "no credit within 10 s at frame " << sequence;
      proto::FrameWritten info;
      info.sequence = sequence;
      info.bytes = static_cast<uint32_t>(frame.size());
      info.flags = proto::kFrameHasChecksum;
      info.checksum = frame_checksum(frame);
      auto hold = std::make_shared<int>(0);
      holds[b] = hold;
      ASSERT_TRUE(core.send_frame(*credit, frame, info, std::move(hold)));
      sent_bytes += frame.size();
    }
  }
  ASSERT_TRUE(core.end_stream({sequence, 0}));
  EXPECT_EQ(core.in_flight(), 0u);
  for (const auto& h : holds) EXPECT_TRUE(h.expired()) << "a hold outlived its frame's send";

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!received->finished && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(received->finished) << "the receiver did not see the stream end";
  EXPECT_EQ(received->frames, 2 * kFramesEach);
  EXPECT_EQ(received->bytes, sent_bytes);
  EXPECT_EQ(received->bad, 0u);
  EXPECT_EQ(received->formats, 2u);
  // The sink has finished; the service marks the stream ended once finish() has returned.
  auto reports = (*service)->reports();
  while (reports.size() == 1 && reports[0].state == StreamReport::State::running &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    reports = (*service)->reports();
  }
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].state, StreamReport::State::ended);
  EXPECT_EQ(reports[0].info.transport, t.kind);
  EXPECT_EQ(reports[0].stats.frames, 2 * kFramesEach);
  EXPECT_EQ(reports[0].stats.dropped, 0u);
  (*service)->stop();
}

INSTANTIATE_TEST_SUITE_P(Transports, SenderCoreOver,
                         ::testing::Values(Transport{TransportKind::tcp, "127.0.0.1"},
                                           Transport{TransportKind::verbs, "10.99.0.1"}),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param.kind));
                         });

}  // namespace
}  // namespace rdmavideo::sender
