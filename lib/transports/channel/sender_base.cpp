// SPDX-License-Identifier: Apache-2.0
#include "channel/sender_connection.hpp"

#include "rdmavideo/text.hpp"

#include <algorithm>

namespace rdmavideo::sender {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Result<proto::RingInfo> SenderBase::start_stream(const proto::StreamStart& format) {
  proto::StreamStart m = format;
  m.stream_id = kStreamId;
  m.ring_epoch = ++ring_epoch_;
  if (!m.name.empty()) who_ = fmt::format("send {} \"{}\"", peer(), printable(m.name));
  ring_.reset();
  pool_.reset();
  if (auto ok = send_message(m); !ok) return fail(ok.error());
  // Wait for the RingInfo that answers this StreamStart and its first credits (so a live
  // sender does not drop its first frame); credits of an older ring that cross it on the
  // wire are dropped by handle().
  const auto deadline = Clock::now() + timeouts_.connect;
  while (!ring_ || pool_->available() == 0) {
    if (receiver_ended_) return make_error(ErrorCode::peer_closed, "{}: receiver ended the stream", who_);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(Error(ErrorCode::timeout, fmt::format("no {} within {} ms of StreamStart",
                                                        ring_ ? "CreditReturn" : "RingInfo",
                                                        timeouts_.connect.count())));
    }
    if (auto ok = pump(std::min(left, milliseconds(100))); !ok) return fail(ok.error());
  }
  if (ring_->slot_bytes < m.layout.frame_bytes) {
    return fail(Error(ErrorCode::protocol,
                      fmt::format("RingInfo.slot_bytes {} smaller than a frame ({} bytes)",
                                  ring_->slot_bytes, m.layout.frame_bytes)));
  }
  frame_bytes_ = m.layout.frame_bytes;
  return *ring_;
}

Result<std::optional<Credit>> SenderBase::acquire(milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    if (!pool_) return make_error(ErrorCode::invalid_argument, "{}: acquire before start_stream", who_);
    if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
    if (receiver_ended_) return std::optional<Credit>{};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (wait.count() > 0 && left.count() <= 0) return std::optional<Credit>{};
    const auto slice = wait.count() > 0 ? std::min(left, timeouts_.keepalive) : milliseconds(0);
    if (auto ok = pump(slice); !ok) return fail(ok.error());
    if (wait.count() == 0) {
      if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
      return std::optional<Credit>{};
    }
  }
}

Result<void> SenderBase::keep_alive() {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (auto ok = pump(milliseconds(0)); !ok) return fail(ok.error());
  return {};
}

Result<void> SenderBase::handshake(const ConnectOptions& options) {
  key_ = options.key;
  max_frame_bytes_ = options.max_frame_bytes;
  hello_ = make_hello(options);
  if (key_) hello_.flags |= proto::kCapAuth;
  if (auto ok = send_message(hello_); !ok) return fail(ok.error());
  const auto deadline = Clock::now() + timeouts_.connect;
  while (step_ != Step::done) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(Error(ErrorCode::timeout,
                        fmt::format("no {} within {} ms",
                                    step_ == Step::hello_sent ? "HelloAck" : "Auth",
                                    timeouts_.connect.count())));
    }
    // A receiver that refuses says why and closes: its answer counts, not the close.
    auto ok = pump(std::min(left, milliseconds(100)));
    if (handshake_error_) return fail(*handshake_error_);
    if (!ok) return fail(ok.error());
  }
  handshaken_ = true;
  return {};
}

Result<void> SenderBase::handshake_step(const proto::Message& message) {
  auto failed = [&](Error error) -> Result<void> {
    if (!handshake_error_) handshake_error_ = error;
    return Unexpected(std::move(error));
  };
  if (const auto* error = std::get_if<proto::ErrorMessage>(&message)) {
    return failed(Error(error->code, fmt::format("receiver refused: {}", printable(error->text))));
  }
  auto not_auth = [&] {
    return Error(ErrorCode::protocol,
                 fmt::format("expected Auth, got {}", proto::to_string(proto::type_of(message))));
  };
  switch (step_) {
    case Step::hello_sent: {
      if (auto ok = check_hello_reply(message, max_frame_bytes_); !ok) return failed(ok.error());
      ack_ = std::get<proto::HelloAck>(message);
      const bool receiver_proves = ack_.flags & proto::kCapAuth;
      if (key_ && !receiver_proves) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver holds no key, and this sender "
                            "sends only to a receiver that proves the shared key"));
      }
      if (!key_ && receiver_proves) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver requires a shared key; give "
                            "this sender --key-file"));
      }
      step_ = key_ ? Step::challenge_awaited : Step::done;
      return {};
    }
    case Step::challenge_awaited: {
      const auto* challenge = std::get_if<proto::Auth>(&message);
      if (!challenge) return failed(not_auth());
      auto nonce = auth::make_nonce();
      if (!nonce) return failed(nonce.error());
      nonce_ = *nonce;
      receiver_nonce_ = challenge->nonce;
      const proto::Auth proof{nonce_, auth::prove(*key_, auth::Role::sender, nonce_,
                                                  receiver_nonce_, hello_, ack_)};
      if (auto ok = send_message(proof); !ok) return failed(ok.error());
      step_ = Step::proof_awaited;
      return {};
    }
    case Step::proof_awaited: {
      const auto* proof = std::get_if<proto::Auth>(&message);
      if (!proof) return failed(not_auth());
      // The receiver proves the key too, so nothing is sent to an impostor.
      if (proof->nonce != receiver_nonce_ ||
          !auth::verify(*key_, auth::Role::receiver, nonce_, receiver_nonce_, hello_, ack_,
                        proof->proof)) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver did not prove the shared key"));
      }
      // Messages after this one are sealed.
      protect(std::make_shared<auth::ControlMac>(*key_, auth::Role::sender, nonce_, receiver_nonce_));
      step_ = Step::done;
      return {};
    }
    case Step::done: break;
  }
  return {};
}

Result<void> SenderBase::handle(const proto::Message& message) {
  if (step_ != Step::done) return handshake_step(message);
  switch (proto::type_of(message)) {
    case proto::MessageType::RingInfo: {
      const auto& m = std::get<proto::RingInfo>(message);
      if (m.ring_epoch != ring_epoch_) {
        return make_error(ErrorCode::protocol,
                          "RingInfo.ring_epoch {} does not answer StreamStart.ring_epoch {}",
                          m.ring_epoch, ring_epoch_);
      }
      if (m.stream_id != kStreamId) {
        return make_error(ErrorCode::protocol, "RingInfo.stream_id {} is not this sender's stream {}",
                          m.stream_id, kStreamId);
      }
      ring_ = m;
      pool_.emplace(m.slot_count);
      return {};
    }
    case proto::MessageType::CreditReturn: {
      const auto& m = std::get<proto::CreditReturn>(message);
      if (!ring_ || m.ring_epoch != ring_->ring_epoch) return {};  // an older ring's credits
      return pool_->add(m.slots);
    }
    case proto::MessageType::Keepalive: return {};
    case proto::MessageType::EndOfStream: receiver_ended_ = true; return {};
    case proto::MessageType::Error: {
      const auto& m = std::get<proto::ErrorMessage>(message);
      return Unexpected(Error(m.code == ErrorCode::peer_closed ? ErrorCode::protocol : m.code,
                              fmt::format("receiver reported: {}", printable(m.text))));
    }
    default:
      return make_error(ErrorCode::protocol, "unexpected {} from a receiver",
                        proto::to_string(proto::type_of(message)));
  }
}

Result<void> SenderBase::check_frame(Credit credit, std::span<const std::byte> frame) const {
  if (!ring_ || credit.ring_epoch != ring_->ring_epoch) {
    return make_error(ErrorCode::invalid_argument, "{}: credit for ring {} is not the current ring",
                      who_, credit.ring_epoch);
  }
  if (frame.size() != frame_bytes_) {
    return make_error(ErrorCode::invalid_argument, "{}: frame of {} bytes, stream needs {}", who_,
                      frame.size(), frame_bytes_);
  }
  return {};
}

proto::Hello SenderBase::make_hello(const ConnectOptions& options) {
  proto::Hello hello;
  hello.max_frame_bytes = options.max_frame_bytes ? options.max_frame_bytes : proto::kMaxFrameBytes;
  hello.credits_requested = options.credits_requested;
  hello.flags = proto::kCapChecksum;
  hello.software = "rdmavideo " RDMAVIDEO_VERSION;
  return hello;
}

Result<void> SenderBase::check_hello_reply(const proto::Message& reply, uint64_t max_frame_bytes) {
  if (const auto* error = std::get_if<proto::ErrorMessage>(&reply)) {
    return Unexpected(Error(error->code, fmt::format("receiver refused: {}", printable(error->text))));
  }
  const auto* ack = std::get_if<proto::HelloAck>(&reply);
  if (!ack) {
    return make_error(ErrorCode::protocol, "expected HelloAck, got {}",
                      proto::to_string(proto::type_of(reply)));
  }
  if (ack->max_frame_bytes < max_frame_bytes) {
    return make_error(ErrorCode::unsupported,
                      "receiver accepts frames up to {} bytes (HelloAck.max_frame_bytes); this "
                      "stream's are {} bytes",
                      ack->max_frame_bytes, max_frame_bytes);
  }
  return {};
}

}  // namespace rdmavideo::sender
