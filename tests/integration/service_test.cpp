// SPDX-License-Identifier: Apache-2.0
// ReceiverService and SenderSession in one process over 127.0.0.1 TCP, for what the CLI
// cannot show quickly: a receiver that serves stream after stream keeps the reports of the
// last few that ended and folds older ones into one total (telling the front end, which folds
// its own), so its memory stays bounded while its totals stay whole; connections waiting for
// their first StreamStart are capped, the oldest shed; and the caps fit the descriptor limit.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "raw_peer.hpp"

#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo {
namespace {

class CountingSink final : public StreamSink {
 public:
  void frame(FrameLease) override {}
  Result<void> finish(const StreamEnd&) override { return {}; }
};

// One short stream of `frames` 64x36 frames, sent and ended.
void send_stream(const Endpoint& at, uint64_t frames) {
  SenderSessionOptions so;
  so.transport = TransportKind::tcp;
  so.connect.endpoint = at;
  auto session = SenderSession::connect(so);
  ASSERT_TRUE(session) << session.error().message();
  auto format = proto::make_stream_start(PixelFormat::uyvy, 64, 36, {30, 1});
  ASSERT_TRUE(format);
  ASSERT_TRUE((*session)->start_stream(*format, 2));
  for (uint64_t i = 0; i < frames; ++i) {
    auto buffer = (*session)->acquire_buffer();
    ASSERT_TRUE(buffer) << buffer.error().message();
    auto sent =
        (*session)->submit(*buffer, {i, static_cast<int64_t>(i), std::chrono::steady_clock::now()});
    ASSERT_TRUE(sent) << sent.error().message();
  }
  ASSERT_TRUE((*session)->end_stream());
}

TEST(ReceiverServiceReports, OldEndedStreamsAreFoldedIntoOneTotal) {
  ReceiverServiceOptions options;
  options.transport = TransportKind::tcp;
  options.listen.endpoint = {"127.0.0.1", 0};
  options.max_streams = 1;
  options.kept_ended_streams = 2;
  std::mutex folded_mu;
  std::vector<uint64_t> folded_numbers;  // what the front end was told, in order
  options.on_stream_folded = [&](const StreamReport& r) {
    std::lock_guard lock(folded_mu);
    folded_numbers.push_back(r.info.number);
  };
  options.sink_factory = [](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return std::unique_ptr<StreamSink>(std::make_unique<CountingSink>());
  };
  auto service = ReceiverService::start(options);
  ASSERT_TRUE(service) << service.error().message();
  const Endpoint at = (*service)->local_endpoint();
  for (uint64_t n = 1; n <= 5; ++n) {
    send_stream(at, n * 10);
    for (int i = 0; i < 500 && (*service)->ended_streams() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ((*service)->ended_streams(), n);
  }
  const auto reports = (*service)->reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].info.number, 4u);
  EXPECT_EQ(reports[0].stats.frames, 40u);
  EXPECT_EQ(reports[1].info.number, 5u);
  EXPECT_EQ(reports[1].stats.frames, 50u);
  const auto folded = (*service)->folded_streams();
  EXPECT_EQ(folded.count, 3u);
  EXPECT_EQ(folded.failed, 0u);
  EXPECT_EQ(folded.stats.frames, 10u + 20 + 30);
  EXPECT_EQ(folded.stats.bytes, (10u + 20 + 30) * 64 * 36 * 2);
  EXPECT_EQ(folded.stats.latency.count(), 60u);
  {
    std::lock_guard lock(folded_mu);
    EXPECT_EQ(folded_numbers, (std::vector<uint64_t>{1, 2, 3}));
  }
  (*service)->stop();
}

ReceiverServiceOptions waiting_options(uint32_t max_pending) {
  ReceiverServiceOptions options;
  options.transport = TransportKind::tcp;
  options.listen.endpoint = {"127.0.0.1", 0};
  options.max_pending = max_pending;
  options.sink_factory = [](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return std::unique_ptr<StreamSink>(std::make_unique<CountingSink>());
  };
  return options;
}

uint64_t refused_for(const ReceiverService& service, const std::string& reason) {
  for (const auto& [r, n] : service.refusals()) {
    if (r == reason) return n;
  }
  return 0;
}

// Peers past Hello with no StreamStart are capped: the oldest are shed (reset at once), the
// newest stay, and a stream is still admitted.
TEST(ReceiverServiceLimits, ConnectionsWaitingForStreamStartAreCappedOldestFirst) {
  auto service = ReceiverService::start(waiting_options(3));
  ASSERT_TRUE(service) << service.error().message();
  const int port = (*service)->local_endpoint().port;
  std::vector<std::unique_ptr<testing::RawPeer>> waiting;
  for (int i = 0; i < 8; ++i) {
    waiting.push_back(std::make_unique<testing::RawPeer>(port));
    waiting.back()->handshake();
    // Each passes its handshake before the next: order of arrival is order of age.
    for (int t = 0;
         t < 200 && (*service)->connections_pending() < static_cast<uint32_t>(std::min(i + 1, 3));
         ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (int t = 0; t < 400 && refused_for(**service, "pending_dropped") < 5; ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(refused_for(**service, "pending_dropped"), 5u);
  EXPECT_EQ((*service)->connections_pending(), 3u);
  for (int i = 0; i < 8; ++i) {
    std::byte b;
    timeval tv{0, 200000};
    setsockopt(waiting[i]->fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::recv(waiting[i]->fd(), &b, 1, 0);
    const bool closed = n == 0 || (n < 0 && errno == ECONNRESET);
    EXPECT_EQ(closed, i < 5) << "peer " << i
                             << (i < 5 ? " (among the oldest) was kept" : " was shed");
  }
  // One of those still waiting starts a stream.
  waiting[7]->start(testing::small_format());
  for (int t = 0; t < 200 && (*service)->reports().empty(); ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ((*service)->reports().size(), 1u);
  EXPECT_EQ((*service)->connections_pending(), 2u);
  (*service)->stop();
}

// The connection caps fit what the descriptor limit leaves beside the reserve for the
// process and its streams, never below 4 each.
TEST(ReceiverServiceLimits, CapsFitTheDescriptorLimit) {
  rlimit was{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &was), 0);
  rlimit low = was;
  low.rlim_cur = 64 + 16 + 40;  // the reserve for the process and one stream, and 40 more
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  auto service = ReceiverService::start(waiting_options(64));
  setrlimit(RLIMIT_NOFILE, &was);
  ASSERT_TRUE(service) << service.error().message();
  const auto limits = (*service)->limits();
  EXPECT_EQ(limits.descriptor_limit, 120u);
  EXPECT_EQ(limits.reserved, 80u);
  EXPECT_EQ(limits.max_handshakes, 20u);  // shared as asked: 64 and 64 of 40
  EXPECT_EQ(limits.max_pending, 20u);
  (*service)->stop();

  low.rlim_cur = 20;  // below the reserve: the floor
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  auto starved = ReceiverService::start(waiting_options(64));
  setrlimit(RLIMIT_NOFILE, &was);
  ASSERT_TRUE(starved) << starved.error().message();
  EXPECT_EQ((*starved)->limits().max_handshakes, 4u);
  EXPECT_EQ((*starved)->limits().max_pending, 4u);
  (*starved)->stop();
}

}  // namespace
}  // namespace rdmavideo
