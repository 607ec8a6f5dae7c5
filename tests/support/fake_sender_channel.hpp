// SPDX-License-Identifier: Apache-2.0
// Test support: a SenderChannel made of queues that plays the receiver, for the sender core
// and session tests (no sockets, no devices).
#pragma once

#include <atomic>
#include <deque>
#include <set>
#include <thread>

#include "channel/sender_channel.hpp"

namespace rdmavideo::testing {

using namespace std::chrono_literals;
using sender::RemoteSlot;
using sender::SenderChannel;

// A receiver made of queues. It answers Hello with HelloAck and StreamStart with RingInfo
// and every slot as credits, unless the test says otherwise; frames complete only when the
// test says so (verbs-like), or at once.
class FakeChannel final : public SenderChannel {
 public:
  struct Shared {
    std::vector<proto::Message> sent;
    std::deque<proto::Message> inbound;
    std::set<uint64_t> done;       // tickets whose frames are read
    bool complete_at_once = true;  // every ticket done when written (TCP)
    bool answer = true;            // answer Hello and StreamStart
    uint32_t slots = 4;
    std::optional<Error> fail_sends;  // every send and frame fails so
    bool receiver_closed = false;     // receive() says peer_closed once the inbound is empty
    std::atomic<bool> chatty{false};  // a receiver alive and well: a Keepalive at every wait
    bool returns_credits = false;     // each slot's credit comes back once its frame is written
    std::chrono::milliseconds credit_delay{0};  // ... this long after the frame's write
    std::deque<std::pair<std::chrono::steady_clock::time_point, proto::Message>> later;
    std::optional<proto::Message> closed_with;
    std::chrono::milliseconds linger{-1};  // close()'s
    uint64_t frames = 0;
    uint16_t version = 0;                    // negotiated()'s
    size_t max_control_bytes = 4096;         // as one verbs control buffer
    uint16_t ack_version = proto::kVersion;  // the HelloAck's version
  };
  explicit FakeChannel(std::shared_ptr<Shared> s) : s_(std::move(s)) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return peer_; }
  Result<void> send(const proto::Message& m) override {
    if (s_->fail_sends) return Unexpected(*s_->fail_sends);
    s_->sent.push_back(m);
    if (!s_->answer) return {};
    if (std::holds_alternative<proto::Hello>(m)) {
      s_->inbound.push_back(
          proto::HelloAck{s_->ack_version, proto::kCapChecksum, 1 << 20, s_->slots, "fake"});
    }
    if (const auto* start = std::get_if<proto::StreamStart>(&m)) {
      s_->inbound.push_back(proto::RingInfo{start->stream_id, start->ring_epoch, s_->slots,
                                            start->layout.frame_bytes, 8192, 0, 0});
      proto::CreditReturn credits{start->ring_epoch, {}};
      for (uint32_t i = 0; i < s_->slots; ++i) credits.slots.push_back(i);
      s_->inbound.push_back(credits);
    }
    return {};
  }
  Result<uint64_t> send_frame(std::span<const std::byte>, const proto::FrameWritten& m,
                              RemoteSlot) override {
    if (s_->fail_sends) return Unexpected(*s_->fail_sends);
    s_->sent.push_back(m);
    if (s_->returns_credits) {
      s_->later.emplace_back(std::chrono::steady_clock::now() + s_->credit_delay,
                             proto::CreditReturn{m.ring_epoch, {m.slot}});
    }
    const uint64_t ticket = ++s_->frames;
    if (s_->complete_at_once) s_->done.insert(ticket);
    return ticket;
  }
  bool done(uint64_t ticket) override { return s_->done.count(ticket) > 0; }
  Result<std::optional<proto::Message>> receive(std::chrono::milliseconds wait) override {
    while (!s_->later.empty() && s_->later.front().first <= std::chrono::steady_clock::now()) {
      s_->inbound.push_back(std::move(s_->later.front().second));
      s_->later.pop_front();
    }
    if (s_->inbound.empty()) {
      if (s_->receiver_closed)
        return make_error(ErrorCode::peer_closed, "receiver closed the connection");
      std::this_thread::sleep_for(std::min(wait, 5ms));
      if (s_->chatty && wait.count() > 0) return std::optional<proto::Message>(proto::Keepalive{1});
      return std::optional<proto::Message>{};
    }
    auto m = std::move(s_->inbound.front());
    s_->inbound.pop_front();
    return std::optional<proto::Message>(std::move(m));
  }
  void protect(std::shared_ptr<auth::ControlMac>) override {}
  void negotiated(uint16_t version) override { s_->version = version; }
  size_t max_control_bytes() const override { return s_->max_control_bytes; }
  void wake() override {}
  Result<void> register_memory(std::span<const std::byte>, std::shared_ptr<const void>) override {
    return {};
  }
  bool registered(std::span<const std::byte>) const override { return true; }
  void forget_memory(std::span<const std::byte>) override {}
  void close(const proto::Message* last, std::chrono::milliseconds linger) override {
    if (s_->linger.count() >= 0) return;  // closed already
    if (last) s_->closed_with = *last;
    s_->linger = linger;
  }

 private:
  std::shared_ptr<Shared> s_;
  std::string peer_ = "10.0.0.9:5000";
};

}  // namespace rdmavideo::testing
