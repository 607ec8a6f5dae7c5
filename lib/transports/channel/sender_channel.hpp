// SPDX-License-Identifier: Apache-2.0
// What a transport supplies to the sender core (services/sender/sender_core.hpp), and nothing
// more: a connected channel that sends the protocol's messages, writes a frame from
// registered memory into a slot of the receiver's ring and says when that memory is free
// again, receives the receiver's messages, and closes. The handshake, the StreamStart and
// RingInfo exchange, credits, keepalives, the silence watchdog, the frames in flight, failure
// and close are the core's, written once for every transport, as the receiver core is over
// ReceiverChannel.
//
// Threads: one thread (the core's caller) calls everything but wake(), which may be called
// from any thread at any time.
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
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::sender {

/// Where a frame goes: its slot in the receiver's ring (verbs: address and rkey; TCP: none).
struct RemoteSlot {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

class SenderChannel {
 public:
  virtual ~SenderChannel() = default;
  virtual TransportKind kind() const = 0;
  /// "host:port", and the RDMA device for verbs, for messages.
  virtual const std::string& peer() const = 0;

  /// Sends one control message (sealed once protect() was called).
  virtual Result<void> send(const proto::Message& message) = 0;
  /// Writes `frame` (in registered memory) into the slot and announces it with `written`
  /// (FrameWritten, its slot and bytes filled in). Returns a ticket: done(ticket) says when
  /// `frame` is no longer read. TCP has written everything when this returns; verbs has
  /// posted the RDMA WRITEs and the SEND and returns at once.
  virtual Result<uint64_t> send_frame(std::span<const std::byte> frame,
                                      const proto::FrameWritten& written, RemoteSlot slot) = 0;
  /// Acts on completions without waiting: true once the send with `ticket` reads nothing.
  virtual bool done(uint64_t ticket) = 0;
  /// The next message from the receiver, waiting at most `wait` for one; nullopt when none
  /// came. Once the receiver has closed and every message it sent before was taken:
  /// `peer_closed`. A message that does not decode (or open) is `protocol` (`auth_failed`).
  virtual Result<std::optional<proto::Message>> receive(std::chrono::milliseconds wait) = 0;
  /// The receiver proved the key: seal every message sent from now on, and open every
  /// message received after the one last returned.
  virtual void protect(std::shared_ptr<auth::ControlMac> mac) = 0;
  /// HelloAck chose `version`: every later message is written with it (docs/protocol.md §4).
  virtual void negotiated(uint16_t version) = 0;
  /// The largest control message send() takes, header and tag included: an AudioChunk is
  /// split to fit (verbs: one control buffer; TCP: the protocol's body limit).
  virtual size_t max_control_bytes() const = 0;
  /// Makes a receive() in progress return soon (a stop).
  virtual void wake() = 0;

  /// Makes `memory` something frames can be sent from (verbs: registered once, local access
  /// only; TCP: nothing to do). The registration keeps `owner` alive until forget_memory().
  virtual Result<void> register_memory(std::span<const std::byte> memory,
                                       std::shared_ptr<const void> owner) = 0;
  /// True when frames can be sent from `frame` without register_memory().
  virtual bool registered(std::span<const std::byte> frame) const = 0;
  /// Drops the registration of `memory` (no frame may be in flight from it).
  virtual void forget_memory(std::span<const std::byte> memory) = 0;
  /// What this channel tells the GPU ladder (rdmavideo/gpu_path.hpp): TCP, which stages;
  /// verbs fills in its device's dma-buf import and nvidia-peermem.
  virtual gpu::PathFacts gpu_facts() { return {}; }
  /// Registers GPU memory for frames to be sent straight from it, by the ladder's `path`
  /// (dmabuf or peermem); as register_memory() otherwise. TCP cannot.
  virtual Result<void> register_gpu_memory(std::span<const std::byte> memory,
                                           // NOLINTNEXTLINE(performance-unnecessary-value-param)
                                           std::shared_ptr<const void> owner, gpu::Path path,
                                           const cuda::Device& device) {
    (void)memory, (void)owner, (void)device;
    return make_error(ErrorCode::unsupported, "{} cannot send from GPU memory by {}",
                      to_string(kind()), gpu::to_string(path));
  }
  /// Memory registrations this channel sends from (verbs; TCP registers nothing).
  virtual uint32_t registrations() const { return 0; }
  /// Of those, the ones this channel made: verbs channels through one device share its
  /// protection domain and every registration in it, so the second finds the first's.
  virtual uint32_t registrations_made() const { return registrations(); }
  /// Whether a RingInfo must carry the ring's address and rkey (verbs writes there).
  virtual bool needs_ring_address() const { return false; }

  /// Sends `last` when given, then closes in the transport's orderly way: waits up to
  /// `linger` for the receiver to close first, so it has taken everything sent (0: at once,
  /// after a failure). Idempotent.
  virtual void close(const proto::Message* last, std::chrono::milliseconds linger) = 0;
};

/// A connected channel of `kind` (tcp or verbs; `automatic` is the core's to resolve).
Result<std::unique_ptr<SenderChannel>> connect_channel(TransportKind kind,
                                                       const ConnectOptions& options);

}  // namespace rdmavideo::sender
