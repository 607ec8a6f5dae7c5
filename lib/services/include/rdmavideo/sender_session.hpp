// SPDX-License-Identifier: Apache-2.0
// SenderSession: one sender's connection to a receiver, with everything a front end would
// otherwise repeat: frame buffers lent from a pool the session registered, the live/no-drop
// policy, pacing, in-flight retirement, keepalives, checksums and counters.
//
// Lifecycle, in calling order: connect(); start_stream() describes the format and allocates
// the pool (again on a format change); then per frame acquire_buffer(), fill it, submit()
// (as Intel MTL's get_frame/put_frame); end_stream() at the end. Memory the session does not
// own (a GStreamer buffer) goes out through submit_external().
//
// Buffers: a FrameBuffer is a move-only lease of one pool buffer. submit() takes it; the
// buffer returns to the pool once no transfer reads it (over verbs, when its RDMA WRITE has
// completed), so acquire_buffer() never hands out memory the NIC still reads. A lease
// dropped without submit() returns at once. Pool memory is registered once per stream
// format and keeps its contents between uses (the test pattern renders its frames once).
//
// Threads: one thread calls connect, start_stream, acquire_buffer, submit, submit_external,
// pace and end_stream. The session's own service thread keeps the connection alive while
// that thread is away (a paused pipeline, a slow input): no front end sends keepalives.
// stats(), receiver_ended() and failure() may be called from any thread.
//
// Where the next pieces plug in: the OBS output plugin drives exactly this API; a CUDA memory
// kind is the `memory` the pool is allocated in; authentication is part of connect().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo {

namespace detail {
class BufferPool;
}

/// A pool buffer lent to the caller to fill. Move-only; dropping it unsent returns it.
class FrameBuffer {
 public:
  FrameBuffer() = default;
  FrameBuffer(FrameBuffer&& other) noexcept;
  FrameBuffer& operator=(FrameBuffer&& other) noexcept;
  FrameBuffer(const FrameBuffer&) = delete;
  FrameBuffer& operator=(const FrameBuffer&) = delete;
  ~FrameBuffer();

  explicit operator bool() const { return pool_ != nullptr; }
  /// Exactly the stream's frame_bytes, to be filled in the stream's layout.
  std::span<std::byte> bytes() const { return bytes_; }
  uint32_t index() const { return index_; }
  memory::MemoryKind kind() const { return kind_; }
  /// Copies host bytes into the buffer at `offset`: a memcpy, or an upload where the buffer
  /// is GPU memory, so a front end fills a buffer the same way wherever it lives.
  Result<void> write(std::span<const std::byte> from, size_t offset = 0) const;
  /// Copies the buffer's bytes at `offset` into host memory.
  Result<void> read(std::span<std::byte> to, size_t offset = 0) const;

 private:
  friend class SenderSession;
  friend class detail::BufferPool;
  FrameBuffer(std::shared_ptr<detail::BufferPool> pool, uint32_t index, std::span<std::byte> bytes,
              memory::MemoryKind kind)
      : pool_(std::move(pool)), bytes_(bytes), index_(index), kind_(kind) {}
  void reset() noexcept;

  std::shared_ptr<detail::BufferPool> pool_;
  std::span<std::byte> bytes_;
  uint32_t index_ = 0;
  memory::MemoryKind kind_ = memory::MemoryKind::host;
};

struct SendPolicy {
  bool live = false;      ///< drop when no credit is free, instead of waiting
  bool checksum = false;  ///< put an XXH3-64 of each frame in FrameWritten
};

struct SenderSessionOptions {
  TransportKind transport = TransportKind::automatic;
  ConnectOptions connect;
  SendPolicy policy;
  /// What the pool is allocated in. For GPU memory the connection checks the device at
  /// connect() and sends from it by the ladder's rung (`gpu_path`).
  memory::MemorySpec memory = memory::MemoryKind::host;
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;
  /// When set and it becomes true, a wait for a credit or a pace ends with `interrupted`
  /// (the frame is not sent, and a FrameBuffer stays with the caller).
  const std::atomic<bool>* interrupt = nullptr;
  /// Called on the service thread when the connection fails while the caller is away.
  std::function<void(const Error& error)> on_failure;
  /// External frames (submit_external()) that may be in flight at once.
  uint32_t max_external_in_flight = 2;
};

/// What the source knows of a frame.
struct FrameMeta {
  uint64_t sequence = 0;  ///< frame number from the source, dropped frames included
  int64_t pts_ns = 0;     ///< presentation time from the source
  /// When the frame became available (or was due, for a paced source); the sender's latency
  /// runs from here to the end of the write.
  std::chrono::steady_clock::time_point ready = std::chrono::steady_clock::now();
};

class SenderSession {
 public:
  enum class Outcome {
    sent,            ///< written into the receiver's ring
    dropped,         ///< live: no credit was free (counted)
    receiver_ended,  ///< the receiver wants no more frames
    interrupted,     ///< the interrupt flag ended a wait; nothing was sent
  };

  /// Connects and completes the handshake; starts the service thread.
  static Result<std::unique_ptr<SenderSession>> connect(SenderSessionOptions options);
  ~SenderSession();  // ends the stream if end_stream() was not called
  SenderSession(const SenderSession&) = delete;
  SenderSession& operator=(const SenderSession&) = delete;

  TransportKind kind() const;
  const std::string& peer() const;

  /// Describes the stream (a later call changes the format) and waits for the receiver's
  /// ring. Frames in flight go out first; the pool is (re)allocated with `pool_buffers`
  /// buffers of the format's size and registered.
  Result<proto::RingInfo> start_stream(const proto::StreamStart& format, uint32_t pool_buffers);
  /// A pool buffer no transfer reads, waiting for one if need be; `index` asks for that
  /// buffer (0..pool_buffers-1), whose contents are as the last user left them.
  Result<FrameBuffer> acquire_buffer(std::optional<uint32_t> index = std::nullopt);
  /// Sends a filled pool buffer. `buffer` is taken (emptied) unless the outcome is
  /// `interrupted`, when it stays the caller's to submit again.
  Result<Outcome> submit(FrameBuffer& buffer, const FrameMeta& meta);
  /// Sends memory the session does not own. `keep_while_sent` is held until no transfer
  /// reads `frame`; where the transport needs memory registered (verbs), `frame` is
  /// registered on first use and `keep_while_registered` is held as long as the connection,
  /// so the registration never outlives the memory.
  Result<Outcome> submit_external(std::span<const std::byte> frame, const FrameMeta& meta,
                                  std::shared_ptr<const void> keep_while_sent,
                                  std::shared_ptr<const void> keep_while_registered);
  /// Waits until frame `sequence` is due at the stream's rate, counted from the first call
  /// (the connection is kept alive meanwhile). Returns when it was due, or `interrupted`.
  Result<std::optional<std::chrono::steady_clock::time_point>> pace(uint64_t sequence);
  /// A live source's frame that is not sent: it came due while the link was still busy with
  /// earlier frames (rdmavideo-send: more than two frame periods late), and sending it would
  /// only add delay.
  /// Counted as dropped, as a frame with no free slot is; the receiver sees the gap.
  void skip_late(uint64_t sequence);
  /// Sends every frame in flight, then EndOfStream, and closes. Idempotent.
  Result<void> end_stream();

  /// The receiver sent EndOfStream (also noticed while the caller was away).
  bool receiver_ended() const;
  /// The connection's failure noticed by the service thread, if any.
  std::optional<Error> failure() const;
  /// A copy of the counters.
  stats::TransferStats stats() const;
  /// For a pool in GPU memory, the ladder's decision (made at start_stream()), with the
  /// reason for each rung passed over; empty for host memory.
  std::string gpu_path() const;

 private:
  struct Impl;
  explicit SenderSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo
