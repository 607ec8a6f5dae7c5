// SPDX-License-Identifier: Apache-2.0
#include "sender/connection.hpp"

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
  if (auto ok = send_message(make_hello(options)); !ok) return fail(ok.error());
  const auto deadline = Clock::now() + timeouts_.connect;
  while (!hello_reply_) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(Error(ErrorCode::timeout,
                        fmt::format("no HelloAck within {} ms", timeouts_.connect.count())));
    }
    // A receiver that refuses says why and closes: its answer counts, not the close.
    if (auto ok = pump(std::min(left, milliseconds(100))); !ok && !hello_reply_) {
      return fail(ok.error());
    }
  }
  // ---- Authentication goes here (docs/protocol.md §4): the sender's side of the step in
  // the receiver core. The receiver proves the key too, so nothing is sent to an impostor. ----
  if (auto ok = check_hello_reply(*hello_reply_, options.max_frame_bytes); !ok) {
    return fail(ok.error());
  }
  hello_reply_.reset();
  handshaken_ = true;
  return {};
}

Result<void> SenderBase::handle(const proto::Message& message) {
  if (!handshaken_) {
    // The first message is the answer to Hello, whatever it is; check_hello_reply() judges it.
    if (!hello_reply_) hello_reply_ = message;
    return {};
  }
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
