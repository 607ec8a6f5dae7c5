// SPDX-License-Identifier: Apache-2.0
// The transport interface both ends program against; TCP and (later) verbs implement it.
//
// Receiver, in calling order: listen() gives a Listener; accept() waits for a sender and
// completes the Hello handshake; on the ReceiverConnection, next() returns events in order
// (StreamStarted before any frame of that format, FrameArrived, StreamEnded). A FrameArrived
// carries a FrameLease: the frame stays in its ring slot, untouched by the sender, until the
// lease is dropped, which returns the slot's credit. A lease may be moved to and dropped on
// any thread; it keeps the ring memory alive, so it stays valid after the connection is gone.
// next() is called from one thread only.
//
// Sender, in calling order: connect() connects and completes the handshake; start_stream()
// describes the format and waits for the ring; then per frame acquire() a credit and
// send_frame() into it; end_stream() at the end. One thread drives a SenderConnection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo {

enum class TransportKind { automatic, tcp, verbs };
std::string_view to_string(TransportKind kind);
std::optional<TransportKind> parse_transport(std::string_view text);

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;
};
/// "HOST:PORT", "[v6addr]:PORT"; port 0 is allowed only when listening.
Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero);

namespace detail {
// What a lease returns its slot to. Implemented by each transport's shared state.
class SlotOwner {
 public:
  virtual ~SlotOwner() = default;
  virtual void release_slot(uint32_t ring_epoch, uint32_t slot) noexcept = 0;
};
}  // namespace detail

/// A received frame in its ring slot. Move-only; dropping it returns the credit.
class FrameLease {
 public:
  FrameLease() = default;
  FrameLease(std::shared_ptr<detail::SlotOwner> owner, std::shared_ptr<void> memory,
             std::span<std::byte> data, proto::FrameWritten info)
      : owner_(std::move(owner)), memory_(std::move(memory)), data_(data), info_(info) {}
  FrameLease(FrameLease&& other) noexcept { *this = std::move(other); }
  FrameLease& operator=(FrameLease&& other) noexcept {
    if (this != &other) {
      release();
      owner_ = std::move(other.owner_);
      memory_ = std::move(other.memory_);
      data_ = other.data_;
      info_ = other.info_;
      other.data_ = {};
    }
    return *this;
  }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  ~FrameLease() { release(); }

  explicit operator bool() const { return owner_ != nullptr; }
  std::span<const std::byte> data() const { return data_; }
  std::span<std::byte> mutable_data() const { return data_; }
  const proto::FrameWritten& info() const { return info_; }

  /// Returns the slot now; the lease is empty afterwards.
  void release() noexcept {
    if (owner_) owner_->release_slot(info_.ring_epoch, info_.slot);
    owner_.reset();
    memory_.reset();
    data_ = {};
  }

 private:
  std::shared_ptr<detail::SlotOwner> owner_;
  std::shared_ptr<void> memory_;  // the ring's memory, kept alive while the frame is read
  std::span<std::byte> data_;
  proto::FrameWritten info_{};
};

struct StreamStarted {
  proto::StreamStart format;
};
struct FrameArrived {
  FrameLease frame;
  uint64_t latency_ns = 0;  ///< arrival minus FrameWritten.sent_ns (same-clock hosts only)
};
struct StreamEnded {
  proto::EndOfStream end;
};
using ReceiverEvent = std::variant<StreamStarted, FrameArrived, StreamEnded>;

struct Timeouts {
  std::chrono::milliseconds connect{5000};    ///< connect and handshake
  std::chrono::milliseconds keepalive{1000};  ///< send a Keepalive after this much silence
  std::chrono::milliseconds peer{5000};       ///< the peer is dead after this much silence
};

struct ListenOptions {
  Endpoint endpoint;
  std::string rdma_device;  ///< verbs: only accept on this device; empty: any
  uint32_t ring_size = 8;                 ///< slots in the ring, 1..kMaxRingSlots
  uint64_t max_frame_bytes = 1ull << 30;  ///< largest frame accepted
  Timeouts timeouts;
  /// When set and it becomes true, a next() blocked on the sender gives up within one
  /// keepalive interval with an error whose errno is EINTR (the sender is told the stream
  /// ended). For embedders that stop from another thread, like rdmasrc's unlock().
  const std::atomic<bool>* stop = nullptr;
};

struct ConnectOptions {
  Endpoint endpoint;
  std::string rdma_device;  ///< verbs: the device the route must use; empty: any
  /// Largest frame this sender will send; 0 when not known yet (a GStreamer sink before
  /// caps): each StreamStart's frame size is then left to the receiver to judge.
  uint64_t max_frame_bytes = 0;
  uint32_t credits_requested = 0;
  Timeouts timeouts;
  /// When set and it becomes true, a frame write blocked on a receiver that does not read
  /// gives up within one keepalive interval (errno EINTR), as ListenOptions::stop does.
  const std::atomic<bool>* stop = nullptr;
};

class ReceiverConnection {
 public:
  virtual ~ReceiverConnection() = default;
  virtual TransportKind kind() const = 0;
  virtual const std::string& peer() const = 0;
  /// The next event. An error ends the connection (it has been closed and, where it made
  /// sense, the peer was told why).
  virtual Result<ReceiverEvent> next() = 0;
  /// Tells the sender to stop (EndOfStream) and closes.
  virtual void finish(uint64_t frames) = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  virtual TransportKind kind() const = 0;
  /// The bound address, with the real port when listening on port 0.
  virtual Endpoint local_endpoint() const = 0;
  /// Readable (POLLIN) when accept() has a connection to take, for waiting on a listener
  /// together with other fds.
  virtual int readiness_fd() const = 0;
  /// "tcp", "verbs", or "tcp+verbs" for a listener taking both.
  virtual std::string describe() const { return std::string(to_string(kind())); }
  /// Waits for a sender and completes its handshake. An error concerns that one peer only;
  /// the listener stays usable.
  virtual Result<std::unique_ptr<ReceiverConnection>> accept() = 0;
};

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
  /// Sends StreamStart and waits for the ring. Held credits of an earlier format are void.
  virtual Result<proto::RingInfo> start_stream(const proto::StreamStart& format) = 0;
  /// A credit, waiting at most `wait` (zero: only what has already arrived). nullopt when
  /// none came in time or the receiver has ended the stream (see receiver_ended()).
  virtual Result<std::optional<Credit>> acquire(std::chrono::milliseconds wait) = 0;
  /// Writes one frame of exactly the stream's frame_bytes into the credit's slot. The bytes
  /// may still be read after this returns (verbs: the NIC reads them): do not change them
  /// until wait_idle() on the same buffer returns, or end_stream() does.
  virtual Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                                  const proto::FrameWritten& info) = 0;
  /// Waits until no frame write still reads from `buffer`, so the caller may refill it.
  virtual Result<void> wait_idle(std::span<const std::byte> buffer) = 0;
  /// Services the connection without taking a credit: acts on what the receiver sent and
  /// sends a keepalive when we have been quiet. Call it at least once a second while no
  /// frame is sent (a paced source between frames, a slow input), or the receiver will
  /// take this sender for dead.
  virtual Result<void> keep_alive() = 0;
  /// Tells the receiver no more frames follow and closes.
  virtual Result<void> end_stream(const proto::EndOfStream& end) = 0;
  /// The receiver sent EndOfStream: it wants no more frames.
  virtual bool receiver_ended() const = 0;
};

/// Listens with the given transport. `automatic` listens on TCP and, where an RDMA device
/// exists, on rdma_cm at the same port, and serves whichever sender connects.
Result<std::unique_ptr<Listener>> listen(TransportKind kind, const ListenOptions& options);
/// Connects with the given transport; `automatic` picks the best that reaches the peer.
Result<std::unique_ptr<SenderConnection>> connect(TransportKind kind,
                                                  const ConnectOptions& options);

}  // namespace rdmavideo
