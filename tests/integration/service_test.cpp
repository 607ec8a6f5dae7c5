// SPDX-License-Identifier: Apache-2.0
// ReceiverService and SenderSession in one process over 127.0.0.1 TCP, for what the CLI
// cannot show quickly: a receiver that serves stream after stream keeps the reports of the
// last few that ended and folds older ones into one total, so its memory stays bounded while
// its totals stay whole.
#include <gtest/gtest.h>

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
    auto sent = (*session)->submit(*buffer, {i, static_cast<int64_t>(i), std::chrono::steady_clock::now()});
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
  (*service)->stop();
}

}  // namespace
}  // namespace rdmavideo
