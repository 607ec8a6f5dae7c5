// SPDX-License-Identifier: Apache-2.0
// The sender's side of a connection, as each transport implements it, and SenderBase, the
// part every transport's sender does the same way (the StreamStart -> RingInfo exchange,
// the credit pool, acquire(), acting on the receiver's messages). SenderSession
// (sender_session.hpp) is built on it; nothing else is.
//
// One thread drives a SenderConnection (the session serialises its callers). Memory a frame
// is sent from must be registered first (register_memory()); the connection owns every
// registration and keeps the memory's owner alive until it lets the registration go.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "auth/handshake.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/ring.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::sender {

/// A credit: the right to write one frame into one slot.
struct Credit {
  uint32_t ring_epoch = 0;
  uint32_t slot = 0;
};

class SenderConnection {
 public:
  virtual ~SenderConnection() = default;
  virtual TransportKind kind() const = 0;
  virtual const std::string& peer() const = 0;

  /// Sends StreamStart (the connection numbers stream and ring epoch) and waits for the ring
  /// and its first credits. Credits held for an earlier ring are void.
  virtual Result<proto::RingInfo> start_stream(const proto::StreamStart& format) = 0;
  /// A credit, waiting at most `wait` (zero: only what has already arrived). nullopt when
  /// none came in time or the receiver has ended the stream (see receiver_ended()).
  virtual Result<std::optional<Credit>> acquire(std::chrono::milliseconds wait) = 0;

  /// Makes `memory` something frames can be sent from (verbs: registered once, local access
  /// only; TCP: nothing to do). The registration keeps `owner` alive until forget_memory().
  virtual Result<void> register_memory(std::span<const std::byte> memory,
                                       std::shared_ptr<const void> owner) = 0;
  /// True when frames can be sent from `frame` without register_memory().
  virtual bool registered(std::span<const std::byte> frame) const = 0;
  /// Drops the registration of `memory` (no frame may be in flight from it).
  virtual void forget_memory(std::span<const std::byte> memory) = 0;
  /// What this connection tells the GPU ladder (rdmavideo/gpu_path.hpp): TCP, which stages;
  /// verbs fills in its device's dma-buf import and nvidia-peermem.
  virtual gpu::PathFacts gpu_facts() { return {}; }
  /// Registers GPU memory for frames to be sent straight from it, by the ladder's `path`
  /// (dmabuf or peermem); as register_memory() otherwise. TCP cannot.
  virtual Result<void> register_gpu_memory(std::span<const std::byte> memory, std::shared_ptr<const void> owner,
                                           gpu::Path path, const cuda::Device& device) {
    (void)memory, (void)owner, (void)device;
    return make_error(ErrorCode::unsupported, "{} cannot send from GPU memory by {}", to_string(kind()),
                      gpu::to_string(path));
  }

  /// Writes one frame of exactly the stream's frame_bytes into the credit's slot. The bytes
  /// may still be read after this returns (verbs: the NIC reads them): in_flight() says so.
  virtual Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                                  const proto::FrameWritten& info) = 0;
  /// Whether a frame write may still read from `buffer` (acts on completions, never waits).
  virtual bool in_flight(std::span<const std::byte> buffer) = 0;
  /// Waits until no frame write reads from `buffer`.
  virtual Result<void> wait_idle(std::span<const std::byte> buffer) = 0;
  /// Services the connection without taking a credit: acts on what the receiver sent and
  /// sends a Keepalive when this side has been quiet.
  virtual Result<void> keep_alive() = 0;
  /// Tells the receiver no more frames follow and closes.
  virtual Result<void> end_stream(const proto::EndOfStream& end) = 0;
  /// The receiver sent EndOfStream: it wants no more frames.
  virtual bool receiver_ended() const = 0;
};

/// Connects with the given transport; `automatic` picks the best that reaches the peer.
Result<std::unique_ptr<SenderConnection>> connect(TransportKind kind, const ConnectOptions& options);

class SenderBase : public SenderConnection {
 public:
  /// The handshake, written once for every transport: Hello, the receiver's answer within
  /// Timeouts.connect, and the marked place where the sender's side of authentication goes.
  /// The transport's connect() calls it once its connection is up.
  Result<void> handshake(const ConnectOptions& options);
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
  /// The receiver proved the key: seal every message from now on, and open every message
  /// received after the one being handled.
  virtual void protect(std::shared_ptr<auth::ControlMac> mac) = 0;
  /// Whether fail() tells the receiver why before closing: when it broke the protocol or did
  /// not authenticate (a dead or silent receiver is told nothing).
  static bool tell_receiver(const Error& error) {
    return error.code() == ErrorCode::protocol || error.code() == ErrorCode::auth_failed;
  }

  /// A message from the receiver: RingInfo, CreditReturn, Keepalive, EndOfStream or Error.
  Result<void> handle(const proto::Message& message);
  /// The credit is for the current ring and the frame has the stream's size.
  Result<void> check_frame(Credit credit, std::span<const std::byte> frame) const;
  /// Our Hello. A sender that does not know its largest frame yet (max_frame_bytes 0)
  /// claims the protocol's limit; the receiver then judges each StreamStart's frame size.
  static proto::Hello make_hello(const ConnectOptions& options);
  /// The receiver's answer to our Hello: a HelloAck that takes our frames, or why not.
  static Result<void> check_hello_reply(const proto::Message& reply, uint64_t max_frame_bytes);

  /// Every stream this sender sends has this id; a connection carries one.
  static constexpr uint32_t kStreamId = 1;

  Timeouts timeouts_;
  std::string who_;                       // "send host:port "name"" for messages
  uint32_t ring_epoch_ = 0;               // epoch of the last StreamStart sent
  uint32_t frame_bytes_ = 0;              // the current stream's frame size
  std::optional<proto::RingInfo> ring_;   // the ring answering ring_epoch_
  std::optional<ring::CreditPool> pool_;  // credits held for ring_
  bool receiver_ended_ = false;           // the receiver sent EndOfStream
  bool closed_ = false;                   // no more sends
  bool handshaken_ = false;               // Hello answered (and, with a key, both proved)

 private:
  // One message of the handshake: HelloAck (or the refusal), then with a key the challenge
  // and the receiver's proof. The first error is kept in handshake_error_.
  Result<void> handshake_step(const proto::Message& message);

  enum class Step { hello_sent, challenge_awaited, proof_awaited, done };
  Step step_ = Step::hello_sent;
  std::shared_ptr<const auth::SharedKey> key_;  // ConnectOptions::key
  uint64_t max_frame_bytes_ = 0;                // ConnectOptions::max_frame_bytes
  proto::Hello hello_;                          // as sent
  proto::HelloAck ack_;                         // as received
  proto::Nonce nonce_{};                        // ours, once the challenge came
  proto::Nonce receiver_nonce_{};               // the challenge's
  std::optional<Error> handshake_error_;        // why the handshake failed
};

}  // namespace rdmavideo::sender
