// SPDX-License-Identifier: Apache-2.0
// The sender core: one connection to a receiver, for every transport, the mirror of the
// receiver core (services/receiver/connection.hpp). It runs the handshake (with a key, the
// shared-key proof both ways, docs/protocol.md §4.1), the StreamStart -> RingInfo exchange,
// holds the ring's credits, keeps the connection alive when the caller is quiet (a Keepalive
// after Timeouts.keepalive without a send) and declares the receiver dead after
// Timeouts.peer without a message, keeps the one list of frames in flight (a ticket from the
// channel per frame, retired when the channel says the frame's memory is read), and fails
// and closes the way the protocol says, written once. The transport supplies only a
// SenderChannel.
//
// Frames in flight: send_frame() takes a `hold`, any object whose life is the frame's
// memory's claim (a pool buffer's return, an external frame's owner, a staging slot); the
// core drops it when the frame's send is done. So memory returns to whoever lent it exactly
// when no transfer reads it, whichever connection read it last.
//
// Threads: one thread at a time calls a core (SenderSession serialises its callers). Only
// the channel's wake() may be called from elsewhere.
#pragma once

#include <atomic>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "channel/sender_channel.hpp"
#include "rdmavideo/ring.hpp"

namespace rdmavideo::sender {

/// A credit: the right to write one frame into one slot.
struct Credit {
  uint32_t ring_epoch = 0;
  uint32_t slot = 0;
};

/// Makes a connected channel; the transports' own (connect_channel()) unless tests replace it.
using ChannelFactory = std::function<Result<std::unique_ptr<SenderChannel>>(
    TransportKind kind, const ConnectOptions& options)>;
/// Tests: every SenderCore::connect() makes its channel with `factory` from now on (an
/// in-memory receiver); an empty one restores the transports.
void replace_channel_factory(ChannelFactory factory);

class SenderCore {
 public:
  /// Connects with `kind` and runs the handshake. `automatic` tries verbs where an RDMA
  /// device is there (its connect and handshake), and TCP when that fails.
  static Result<std::unique_ptr<SenderCore>> connect(TransportKind kind,
                                                     const ConnectOptions& options);
  /// A core over a connected channel; handshake() next. (connect() does both; tests drive a
  /// channel of their own.)
  SenderCore(std::unique_ptr<SenderChannel> channel, const ConnectOptions& options);
  ~SenderCore();  // frames in flight are let go (their holds dropped) after the channel closed
  SenderCore(const SenderCore&) = delete;
  SenderCore& operator=(const SenderCore&) = delete;

  /// Hello, the receiver's answer within Timeouts.connect, and with a key both proofs.
  Result<void> handshake();

  TransportKind kind() const { return channel_->kind(); }
  const std::string& peer() const { return channel_->peer(); }
  SenderChannel& channel() { return *channel_; }

  /// Sends StreamStart (the core numbers stream and ring epoch) and waits for the ring and its
  /// first credits. Credits held for an earlier ring are void.
  Result<proto::RingInfo> start_stream(const proto::StreamStart& format);
  /// A credit, waiting at most `wait` (zero: only what has already arrived). nullopt when
  /// none came in time or the receiver has ended the stream (receiver_ended()).
  Result<std::optional<Credit>> acquire(std::chrono::milliseconds wait);
  /// Writes one frame of the stream's frame_bytes into the credit's slot. `hold` is kept
  /// until no transfer reads `frame`, and dropped by a later retire() (never by this call).
  Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                          const proto::FrameWritten& info, std::shared_ptr<const void> hold);
  /// Retires the frames whose sends are done (their holds dropped), oldest first, without
  /// waiting.
  void retire();
  /// Waits until the oldest frame in flight is done and retires it; a frame not done within
  /// Timeouts.peer fails the connection. Nothing to do when none is in flight.
  Result<void> retire_oldest();
  /// Waits until every frame in flight is done.
  Result<void> retire_all();
  /// Frames written whose memory may still be read.
  size_t in_flight() const { return in_flight_.size(); }
  /// Waits up to `wait` for the transport (completions, the receiver's messages; the
  /// channel's wake() ends the wait), then retires what is done. The oldest frame not done
  /// within Timeouts.peer of its send fails the connection, as does a silent receiver.
  Result<void> progress(std::chrono::milliseconds wait);
  /// Services the connection without taking a credit: acts on what the receiver sent, sends
  /// a Keepalive when this side has been quiet, and fails when the receiver has gone silent.
  Result<void> keep_alive();
  /// Waits for every frame in flight, tells the receiver no more frames follow (`end`), and
  /// closes once it has closed (or Timeouts.peer passed). Idempotent.
  Result<void> end_stream(const proto::EndOfStream& end);
  /// The receiver sent EndOfStream: it wants no more frames.
  bool receiver_ended() const { return receiver_ended_; }

  /// The version the handshake chose; audio needs proto::kAudioVersion.
  uint16_t version() const { return ack_.version; }
  bool carries_audio() const { return handshaken_ && ack_.version >= proto::kAudioVersion; }
  /// Starts an audio stream (its stream_id is the caller's: never the video's, kStreamId),
  /// after start_stream(). Nothing answers it.
  Result<void> start_audio(const proto::AudioStart& format);
  /// Sends `samples` samples per channel of a started audio stream, laid out in `format`
  /// (planar: every sample of channel 0, then of channel 1, ...), as AudioChunks that each
  /// fit the channel's control message (a split planar chunk gets each channel's share).
  Result<void> send_audio(const proto::AudioStart& format, int64_t pts_ns, uint32_t samples,
                          std::span<const std::byte> data);
  /// Ends one audio stream; the video goes on.
  Result<void> end_audio(uint32_t stream_id);
  /// The video stream's id on every connection this sender makes.
  static constexpr uint32_t kStreamId = 1;

 private:
  // Sends a message, counting it as this side's last word for the keepalive.
  Result<void> send(const proto::Message& message);
  // Acts on what arrived (waiting up to `wait` for something): a Keepalive first when quiet,
  // every message through handle(), the watchdog last.
  Result<void> pump(std::chrono::milliseconds wait);
  // A message from the receiver: RingInfo, CreditReturn, Keepalive, EndOfStream or Error.
  Result<void> handle(const proto::Message& message);
  // One message of the handshake: HelloAck (or the refusal), then with a key the challenge
  // and the receiver's proof. The first error is kept in handshake_error_.
  Result<void> handshake_step(const proto::Message& message);
  // A send that found the connection closed: the receiver's last words, where they arrived
  // before the close (an Error, EndOfStream), say more than the close.
  Error closed_by_receiver(const Error& error);
  // Closes the connection on `error` (telling the receiver why where it broke the protocol
  // or did not authenticate); returns the error with who_ in front.
  Unexpected fail(const Error& error);
  // The oldest frame in flight was not read within Timeouts.peer: fails the connection.
  Unexpected fail_oldest_frame();

  using Clock = std::chrono::steady_clock;
  struct InFlight {
    uint64_t ticket;                   // done when channel_->done(ticket)
    uint64_t sequence;                 // for messages
    std::shared_ptr<const void> hold;  // dropped once done
    Clock::time_point sent;            // for the watchdog on frames
  };
  enum class Step { hello_sent, challenge_awaited, proof_awaited, done };

  std::unique_ptr<SenderChannel> channel_;
  Timeouts timeouts_;
  std::string who_;                             // "send host:port "name"" for messages
  std::shared_ptr<const auth::SharedKey> key_;  // ConnectOptions::key
  uint64_t max_frame_bytes_ = 0;                // ConnectOptions::max_frame_bytes
  uint32_t credits_requested_ = 0;              // ConnectOptions::credits_requested
  uint16_t max_version_ = proto::kVersion;      // ConnectOptions::max_version
  const std::atomic<bool>* stop_ = nullptr;     // ConnectOptions::stop: gives up the handshake

  Step step_ = Step::hello_sent;
  proto::Hello hello_;                    // as sent
  proto::HelloAck ack_;                   // as received
  proto::Nonce nonce_{};                  // ours, once the challenge came
  proto::Nonce receiver_nonce_{};         // the challenge's
  std::optional<Error> handshake_error_;  // why the handshake failed

  uint32_t ring_epoch_ = 0;                      // epoch of the last StreamStart sent
  uint32_t frame_bytes_ = 0;                     // the current stream's frame size
  std::optional<proto::RingInfo> ring_;          // the ring answering ring_epoch_
  std::optional<ring::CreditPool> pool_;         // credits held for ring_
  std::deque<InFlight> in_flight_;               // frames written, not yet done, oldest first
  Clock::time_point last_sent_ = Clock::now();   // this side's last message or frame
  Clock::time_point last_heard_ = Clock::now();  // the receiver's last message
  bool handshaken_ = false;                      // Hello answered (and, with a key, both proved)
  bool receiver_ended_ = false;                  // the receiver sent EndOfStream
  bool closed_ = false;                          // no more sends
  bool reading_last_words_ = false;              // closed_by_receiver() is reading them
};

}  // namespace rdmavideo::sender
