// SPDX-License-Identifier: Apache-2.0
// The receiver core (receiver/connection.cpp) driven through an in-memory channel: the
// handshake, admission, rings, credits, the checks that need state, limits, failure and
// close, each asserting what the peer was told and what the service heard. No sockets, no
// devices; the only clock involved is in the timeout tests, which use short timeouts.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "receiver/connection.hpp"

namespace rdmavideo::receiver {
namespace {

using namespace std::chrono_literals;

// A peer made of queues: the test puts in what the sender says and reads what the receiver
// said back.
class FakeChannel final : public ReceiverChannel {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<proto::Message> inbound;
    std::deque<std::vector<std::byte>> payloads;  // one per FrameWritten, in order
    std::vector<proto::Message> sent;
    std::vector<size_t> exposed_bytes;  // ring sizes exposed
    int wakes = 0;
    bool closed = false;
    std::optional<proto::Message> last;  // close()'s last message
    bool any_thread = true;
    std::vector<Clock::time_point> message_deadlines;  // complete_by of every receive()
    std::vector<Clock::time_point> payload_deadlines;  // of every receive_payload()
    std::shared_ptr<auth::ControlMac> mac;             // protect()'s
    size_t sent_before_protect = 0;                    // messages sent when protect() was called
    uint16_t version = 0;                              // negotiated()'s
  };

  explicit FakeChannel(std::shared_ptr<Shared> shared) : s_(std::move(shared)) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return peer_; }
  Result<void> establish(Clock::time_point) override { return {}; }

  Result<std::optional<proto::Message>> receive(std::chrono::milliseconds wait,
                                                Clock::time_point complete_by) override {
    std::unique_lock lock(s_->mu);
    s_->message_deadlines.push_back(complete_by);
    s_->cv.wait_for(lock, wait, [&] { return !s_->inbound.empty() || interrupted_; });
    if (interrupted_) return make_error(ErrorCode::peer_closed, "interrupted");
    if (s_->inbound.empty()) return std::optional<proto::Message>{};
    auto m = std::move(s_->inbound.front());
    s_->inbound.pop_front();
    return std::optional<proto::Message>(std::move(m));
  }

  Result<void> receive_payload(std::span<std::byte> slot, Clock::time_point complete_by,
                               const std::function<void()>&) override {
    std::lock_guard lock(s_->mu);
    s_->payload_deadlines.push_back(complete_by);
    if (s_->payloads.empty()) {
      return make_error(ErrorCode::peer_closed,
                        "peer closed the connection in the middle of "
                        "FrameWritten payload");
    }
    auto payload = std::move(s_->payloads.front());
    s_->payloads.pop_front();
    std::copy(payload.begin(), payload.begin() + std::min(payload.size(), slot.size()),
              slot.begin());
    return {};
  }

  Result<void> send(const proto::Message& message) override {
    std::lock_guard lock(s_->mu);
    s_->sent.push_back(message);
    return {};
  }
  void protect(std::shared_ptr<auth::ControlMac> mac) override {
    std::lock_guard lock(s_->mu);
    s_->mac = std::move(mac);
    s_->sent_before_protect = s_->sent.size();
  }
  void negotiated(uint16_t version) override {
    std::lock_guard lock(s_->mu);
    s_->version = version;
  }
  bool sends_from_any_thread() const override { return s_->any_thread; }
  void wake() override {
    std::lock_guard lock(s_->mu);
    ++s_->wakes;
    s_->cv.notify_all();
  }
  void interrupt() override {
    std::lock_guard lock(s_->mu);
    interrupted_ = true;
    s_->cv.notify_all();
  }
  Result<RingAccess> expose_ring(const std::shared_ptr<memory::Region>& memory) override {
    std::lock_guard lock(s_->mu);
    s_->exposed_bytes.push_back(memory->size());
    return RingAccess{0x1000, 0x42, nullptr};
  }
  void close(const proto::Message* last) override {
    std::lock_guard lock(s_->mu);
    if (s_->closed) return;
    s_->closed = true;
    if (last) s_->last = *last;
  }

 private:
  std::shared_ptr<Shared> s_;
  std::string peer_ = "10.0.0.7:5000";
  bool interrupted_ = false;  // under s_->mu
};

class CollectingSink final : public StreamSink {
 public:
  void frame(FrameLease frame) override {
    std::lock_guard lock(mu);
    frames.push_back(std::move(frame));
  }
  std::optional<Error> failure() const override {
    std::lock_guard lock(mu);
    return fail_with;
  }
  Result<void> finish(const StreamEnd&) override {
    std::lock_guard lock(mu);
    finished = true;
    return {};
  }
  mutable std::mutex mu;
  std::vector<FrameLease> frames;
  std::optional<Error> fail_with;
  bool finished = false;
};

class FakeHost final : public ConnectionHost {
 public:
  Result<Admitted> admit(StreamInfo info) override {
    ++admissions;
    admitted_info = info;
    if (refuse) return Unexpected(*refuse);
    record = std::make_shared<StreamRecord>();
    record->report.info = info;
    return Admitted{&sink, record};
  }
  void release(const std::shared_ptr<StreamRecord>& r, StreamEnd e) override {
    (void)sink.finish(e);
    released = r;
    end = std::move(e);
  }
  void passed_handshake(const ReceiverConnection& connection) override {
    ++handshakes_passed;
    stage_when_passed = connection.stage();
  }

  CollectingSink sink;
  std::optional<Error> refuse;
  int admissions = 0;
  int handshakes_passed = 0;
  std::optional<ReceiverConnection::Stage> stage_when_passed;
  std::optional<StreamInfo> admitted_info;
  std::shared_ptr<StreamRecord> record;
  std::shared_ptr<StreamRecord> released;
  std::optional<StreamEnd> end;
};

proto::Hello hello() {
  proto::Hello h;
  h.max_frame_bytes = 1 << 20;
  h.software = "test sender";
  return h;
}

proto::StreamStart format(uint32_t ring_epoch = 1, uint32_t stream_id = 1) {
  auto f = proto::make_stream_start(PixelFormat::uyvy, 64, 36, {30, 1});
  f->stream_id = stream_id;
  f->ring_epoch = ring_epoch;
  f->name = "cam1";
  return *f;
}

proto::FrameWritten frame(uint32_t slot, uint64_t sequence, uint32_t epoch = 1) {
  proto::FrameWritten m;
  m.ring_epoch = epoch;
  m.slot = slot;
  m.sequence = sequence;
  m.bytes = format().layout.frame_bytes;
  return m;
}

// Waits (up to 2 s) until `done()` holds; false when it never did.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

template <typename T>
std::vector<T> sent_of(const FakeChannel::Shared& s) {
  std::vector<T> out;
  for (const auto& m : s.sent) {
    if (const auto* t = std::get_if<T>(&m)) out.push_back(*t);
  }
  return out;
}

class ReceiverCore : public ::testing::Test {
 protected:
  ReceiverCore() {
    config_.ring_size = 8;
    config_.max_frame_bytes = 1 << 20;
    config_.timeouts.connect = 2000ms;
    config_.timeouts.keepalive = 1000ms;
    config_.timeouts.peer = 2000ms;
  }

  void say(proto::Message m) {
    std::lock_guard lock(shared_->mu);
    shared_->inbound.push_back(std::move(m));
    shared_->cv.notify_all();
  }
  void say_frame(uint32_t slot, uint64_t sequence, uint32_t epoch = 1, std::byte fill = {}) {
    std::lock_guard lock(shared_->mu);
    shared_->inbound.push_back(frame(slot, sequence, epoch));
    shared_->payloads.emplace_back(format().layout.frame_bytes, fill);
    shared_->cv.notify_all();
  }
  std::unique_ptr<ReceiverConnection> make() {
    return std::make_unique<ReceiverConnection>(std::make_unique<FakeChannel>(shared_), config_,
                                                host_);
  }
  std::optional<proto::ErrorMessage> error_told() {
    std::lock_guard lock(shared_->mu);
    if (!shared_->last) return std::nullopt;
    if (auto* e = std::get_if<proto::ErrorMessage>(&*shared_->last)) return *e;
    return std::nullopt;
  }

  std::shared_ptr<FakeChannel::Shared> shared_ = std::make_shared<FakeChannel::Shared>();
  ConnectionConfig config_;
  FakeHost host_;
};

TEST_F(ReceiverCore, StreamFromHelloToEndOfStream) {
  say(hello());
  say(format());
  say_frame(0, 0, 1, std::byte{0xab});
  say_frame(1, 1);
  say(proto::EndOfStream{2, 0});
  ASSERT_TRUE(make()->run());

  const auto acks = sent_of<proto::HelloAck>(*shared_);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].version, proto::kVersion);
  EXPECT_EQ(acks[0].credits, 8u);
  const auto rings = sent_of<proto::RingInfo>(*shared_);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0].stream_id, 1u);
  EXPECT_EQ(rings[0].ring_epoch, 1u);
  EXPECT_EQ(rings[0].slot_count, 8u);
  EXPECT_EQ(rings[0].slot_bytes, format().layout.frame_bytes);
  EXPECT_EQ(rings[0].slot_stride, 8192u);  // 4608 rounded up to a page
  EXPECT_EQ(rings[0].rkey, 0x42u);
  const auto credits = sent_of<proto::CreditReturn>(*shared_);
  ASSERT_GE(credits.size(), 1u);
  EXPECT_EQ(credits[0].slots, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));

  ASSERT_EQ(host_.admissions, 1);
  EXPECT_EQ(host_.admitted_info->name, "cam1");
  EXPECT_EQ(host_.admitted_info->peer, "10.0.0.7:5000");
  ASSERT_EQ(host_.sink.frames.size(), 2u);
  const FrameLease& first = host_.sink.frames[0];
  EXPECT_EQ(first.info().slot, 0u);
  EXPECT_EQ(first.data()[0], std::byte{0xab});
  EXPECT_EQ(first.format().width, 64u);
  // Every frame of one ring epoch shares one format object.
  EXPECT_EQ(first.shared_format(), host_.sink.frames[1].shared_format());
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::sender_ended);
  EXPECT_EQ(host_.end->sender_frames, 2u);
  EXPECT_EQ(host_.record->report.stats.frames, 2u);
  EXPECT_TRUE(shared_->closed);
  EXPECT_FALSE(shared_->last);  // nothing more to say after the sender's EndOfStream
}

TEST_F(ReceiverCore, FirstMessageMustBeHello) {
  say(format());
  auto ok = make()->run();
  ASSERT_FALSE(ok);
  EXPECT_NE(ok.error().message().find("expected Hello, got StreamStart"), std::string::npos);
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->text, "expected Hello, got StreamStart");
  EXPECT_EQ(host_.admissions, 0);
}

TEST_F(ReceiverCore, RefusesHelloWhoseVersionsDoNotOverlap) {
  proto::Hello old = hello();
  old.min_version = old.max_version = 1;
  say(old);
  ASSERT_FALSE(make()->run());
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, ErrorCode::unsupported);
  EXPECT_EQ(told->text, "Hello versions 1..1 do not overlap this receiver's 2..3");
  EXPECT_TRUE(sent_of<proto::HelloAck>(*shared_).empty());
}

TEST_F(ReceiverCore, BusyRefusalAllocatesAndRevealsNothing) {
  host_.refuse = Error(ErrorCode::resource, "receiver busy: it serves at most 1 stream at once");
  say(hello());
  say(format());
  auto ok = make()->run();
  ASSERT_FALSE(ok);
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, ErrorCode::resource);
  EXPECT_NE(told->text.find("receiver busy"), std::string::npos);
  EXPECT_TRUE(sent_of<proto::RingInfo>(*shared_).empty());
  EXPECT_TRUE(shared_->exposed_bytes.empty());  // no ring was registered for the peer
}

TEST_F(ReceiverCore, RefusesAudioBeforeAdmission) {
  say(hello());
  auto audio = format();
  audio.media = proto::MediaKind::audio;
  say(audio);
  ASSERT_FALSE(make()->run());
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, ErrorCode::unsupported);
  EXPECT_NE(told->text.find("StreamStart.media 2 (audio)"), std::string::npos) << told->text;
  EXPECT_EQ(host_.admissions, 0);  // not a stream
}

TEST_F(ReceiverCore, RefusesASecondStreamOnOneConnection) {
  say(hello());
  say(format(1, 1));
  say(format(2, 7));
  ASSERT_TRUE(make()->run());  // the admitted stream's end goes to the host
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::failed);
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_NE(told->text.find("StreamStart.stream_id 7: this connection carries stream 1"),
            std::string::npos)
      << told->text;
}

TEST_F(ReceiverCore, RingEpochMustIncrease) {
  say(hello());
  say(format(3));
  say(format(3));
  ASSERT_TRUE(make()->run());
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->text, "StreamStart.ring_epoch 3 not after the current 3");
}

TEST_F(ReceiverCore, FormatChangeOpensANewRingAndOldLeasesStayValid) {
  say(hello());
  say(format(1));
  say_frame(0, 0, 1, std::byte{0x11});
  auto bigger = proto::make_stream_start(PixelFormat::rgba, 64, 36, {30, 1});
  bigger->stream_id = 1;
  bigger->ring_epoch = 2;
  say(*bigger);
  say(proto::EndOfStream{1, 0});
  ASSERT_TRUE(make()->run());
  const auto rings = sent_of<proto::RingInfo>(*shared_);
  ASSERT_EQ(rings.size(), 2u);
  EXPECT_EQ(rings[1].ring_epoch, 2u);
  EXPECT_EQ(rings[1].slot_bytes, bigger->layout.frame_bytes);
  ASSERT_EQ(host_.sink.frames.size(), 1u);
  EXPECT_EQ(host_.sink.frames[0].data()[0], std::byte{0x11});  // the old ring lives on
  EXPECT_EQ(host_.record->report.format.pixel_format, PixelFormat::rgba);
}

TEST_F(ReceiverCore, FrameInASlotOutOfRangeFailsTheStream) {
  say(hello());
  say(format());
  say(frame(12, 0));
  ASSERT_TRUE(make()->run());
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::failed);
  ASSERT_TRUE(host_.end->error);
  EXPECT_NE(
      host_.end->error->message().find(
          "recv 10.0.0.7:5000 \"cam1\": FrameWritten.slot 12 out of range (ring has 8 slots); "
          "closing"),
      std::string::npos)
      << host_.end->error->message();
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->text, "FrameWritten.slot 12 out of range (ring has 8 slots)");
}

TEST_F(ReceiverCore, FrameInASlotNotGrantedFailsTheStream) {
  say(hello());
  say(format());
  say_frame(3, 0);
  say_frame(3, 1);  // held by the sink: never granted again
  ASSERT_TRUE(make()->run());
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->text, "FrameWritten.slot 3 not granted (it is filled)");
}

TEST_F(ReceiverCore, FrameOfAnOldRingIsRefused) {
  say(hello());
  say(format(1));
  say(format(2));
  say_frame(0, 0, 1);
  ASSERT_TRUE(make()->run());
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->text, "FrameWritten.ring_epoch 1 is not the current ring (2)");
}

TEST_F(ReceiverCore, ReleasedSlotsGoBackAsCredits) {
  say(hello());
  say(format());
  for (uint32_t slot = 0; slot < 4; ++slot) say_frame(slot, slot);
  say(proto::EndOfStream{4, 0});
  // The sink keeps its leases until the test drops them, after the connection ended: no
  // credit can come of that.
  ASSERT_TRUE(make()->run());
  ASSERT_EQ(host_.sink.frames.size(), 4u);
  const size_t before = sent_of<proto::CreditReturn>(*shared_).size();
  host_.sink.frames.clear();
  EXPECT_EQ(sent_of<proto::CreditReturn>(*shared_).size(), before);
}

TEST_F(ReceiverCore, ReleasingSendsCreditsFromTheConsumersThread) {
  say(hello());
  say(format());
  for (uint32_t slot = 0; slot < 6; ++slot) say_frame(slot, slot);
  auto connection = make();
  std::thread runner([&] { EXPECT_TRUE(connection->run()); });
  // Wait for the six frames, then drop them here, on this (the consumer's) thread.
  eventually([&] {
    std::lock_guard lock(host_.sink.mu);
    return host_.sink.frames.size() == 6;
  });
  {
    std::lock_guard lock(host_.sink.mu);
    ASSERT_EQ(host_.sink.frames.size(), 6u);
    host_.sink.frames.clear();
  }
  std::vector<uint32_t> returned;
  for (const auto& c : sent_of<proto::CreditReturn>(*shared_)) {
    returned.insert(returned.end(), c.slots.begin(), c.slots.end());
  }
  // The first grant (8 slots), then the released ones in release order (docs/protocol.md
  // §6.4): slot 0 at once (the sender was down to 2 credits), then pairs; slot 5 waits for
  // its pair.
  EXPECT_EQ(returned, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4}));
  say(proto::EndOfStream{6, 0});
  runner.join();
}

TEST_F(ReceiverCore, CreditsWaitForTheConnectionThreadWhereSendsCannotCross) {
  shared_->any_thread = false;  // verbs
  say(hello());
  say(format());
  say_frame(0, 0);
  say_frame(1, 1);
  auto connection = make();
  std::thread runner([&] { EXPECT_TRUE(connection->run()); });
  eventually([&] {
    std::lock_guard lock(host_.sink.mu);
    return host_.sink.frames.size() == 2;
  });
  int wakes_before;
  {
    std::lock_guard lock(shared_->mu);
    wakes_before = shared_->wakes;
  }
  {
    std::lock_guard lock(host_.sink.mu);
    host_.sink.frames.clear();  // batch of 2 due: wakes the connection thread
  }
  std::vector<uint32_t> returned;
  eventually([&] {
    std::lock_guard lock(shared_->mu);
    returned.clear();
    for (const auto& m : shared_->sent) {
      if (auto* c = std::get_if<proto::CreditReturn>(&m)) {
        returned.insert(returned.end(), c->slots.begin(), c->slots.end());
      }
    }
    return returned.size() >= 10;
  });
  ASSERT_EQ(returned.size(), 10u);
  {
    std::lock_guard lock(shared_->mu);
    EXPECT_GT(shared_->wakes, wakes_before);
  }
  say(proto::EndOfStream{2, 0});
  runner.join();
}

TEST_F(ReceiverCore, FrameLimitTellsTheSenderToStop) {
  config_.frames_per_stream = 2;
  say(hello());
  say(format());
  say_frame(0, 0);
  say_frame(1, 1);
  say_frame(2, 2);  // never read
  ASSERT_TRUE(make()->run());
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::frames_reached);
  ASSERT_TRUE(shared_->last);
  const auto* end = std::get_if<proto::EndOfStream>(&*shared_->last);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->frames, 2u);
  EXPECT_EQ(host_.sink.frames.size(), 2u);
}

TEST_F(ReceiverCore, SinkFailureEndsTheStreamAndTellsTheSender) {
  host_.sink.fail_with =
      Error(ErrorCode::system, "--output cam1.yuv: write: No space left on device");
  say(hello());
  say(format());
  say_frame(0, 0);
  ASSERT_TRUE(make()->run());
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::failed);
  auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_NE(told->text.find("No space left on device"), std::string::npos);
  EXPECT_TRUE(host_.sink.finished);
}

TEST_F(ReceiverCore, StopEndsTheStreamAndTellsTheSender) {
  say(hello());
  say(format());
  say_frame(0, 0);
  auto connection = make();
  std::thread runner([&] { EXPECT_TRUE(connection->run()); });
  eventually([&] { return host_.record != nullptr; });
  std::this_thread::sleep_for(50ms);
  connection->stop();
  runner.join();
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::stopped);
  ASSERT_TRUE(shared_->last);
  const auto* end = std::get_if<proto::EndOfStream>(&*shared_->last);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->frames, 1u);
}

TEST_F(ReceiverCore, SilentSenderTimesOutWithoutAnError) {
  config_.timeouts.keepalive = 50ms;
  config_.timeouts.peer = 300ms;
  say(hello());
  say(format());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(make()->run());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::failed);
  EXPECT_EQ(host_.end->error->code(), ErrorCode::timeout);
  EXPECT_NE(host_.end->error->message().find("peer silent for 300 ms"), std::string::npos);
  EXPECT_FALSE(shared_->last);  // a dead peer is not told
  // It sent keepalives while it waited.
  EXPECT_GE(sent_of<proto::Keepalive>(*shared_).size(), 2u);
}

TEST_F(ReceiverCore, HandshakeHasADeadlineOfItsOwn) {
  config_.timeouts.connect = 300ms;
  auto ok = make()->run();  // nothing ever said
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), ErrorCode::timeout);
  EXPECT_NE(ok.error().message().find("no Hello within 300 ms"), std::string::npos);
}

// Time limits that restart with every byte let a peer trickle; deadlines do not.
TEST_F(ReceiverCore, HandshakeAndPayloadsHaveDeadlinesOfTheirOwn) {
  say(hello());
  say(format());
  say_frame(0, 0);
  say(proto::EndOfStream{1, 0});
  const auto start = Clock::now();
  ASSERT_TRUE(make()->run());
  ASSERT_FALSE(shared_->message_deadlines.empty());
  // The Hello must be whole by the handshake's deadline: the connect timeout from the start.
  const auto hello_allowed = shared_->message_deadlines.front() - start;
  EXPECT_GE(hello_allowed, config_.timeouts.connect);
  EXPECT_LE(hello_allowed, config_.timeouts.connect + 100ms);
  // A payload: the peer timeout plus its size at 1 MB/s (4608 bytes: about 5 ms).
  ASSERT_EQ(shared_->payload_deadlines.size(), 1u);
  const auto allowed = shared_->payload_deadlines[0] - start;
  EXPECT_GE(allowed, config_.timeouts.peer);
  EXPECT_LE(allowed, config_.timeouts.peer + 500ms);
}

TEST_F(ReceiverCore, IdleTimeoutEndsAStreamThatSendsNoFrames) {
  config_.idle_timeout = 300ms;
  config_.timeouts.keepalive = 50ms;
  say(hello());
  say(format());
  say_frame(0, 0);
  auto connection = make();
  std::thread runner([&] { EXPECT_TRUE(connection->run()); });
  // Only keepalives from here on, which a paused sender would send.
  for (int i = 0; i < 10; ++i) {
    say(proto::Keepalive{0});
    std::this_thread::sleep_for(60ms);
  }
  runner.join();
  ASSERT_TRUE(host_.end);
  EXPECT_EQ(host_.end->how, StreamEnd::How::failed);
  EXPECT_EQ(host_.end->error->code(), ErrorCode::timeout);
  const auto errors = sent_of<proto::ErrorMessage>(*shared_);
  ASSERT_EQ(errors.size(), 1u);  // the sender is told why
  EXPECT_EQ(errors[0].text, "no frame for 300 ms (the receiver's idle timeout)");
}

TEST_F(ReceiverCore, SenderErrorIsReportedNotAnswered) {
  say(hello());
  say(format());
  say(proto::ErrorMessage{ErrorCode::protocol, "RingInfo.slot_bytes 1 smaller than a frame"});
  ASSERT_TRUE(make()->run());
  ASSERT_TRUE(host_.end);
  EXPECT_NE(host_.end->error->message().find("sender reported: RingInfo.slot_bytes 1"),
            std::string::npos);
  EXPECT_FALSE(error_told());
}

// Authentication (docs/protocol.md §4.1): the sender proves the key before anything about a
// ring leaves the receiver, and the receiver proves it back.
class AuthenticatedCore : public ReceiverCore {
 protected:
  AuthenticatedCore() { config_.key = key_; }

  // Waits for what the receiver sent so far to include `count` messages of type T.
  template <typename T>
  std::vector<T> await(size_t count) {
    std::vector<T> out;
    eventually([&] {
      std::lock_guard lock(shared_->mu);
      out = sent_of<T>(*shared_);
      return out.size() >= count;
    });
    return out;
  }

  // Runs the connection on a thread, says a Hello offering a key, and returns the
  // receiver's challenge; hello_ and ack_ are the exchange the proofs cover.
  proto::Auth start_keyed() {
    connection_ = make();
    thread_ = std::thread([this] { result_ = connection_->run(); });
    hello_ = hello();
    hello_.flags |= proto::kCapAuth;
    say(hello_);
    const auto challenge = await<proto::Auth>(1).at(0);
    ack_ = await<proto::HelloAck>(1).at(0);
    return challenge;
  }
  void join() { thread_.join(); }

  std::shared_ptr<const auth::SharedKey> key_ =
      std::make_shared<auth::SharedKey>(std::vector<std::byte>(40, std::byte{'k'}));
  std::unique_ptr<ReceiverConnection> connection_;
  std::thread thread_;
  Result<void> result_;
  proto::Hello hello_;
  proto::HelloAck ack_;
};

TEST_F(AuthenticatedCore, ASenderThatProvesTheKeyIsAnsweredWithTheReceiversProof) {
  const auto challenge = start_keyed();
  EXPECT_EQ(challenge.proof, proto::Proof{});  // a challenge carries no proof
  EXPECT_TRUE(ack_.flags & proto::kCapAuth);
  const proto::Nonce mine = *auth::make_nonce();
  say(proto::Auth{mine,
                  *auth::prove(*key_, auth::Role::sender, mine, challenge.nonce, hello_, ack_)});
  const auto answers = await<proto::Auth>(2);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[1].nonce, challenge.nonce);
  EXPECT_TRUE(auth::verify(*key_, auth::Role::receiver, mine, challenge.nonce, hello_, ack_,
                           answers[1].proof)
                  .value_or(false));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(shared_->mu);
    return shared_->mac != nullptr;
  }));
  {
    std::lock_guard lock(shared_->mu);
    // Protected after the proof went out: HelloAck, challenge, proof.
    EXPECT_EQ(shared_->sent_before_protect, 3u);
  }
  say(format());
  say(proto::EndOfStream{0, 0});
  join();
  ASSERT_TRUE(result_) << result_.error().message();
  EXPECT_EQ(host_.admissions, 1);
  EXPECT_EQ(shared_->exposed_bytes.size(), 1u);
}

// Before the proof the HelloAck carries the protocol's limits, not this receiver's (ring 8,
// frames up to 1 MiB here): nothing about it leaves before the key is proved.
TEST_F(AuthenticatedCore, HelloAckBeforeTheProofSaysNothingOfTheReceiver) {
  start_keyed();
  EXPECT_EQ(ack_.credits, proto::kMaxRingSlots);
  EXPECT_EQ(ack_.max_frame_bytes, proto::kMaxFrameBytes);
  EXPECT_EQ(host_.handshakes_passed, 0);  // still in its handshake: not counted as waiting
  connection_->stop();
  join();
}

TEST_F(AuthenticatedCore, ASenderWithoutAKeyIsRefusedAtItsHello) {
  say(hello());  // no kCapAuth
  auto result = make()->run();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::auth_failed);
  const auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, ErrorCode::auth_failed);
  EXPECT_NE(told->text.find("authentication failed"), std::string::npos) << told->text;
  EXPECT_TRUE(sent_of<proto::HelloAck>(*shared_).empty());
  EXPECT_TRUE(shared_->exposed_bytes.empty());
  EXPECT_EQ(host_.admissions, 0);
}

TEST_F(AuthenticatedCore, AWrongProofIsRefusedWithoutSayingWhyAndNoRingIsExposed) {
  const auto challenge = start_keyed();
  const auth::SharedKey wrong(std::vector<std::byte>(40, std::byte{'w'}));
  const proto::Nonce mine = *auth::make_nonce();
  say(proto::Auth{mine,
                  *auth::prove(wrong, auth::Role::sender, mine, challenge.nonce, hello_, ack_)});
  say(format());  // what an impostor would send next
  join();
  ASSERT_FALSE(result_);
  const auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, ErrorCode::auth_failed);
  EXPECT_EQ(told->text, "authentication failed");
  EXPECT_EQ(sent_of<proto::Auth>(*shared_).size(), 1u);  // the challenge only: no proof
  EXPECT_TRUE(sent_of<proto::RingInfo>(*shared_).empty());
  EXPECT_TRUE(shared_->exposed_bytes.empty());
  EXPECT_EQ(host_.admissions, 0);
  EXPECT_EQ(shared_->mac, nullptr);
}

TEST_F(AuthenticatedCore, TheReceiversOwnChallengeReflectedBackIsRefused) {
  say(start_keyed());  // its own nonce, no proof
  join();
  ASSERT_FALSE(result_);
  EXPECT_EQ(result_.error().code(), ErrorCode::auth_failed);
  EXPECT_TRUE(shared_->exposed_bytes.empty());
}

TEST_F(AuthenticatedCore, ASilentProverIsDroppedAtTheHandshakeDeadline) {
  config_.timeouts.connect = 300ms;
  proto::Hello h = hello();
  h.flags |= proto::kCapAuth;
  say(h);
  const auto start = Clock::now();
  auto result = make()->run();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::timeout);
  EXPECT_NE(result.error().message().find("no Auth within"), std::string::npos)
      << result.error().message();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(host_.admissions, 0);
}

// Where a connection is in its life, for the service's caps: in its handshake until Hello,
// then waiting (the host told once, as it passes), then a stream once admitted.
TEST_F(ReceiverCore, StagesGoFromHandshakeToWaitingToStream) {
  auto connection = make();
  EXPECT_EQ(connection->stage(), ReceiverConnection::Stage::handshake);
  Result<void> result;
  std::thread run([&] { result = connection->run(); });
  say(hello());
  ASSERT_TRUE(
      eventually([&] { return connection->stage() == ReceiverConnection::Stage::pending; }));
  EXPECT_EQ(host_.handshakes_passed, 1);
  EXPECT_EQ(host_.stage_when_passed, ReceiverConnection::Stage::pending);
  say(format());
  ASSERT_TRUE(eventually([&] { return connection->stage() == ReceiverConnection::Stage::stream; }));
  say(proto::EndOfStream{0, 0});
  run.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(host_.handshakes_passed, 1);
}

// A connection that waits for its first StreamStart has no deadline: a peer that only keeps
// alive (a paused rdmasink) stays, however long, until it is shed or stopped.
TEST_F(ReceiverCore, AWaitingConnectionThatKeepsAliveHasNoDeadline) {
  config_.timeouts.connect = 300ms;
  config_.timeouts.peer = 600ms;
  auto connection = make();
  Result<void> result;
  std::thread run([&] { result = connection->run(); });
  say(hello());
  for (int i = 0; i < 10; ++i) {  // 2 s: beyond the handshake deadline and the peer timeout
    say(proto::Keepalive{1});
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(connection->stage(), ReceiverConnection::Stage::pending);
  {
    std::lock_guard lock(shared_->mu);
    EXPECT_FALSE(shared_->closed);
  }
  connection->shed();
  run.join();
  EXPECT_TRUE(result);  // shed: no stream, nothing to report
  EXPECT_EQ(host_.admissions, 0);
}

// The front end's check of a StreamStart (an encoder's largest frame rate) runs before the
// ring is reserved and the stream admitted, for a later StreamStart too.
TEST_F(ReceiverCore, AFormatTheSinksCannotTakeIsRefusedBeforeTheRing) {
  config_.budget = std::make_shared<memory::Budget>(1 << 20);
  int checked = 0;
  config_.format_check = [&](const proto::StreamStart& f) -> Result<void> {
    ++checked;
    if (f.frame_rate.num > 1000) {
      return make_error(ErrorCode::unsupported, "StreamStart.frame_rate {} too high",
                        to_string(f.frame_rate));
    }
    return {};
  };
  auto fast = format();
  fast.frame_rate = {1u << 31, 1};
  say(hello());
  say(fast);
  auto refused = make()->run();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::unsupported);
  const auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_NE(told->text.find("StreamStart.frame_rate 2147483648 too high"), std::string::npos)
      << told->text;
  EXPECT_EQ(checked, 1);
  EXPECT_EQ(host_.admissions, 0);
  EXPECT_TRUE(shared_->exposed_bytes.empty());
  EXPECT_EQ(config_.budget->used(), 0u);

  // Admitted with a good format, then a later StreamStart asks for the bad one.
  shared_ = std::make_shared<FakeChannel::Shared>();
  auto fast_later = format(2);
  fast_later.frame_rate = {1u << 31, 1};
  say(hello());
  say(format(1));
  say(fast_later);
  ASSERT_TRUE(make()->run());  // a stream: its failure goes to the host
  EXPECT_EQ(checked, 3);
  EXPECT_EQ(host_.admissions, 1);
  ASSERT_TRUE(host_.end && host_.end->error);
  EXPECT_NE(host_.end->error->message().find("StreamStart.frame_rate 2147483648 too high"),
            std::string::npos);
  EXPECT_EQ(shared_->exposed_bytes.size(), 1u);  // no ring for the refused format
}

// The memory budget: a StreamStart whose ring does not fit is refused before the stream is
// admitted; a format change lets the old ring go first, and while the sink still holds
// frames of it, the old ring still counts.
TEST_F(ReceiverCore, AStreamStartBeyondTheBudgetIsRefusedAndIsNoStream) {
  config_.budget = std::make_shared<memory::Budget>(7 * 8192);  // a slot short of a ring
  say(hello());
  say(format());
  auto result = make()->run();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::resource);
  const auto told = error_told();
  ASSERT_TRUE(told);
  EXPECT_NE(told->text.find("a ring of 8 slots of 8 KiB needs 64 KiB, beyond the receiver's "
                            "memory budget of 56 KiB"),
            std::string::npos)
      << told->text;
  EXPECT_TRUE(shared_->exposed_bytes.empty());
  EXPECT_EQ(host_.admissions, 0);
  EXPECT_EQ(config_.budget->used(), 0u);
}

TEST_F(ReceiverCore, AFormatChangeFreesTheOldRingFirstUnlessTheSinkHoldsIt) {
  config_.budget = std::make_shared<memory::Budget>(8 * 8192);  // exactly one ring
  auto connection = make();
  Result<void> result;
  std::thread run([&] { result = connection->run(); });
  say(hello());
  say(format(1));
  say(format(2));  // no frame held: the old ring goes, the new one fits
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(shared_->mu);
    return sent_of<proto::RingInfo>(*shared_).size() == 2;
  }));
  EXPECT_EQ(config_.budget->used(), 8u * 8192);
  say_frame(0, 0, 2);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(host_.sink.mu);
    return host_.sink.frames.size() == 1;
  }));
  say(format(3));  // the sink holds a frame of ring 2: no room for ring 3
  run.join();
  ASSERT_FALSE(result.has_value() && host_.end && host_.end->ok());
  ASSERT_TRUE(host_.end);
  ASSERT_TRUE(host_.end->error);
  EXPECT_NE(host_.end->error->message().find("64 KiB in use"), std::string::npos)
      << host_.end->error->message();
  EXPECT_EQ(shared_->exposed_bytes.size(), 2u);
  {
    std::lock_guard lock(host_.sink.mu);
    host_.sink.frames.clear();  // the last lease goes: so does ring 2's reservation
  }
  EXPECT_EQ(config_.budget->used(), 0u);
}

}  // namespace
}  // namespace rdmavideo::receiver
