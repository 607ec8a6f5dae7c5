// SPDX-License-Identifier: Apache-2.0
// What every transport's sender does the same way: the StreamStart -> RingInfo exchange, the
// credit pool, acquire(), and acting on the receiver's messages. A transport supplies how a
// message is sent, how incoming messages are pumped (calling handle() for each), and how the
// connection is closed on an error.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "rdmavideo/ring.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo {

class SenderBase : public SenderConnection {
 public:
  bool receiver_ended() const override { return receiver_ended_; }
  Result<proto::RingInfo> start_stream(const proto::StreamStart& format) override;
  Result<std::optional<Credit>> acquire(std::chrono::milliseconds wait) override;
  Result<void> keep_alive() override;

 protected:
  SenderBase(Timeouts timeouts, std::string who) : timeouts_(timeouts), who_(std::move(who)) {}

  /// Sends one control message.
  virtual Result<void> send_message(const proto::Message& message) = 0;
  /// Acts on what arrived, waiting up to `wait` for something, calling handle() for each
  /// message; sends a keepalive when quiet and fails when the receiver has gone silent.
  virtual Result<void> pump(std::chrono::milliseconds wait) = 0;
  /// Closes the connection on an error; returns the error with who_ in front.
  virtual Unexpected fail(const Error& error) = 0;

  /// A message from the receiver: RingInfo, CreditReturn, Keepalive, EndOfStream or Error.
  Result<void> handle(const proto::Message& message);
  /// The credit is for the current ring and the frame has the stream's size.
  Result<void> check_frame(Credit credit, std::span<const std::byte> frame) const;
  /// Our Hello. A sender that does not know its largest frame yet (max_frame_bytes 0)
  /// claims the protocol's limit; the receiver then judges each StreamStart's frame size.
  static proto::Hello make_hello(const ConnectOptions& options);
  /// The receiver's answer to our Hello: a HelloAck that takes our frames, or why not.
  static Result<void> check_hello_reply(const proto::Message& reply, uint64_t max_frame_bytes);

  Timeouts timeouts_;
  std::string who_;                       // "send host:port "name"" for messages
  uint32_t stream_id_ = 0;                // id of the last StreamStart sent
  uint32_t frame_bytes_ = 0;              // the current stream's frame size
  std::optional<proto::RingInfo> ring_;   // the ring answering stream_id_
  std::optional<ring::CreditPool> pool_;  // credits held for ring_
  bool receiver_ended_ = false;           // the receiver sent EndOfStream
  bool closed_ = false;                   // no more sends
};

}  // namespace rdmavideo
