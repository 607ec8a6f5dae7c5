// SPDX-License-Identifier: Apache-2.0
// What a transport supplies to the receiver core (receiver/connection.hpp), and nothing
// more: a listener that takes connections without talking to them, and per connection a
// channel that carries the protocol's messages, puts a frame's payload into its slot, and
// exposes a ring for the peer to write. Message dispatch, credits, keepalives, the handshake,
// failure and close are the core's, written once for every transport.
//
// Threads: one thread (the connection's) calls establish(), receive(), receive_payload(),
// expose_ring() and close(). send() is called from that thread too, or, where
// sends_from_any_thread() is true, from any thread with the core's send lock held (so the
// consumer that releases a slot can send its credit at once). wake() and interrupt() may be
// called from any thread at any time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "auth/handshake.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::receiver {

using Clock = std::chrono::steady_clock;

/// How the peer reaches a ring: verbs gives an address and rkey, TCP nothing. The
/// registration (an MR on verbs) lives as long as `registration`.
struct RingAccess {
  uint64_t base_addr = 0;
  uint32_t rkey = 0;
  std::shared_ptr<const void> registration;
};

class ReceiverChannel {
 public:
  virtual ~ReceiverChannel() = default;
  virtual TransportKind kind() const = 0;
  /// "host:port", and the RDMA device for verbs, for messages.
  virtual const std::string& peer() const = 0;

  /// Finishes the transport's part of accepting by `deadline` (verbs: the queue pair,
  /// rdma_accept, ESTABLISHED). TCP has nothing left to do.
  virtual Result<void> establish(Clock::time_point deadline) = 0;
  /// The next message, waiting at most `wait` for one to begin; nullopt when none came in
  /// time or wake() was called. A message that has begun must be whole by `complete_by`
  /// (`timeout` otherwise). A peer that closed is `peer_closed`, a broken message `protocol`.
  virtual Result<std::optional<proto::Message>> receive(std::chrono::milliseconds wait,
                                                        Clock::time_point complete_by) = 0;
  /// Puts the payload of the FrameWritten receive() just returned into `slot` by
  /// `complete_by` (TCP reads it from the stream, calling `on_tick` while it waits; verbs:
  /// the NIC already put it there).
  virtual Result<void> receive_payload(std::span<std::byte> slot, Clock::time_point complete_by,
                                       const std::function<void()>& on_tick) = 0;
  virtual Result<void> send(const proto::Message& message) = 0;
  /// The handshake authenticated the peer: from now on every message sent is sealed with
  /// `mac` and every message received must open with it (connection thread, before any
  /// other thread sends).
  virtual void protect(std::shared_ptr<auth::ControlMac> mac) = 0;
  /// The handshake chose `version`: every later message is written with it (connection
  /// thread, before any other thread sends).
  virtual void negotiated(uint16_t version) = 0;
  virtual bool sends_from_any_thread() const = 0;
  /// Makes a receive() in progress return nullopt soon.
  virtual void wake() = 0;
  /// Ends every wait for good: the connection is being stopped. Pending and later
  /// receive()s fail at once; send() still works, so the peer can be told.
  virtual void interrupt() = 0;
  /// Like interrupt(), for a connection that is being shed: every wait ends at once and
  /// close() then tells the peer nothing and lingers for nothing.
  virtual void abandon() { interrupt(); }
  /// Lets the peer write `memory` (verbs: registered for remote write, never remote read).
  virtual Result<RingAccess> expose_ring(const std::shared_ptr<memory::Region>& memory) = 0;
  /// What this channel tells the GPU ladder (rdmavideo/gpu_path.hpp): TCP, which stages;
  /// verbs fills in its device's dma-buf import and nvidia-peermem.
  virtual gpu::PathFacts gpu_facts() { return {}; }
  /// Lets the peer write a ring in GPU memory straight (verbs: registered by the ladder's
  /// `path`, dmabuf or peermem). TCP cannot.
  virtual Result<RingAccess> expose_gpu_ring(const std::shared_ptr<memory::Region>& memory,
                                             gpu::Path path) {
    (void)memory;
    return make_error(ErrorCode::unsupported, "{} cannot write into GPU memory by {}",
                      to_string(kind()), gpu::to_string(path));
  }
  /// Sends `last` (best effort) and closes in the transport's orderly way. Idempotent.
  virtual void close(const proto::Message* last) = 0;
};

class ChannelListener {
 public:
  virtual ~ChannelListener() = default;
  virtual TransportKind kind() const = 0;
  /// The bound address, with the real port when listening on port 0.
  virtual Endpoint local_endpoint() const = 0;
  /// Readable (POLLIN) when accept() has a connection to take.
  virtual int readiness_fd() const = 0;
  /// "tcp", "verbs", or "tcp+verbs" for a listener taking both.
  virtual std::string describe() const = 0;
  /// Takes one waiting connection without talking to it, so a silent peer never holds the
  /// listener: the handshake runs on the connection's own thread. An error concerns that
  /// peer only (a refused rdma_cm request); the listener stays usable.
  virtual Result<std::unique_ptr<ReceiverChannel>> accept() = 0;
};

/// Listens with the given transport. `automatic` listens on TCP and, where an RDMA device
/// exists, on rdma_cm at the same port.
Result<std::unique_ptr<ChannelListener>> listen(TransportKind kind, const ListenOptions& options);

}  // namespace rdmavideo::receiver
