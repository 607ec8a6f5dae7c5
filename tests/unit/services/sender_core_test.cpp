// SPDX-License-Identifier: Apache-2.0
// The sender core (services/sender/sender_core.cpp) driven through an in-memory channel that
// plays the receiver: the handshake, StreamStart and RingInfo, credits, keepalives and the
// silence watchdog, frames in flight and their holds, the receiver's last words after a
// failed send, and the close. No sockets, no devices; the timeout tests use short timeouts.
#include <gtest/gtest.h>

#include "fake_sender_channel.hpp"
#include "sender/sender_core.hpp"

namespace rdmavideo::sender {
namespace {

using testing::FakeChannel;

using namespace std::chrono_literals;

proto::StreamStart format() {
  auto f = proto::make_stream_start(PixelFormat::uyvy, 64, 36, {30, 1});
  f->name = "cam";
  return *f;
}

template <typename T>
size_t count_sent(const FakeChannel::Shared& s) {
  return std::count_if(s.sent.begin(), s.sent.end(),
                       [](const proto::Message& m) { return std::holds_alternative<T>(m); });
}

class SenderCoreTest : public ::testing::Test {
 protected:
  SenderCoreTest() {
    options_.timeouts.connect = 500ms;
    options_.timeouts.keepalive = 100ms;
    options_.timeouts.peer = 400ms;
  }
  std::unique_ptr<SenderCore> connected() {
    auto core = std::make_unique<SenderCore>(std::make_unique<FakeChannel>(shared_), options_);
    auto ok = core->handshake();
    EXPECT_TRUE(ok) << ok.error().message();
    return core;
  }
  std::shared_ptr<FakeChannel::Shared> shared_ = std::make_shared<FakeChannel::Shared>();
  ConnectOptions options_;
  std::vector<std::byte> frame_ = std::vector<std::byte>(format().layout.frame_bytes);
};

TEST_F(SenderCoreTest, StreamFromHelloToEndOfStream) {
  auto core = connected();
  const auto ring = core->start_stream(format());
  ASSERT_TRUE(ring) << ring.error().message();
  EXPECT_EQ(ring->slot_count, 4u);
  const auto start = std::get<proto::StreamStart>(shared_->sent.at(1));
  EXPECT_EQ(start.stream_id, 1u);
  EXPECT_EQ(start.ring_epoch, 1u);
  for (uint64_t i = 0; i < 3; ++i) {
    auto credit = core->acquire(0ms);
    ASSERT_TRUE(credit && *credit);
    proto::FrameWritten info;
    info.sequence = i;
    ASSERT_TRUE(core->send_frame(**credit, frame_, info, nullptr));
  }
  const auto frames = count_sent<proto::FrameWritten>(*shared_);
  EXPECT_EQ(frames, 3u);
  const auto third = std::get<proto::FrameWritten>(shared_->sent.back());
  EXPECT_EQ(third.slot, 2u);
  EXPECT_EQ(third.bytes, frame_.size());
  ASSERT_TRUE(core->end_stream({3, 0}));
  EXPECT_TRUE(std::holds_alternative<proto::EndOfStream>(shared_->sent.back()));
  EXPECT_EQ(shared_->linger, options_.timeouts.peer) << "closed without waiting for the receiver";
}

// A hold stays until the channel says the frame is read; retire_oldest() waits for it, and a
// frame never read fails the connection after Timeouts.peer, naming the frame.
TEST_F(SenderCoreTest, HoldsGoWhenTheFrameIsReadAndAStuckFrameFails) {
  shared_->complete_at_once = false;
  auto core = connected();
  ASSERT_TRUE(core->start_stream(format()));
  auto hold = std::make_shared<int>(7);
  std::weak_ptr<int> watch = hold;
  proto::FrameWritten info;
  info.sequence = 41;
  ASSERT_TRUE(core->send_frame(**core->acquire(0ms), frame_, info, std::move(hold)));
  core->retire();
  EXPECT_FALSE(watch.expired()) << "let go while the frame is still read";
  EXPECT_EQ(core->in_flight(), 1u);
  shared_->done.insert(1);
  core->retire();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(core->in_flight(), 0u);

  info.sequence = 42;
  ASSERT_TRUE(core->send_frame(**core->acquire(0ms), frame_, info, std::make_shared<int>(8)));
  shared_->chatty = true;  // the receiver is alive: only the frame is stuck
  auto stuck = core->retire_oldest();
  ASSERT_FALSE(stuck);
  EXPECT_EQ(stuck.error().code(), ErrorCode::timeout);
  EXPECT_NE(stuck.error().message().find("frame 42 not complete after 400 ms"), std::string::npos)
      << stuck.error().message();
}

// Quiet for a keepalive interval: a Keepalive goes out (before the first StreamStart too: a
// paused rdmasink). Silent for the peer timeout: the receiver is dead.
TEST_F(SenderCoreTest, KeepalivesWhenQuietAndTheWatchdogWhenSilent) {
  auto core = connected();
  std::this_thread::sleep_for(150ms);
  ASSERT_TRUE(core->keep_alive());
  EXPECT_EQ(count_sent<proto::Keepalive>(*shared_), 1u);
  std::this_thread::sleep_for(300ms);
  auto dead = core->keep_alive();
  ASSERT_FALSE(dead);
  EXPECT_EQ(dead.error().code(), ErrorCode::timeout);
  EXPECT_NE(dead.error().message().find("receiver silent for 400 ms"), std::string::npos);
  EXPECT_EQ(shared_->linger, 0ms) << "a dead receiver is closed at once";
  EXPECT_FALSE(shared_->closed_with) << "a dead receiver is told nothing";
}

// A send that finds the connection closed reports the receiver's last words.
TEST_F(SenderCoreTest, TheReceiversLastWordsExplainAFailedSend) {
  auto core = connected();
  ASSERT_TRUE(core->start_stream(format()));
  shared_->inbound.push_back(proto::ErrorMessage{ErrorCode::resource, "disk full"});
  shared_->fail_sends = Error(ErrorCode::peer_closed, "receiver closed the connection");
  auto sent = core->send_frame(**core->acquire(0ms), frame_, {}, nullptr);
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().code(), ErrorCode::resource);
  EXPECT_NE(sent.error().message().find("receiver reported: disk full"), std::string::npos)
      << sent.error().message();
}

// A protocol breach by the receiver is told to it before closing; credits of an old ring are
// ignored.
TEST_F(SenderCoreTest, OldCreditsAreIgnoredAndABreachIsTold) {
  auto core = connected();
  ASSERT_TRUE(core->start_stream(format()));
  ASSERT_TRUE(core->start_stream(format()));  // ring 2
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(core->acquire(0ms).value());
  shared_->inbound.push_back(proto::CreditReturn{1, {0, 1}});  // ring 1's: void
  auto none = core->acquire(0ms);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  shared_->inbound.push_back(proto::RingInfo{1, 7, 4, 4608, 8192, 0, 0});
  auto breach = core->acquire(0ms);
  ASSERT_FALSE(breach);
  EXPECT_NE(breach.error().message().find(
                "RingInfo.ring_epoch 7 does not answer StreamStart.ring_epoch 2"),
            std::string::npos);
  ASSERT_TRUE(shared_->closed_with);
  EXPECT_TRUE(std::holds_alternative<proto::ErrorMessage>(*shared_->closed_with));
}

// A receiver that ends the stream and closes: the core says so, and a closed connection is
// no error after the receiver's EndOfStream.
TEST_F(SenderCoreTest, TheReceiverEndingTheStreamIsNoFailure) {
  auto core = connected();
  ASSERT_TRUE(core->start_stream(format()));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(core->acquire(0ms).value());
  shared_->inbound.push_back(proto::EndOfStream{10, 0});
  shared_->receiver_closed = true;
  auto credit = core->acquire(50ms);
  ASSERT_TRUE(credit) << credit.error().message();
  EXPECT_FALSE(*credit);
  EXPECT_TRUE(core->receiver_ended());
  EXPECT_TRUE(core->keep_alive());
}

// The handshake's refusal is the receiver's own words, and no frame is sent to a receiver
// that holds a key this sender lacks.
TEST_F(SenderCoreTest, ARefusalAtHelloIsReportedInTheReceiversWords) {
  shared_->answer = false;
  shared_->inbound.push_back(proto::ErrorMessage{ErrorCode::resource, "receiver busy: 1 stream"});
  SenderCore core(std::make_unique<FakeChannel>(shared_), options_);
  auto refused = core.handshake();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::resource);
  EXPECT_NE(refused.error().message().find("receiver refused: receiver busy: 1 stream"),
            std::string::npos);

  auto keyed = std::make_shared<FakeChannel::Shared>();
  keyed->answer = false;
  keyed->inbound.push_back(proto::HelloAck{proto::kVersion, proto::kCapAuth, 1 << 20, 8, "fake"});
  SenderCore keyless(std::make_unique<FakeChannel>(keyed), options_);
  auto no_key = keyless.handshake();
  ASSERT_FALSE(no_key);
  EXPECT_EQ(no_key.error().code(), ErrorCode::auth_failed);
}

}  // namespace
}  // namespace rdmavideo::sender
