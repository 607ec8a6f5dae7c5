// SPDX-License-Identifier: Apache-2.0
// SenderSession: a sender's frames to one receiver or several (fan-out), with everything a
// front end would otherwise repeat: frame buffers lent from a pool the session registered,
// the live/no-drop policy, pacing and the late-frame drop, pts from the frame rate, reconnect
// with back-off, keepalives, checksums, and counters per destination and in total.
//
// Lifecycle, in calling order: connect(); start_stream() describes the format and allocates
// the pool (again on a format change); then per frame acquire_buffer(), fill it, submit()
// (as Intel MTL's get_frame/put_frame); end_stream() at the end. Memory the session does not
// own (a GStreamer buffer) goes out through submit_external().
//
// Destinations: each has its own connection (sender core, transport, key proof), ring and
// credits, and a sending thread of its own, so N receivers cost N writes of one buffer and no
// copy. `automatic` picks the transport per destination. A destination that fails is dropped
// with one logged line while the others go on, unless `require_all` (the session then fails);
// with `reconnect` a lost destination (or one not up yet) is connected again on its own, with
// back-off, and joins the stream where it is. A live frame a destination has no credit for
// within the lateness bound is dropped for that destination alone, as is (with several
// destinations) the oldest of those queued for it beyond two (a receiver reading slowly holds at
// most three of the pool's buffers, not all of them), and every frame sent while it is away
// reconnecting counts as dropped for it; a no-drop frame waits for the slowest.
//
// Buffers: a FrameBuffer is a move-only lease of one pool buffer. submit() takes it; the
// buffer returns to the pool once every destination has sent it (no transfer reads it any
// more: over verbs, its RDMA WRITEs have completed) or dropped it. A lease dropped without
// submit() returns at once. Pool memory is registered once per stream format with each
// destination's connection and keeps its contents between uses (the test pattern renders its
// frames once).
//
// Two modes. Blocking (files, pipes, rdmavideo-send): acquire_buffer() waits for a free
// buffer, and submit() sends to the first destination on the caller's thread and returns once
// it has the frame (the others' threads send it meanwhile; the buffer comes back once the
// slowest has it, so no-drop waits for the slowest) or, where it did not take it, once every
// destination has sent or dropped it; live to several destinations, every one has its own
// thread and submit() only queues, so that no receiver's pace is the caller's. Non-
// blocking (`non_blocking`: capture, OBS's video and audio threads): acquire_buffer() takes
// only the pool's lock and never waits (no free buffer: an empty FrameBuffer, the frame
// counted as dropped), and submit() hands the frame to every destination's queue and returns.
//
// Audio (protocol version 3): start_audio() adds a track beside the video, submit_audio()
// sends its samples on the video's pts clock, to every destination whose receiver takes
// audio (one line says so of a version 2 receiver, which then gets the video alone). A
// destination gets each track's AudioStart once its ring is up (a track started later: at
// once, not with its first samples), and again after a reconnect.
// Audio travels in order with the frames: blocking mode sends it on the caller's thread to
// the first destination and queues it for the others; non-blocking mode only queues it. A
// track's consecutive samples are gathered to kAudioBatch before they go (a message and a
// wake-up at each end for every 1024 samples cost more than the samples), and what is
// gathered goes at once when the track ends, the stream ends, or its samples do not follow on.
//
// Threads: one thread calls connect, start_stream, acquire_buffer, submit, submit_external,
// pace, skip and end_stream (the caller's); start_audio, submit_audio and end_audio may come
// from one other thread (OBS's audio thread) as well. Each destination's thread keeps its
// connection alive while that thread is away (a paused pipeline, a slow input): no front end sends
// keepalives. stats(), destinations(), receiver_ended() and failure() may be called from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

  /// False for the empty FrameBuffer a non-blocking session lends when none is free.
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
  uint64_t sent_to_ = 0;  // destinations that have it, after an interrupted submit()
};

struct SendPolicy {
  bool live = false;      ///< drop when no credit is free, instead of waiting
  bool checksum = false;  ///< put an XXH3-64 of each frame in FrameWritten
  /// pace() at this many times the frame rate (ffmpeg's -readrate): 1.001 is a sender whose
  /// clock runs 0.1% fast, as a receiver meets one.
  double readrate = 1.0;
  /// Live: how late a frame may still go. A frame due (or ready) longer ago when the sender
  /// comes to it is dropped as `late`; one whose receiver has no free slot for it by then,
  /// as `no_credit`. Frames due while a send is under way wait meanwhile (the pool holds
  /// them), and go back to back once it ends. Unset: `max_lateness_periods`.
  std::optional<std::chrono::nanoseconds> max_lateness;
  /// The bound where `max_lateness` is unset, in frame periods of the stream's rate (paced at
  /// `readrate`), so it follows a change of format: four (67 ms at 60 fps) ride out a
  /// loaded machine's stalls without a delay that grows.
  double max_lateness_periods = 4;
};

/// One frame's way through one destination (SenderSessionOptions::on_frame): where a late
/// frame's time went.
struct FrameTiming {
  using TimePoint = std::chrono::steady_clock::time_point;
  uint64_t sequence = 0;
  uint32_t destination = 0;  ///< its index in the destinations, in the order given
  TimePoint ready;           ///< FrameMeta::ready: when it was due or became available
  TimePoint taken;           ///< the destination took it up (its thread, or the caller's)
  TimePoint credited;        ///< a credit in hand (or, dropped, given up waiting for one)
  TimePoint written;         ///< the write returned (TCP: the kernel has it; verbs: posted)
  std::optional<stats::DropCause> dropped;  ///< no_credit, or sent (none)
};

/// What a session that requires every destination says when one fails (after that
/// destination's error); a front end may put its own name for the setting in its place.
inline constexpr std::string_view kEveryDestinationRequired =
    "every destination is required, or none";

struct SenderSessionOptions {
  TransportKind transport = TransportKind::automatic;
  /// Every destination's connection: the key, timeouts, the largest frame, the stop flag.
  /// Its endpoint is the one destination when `destinations` is empty.
  ConnectOptions connect;
  /// Fan-out: every frame goes to each of these receivers (at most 64).
  std::vector<Endpoint> destinations;
  SendPolicy policy;
  /// What the pool is allocated in. For GPU memory each destination decides how frames leave
  /// it by the ladder (`gpu_path`); a frame that must be staged is copied out once, for every
  /// destination that stages.
  memory::MemorySpec memory = memory::MemoryKind::host;
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;
  /// acquire_buffer() never waits and submit() only enqueues (see above).
  bool non_blocking = false;
  /// A destination that fails ends the session, instead of being dropped.
  bool require_all = false;
  /// A destination lost, or not up at connect(), is connected again with back-off (0.5 s
  /// doubling to 5 s) until it is up, the session ends or the stop flag is set; errors that
  /// would recur (a wrong key, a format the receiver refuses) are not retried.
  bool reconnect = false;
  /// When set and it becomes true, a wait for a credit, a buffer or a pace ends with
  /// `interrupted` (the frame is not sent to the destinations still waiting, and a
  /// FrameBuffer stays with the caller, to be submitted again).
  const std::atomic<bool>* interrupt = nullptr;
  /// Called (on a destination's thread) when the session fails: its last destination is
  /// lost, or any with `require_all`.
  std::function<void(const Error& error)> on_failure;
  /// Called for every frame a destination sends, or drops for want of a credit, with its
  /// timing (on that destination's thread, or the caller's for the first destination in
  /// blocking mode): `rdmavideo-send --trace`. Must not call into the session.
  std::function<void(const FrameTiming& timing)> on_frame;
  /// External frames (submit_external()) that may be in flight at once.
  uint32_t max_external_in_flight = 2;
  /// Finds a destination given by name (Endpoint::named), at each connect, so a receiver that
  /// comes back on another address or port is found there (discovery::receiver_resolver():
  /// DNS-SD). Unset: a named destination fails, saying this program finds no names.
  std::function<Result<Endpoint>(const Endpoint& named)> resolve;
};

/// What the source knows of a frame.
struct FrameMeta {
  uint64_t sequence = 0;  ///< frame number from the source, dropped frames included
  /// Presentation time from the source; none: sequence / frame rate.
  std::optional<int64_t> pts_ns;
  /// When the frame became available (or was due, for a paced source); the sender's latency
  /// runs from here to the end of the write.
  std::chrono::steady_clock::time_point ready = std::chrono::steady_clock::now();
};

/// One destination as it stands, for status lines and summaries.
struct DestinationReport {
  enum class State { connecting, streaming, ended, failed };
  Endpoint endpoint;
  std::string transport;  ///< "tcp" or "verbs" once connected
  State state = State::connecting;
  std::optional<Error> error;  ///< why it failed (or why the last try to connect failed)
  stats::TransferStats stats;  ///< its frames, bytes, drops (no credit, or not up), latency
  uint32_t connections = 0;    ///< connections made (more than 1 after a reconnect)
  uint32_t registrations = 0;  ///< memory registrations its transport sends from (verbs; TCP 0)
  /// Of those, the ones made for it; the others it shares with a destination on the same
  /// RDMA device (registered once per device).
  uint32_t registrations_made = 0;
  std::string gpu_path;                ///< GPU memory: how frames leave it for this destination
  uint64_t audio_chunks = 0;           ///< audio batches sent (each one or more AudioChunks)
  uint64_t audio_samples = 0;          ///< samples per channel sent
  uint64_t audio_dropped_samples = 0;  ///< samples per channel not sent (not up, or no audio there)
  bool audio_refused = false;          ///< its receiver speaks a version without audio
};
std::string_view to_string(DestinationReport::State state);

class SenderSession {
 public:
  enum class Outcome {
    sent,            ///< written into (non-blocking: queued for) at least one receiver's ring
    dropped,         ///< no destination took it (live: no credit; none up) - counted
    receiver_ended,  ///< every receiver wants no more frames
    interrupted,     ///< the interrupt flag ended a wait; the frame was not sent everywhere
  };
  /// What pace() found.
  struct Pacing {
    enum class What { due, late, interrupted };
    What what = What::due;
    std::chrono::steady_clock::time_point due;  ///< when the frame was due
  };

  /// Connects to every destination and completes each handshake (concurrently). A
  /// destination that cannot be reached fails the connect with `require_all`, or when none
  /// could be (without `reconnect`); else it is dropped, or with `reconnect` tried again.
  static Result<std::unique_ptr<SenderSession>> connect(SenderSessionOptions options);
  ~SenderSession();  // ends the stream if end_stream() was not called
  SenderSession(const SenderSession&) = delete;
  SenderSession& operator=(const SenderSession&) = delete;

  /// The first destination's transport once connected ("tcp" before), for one-line logs.
  TransportKind kind() const;
  /// "host:port" of the first destination, or "host:port, host:port, ..." for several.
  std::string peer() const;

  /// Describes the stream (a later call changes the format) and waits for every connected
  /// destination's ring. Frames in flight go out first; the pool is (re)allocated with
  /// `pool_buffers` buffers of the format's size and registered. Returns the first
  /// destination's ring.
  Result<proto::RingInfo> start_stream(const proto::StreamStart& format, uint32_t pool_buffers);
  /// A pool buffer no transfer reads, waiting for one if need be (blocking mode); `index`
  /// asks for that buffer (0..pool_buffers-1), whose contents are as the last user left
  /// them. Non-blocking: never waits; an empty FrameBuffer when none is free (the frame is
  /// counted as dropped).
  Result<FrameBuffer> acquire_buffer(std::optional<uint32_t> index = std::nullopt);
  /// Buffer `index` if no transfer reads it now, else an empty FrameBuffer: never waits.
  Result<FrameBuffer> try_acquire_buffer(uint32_t index);
  /// For a source whose frames are one of `kinds` fixed contents, each written once into
  /// several buffers (the test pattern's phases): buffer i of a pool of a multiple of `kinds`
  /// holds contents i % kinds. The first free buffer holding `contents`, else (blocking mode)
  /// the first of them once it is free; as acquire_buffer() otherwise.
  Result<FrameBuffer> acquire_holding(uint32_t contents, uint32_t kinds);
  /// Sends a filled pool buffer to every destination. `buffer` is taken (emptied) unless the
  /// outcome is `interrupted`, when it stays the caller's to submit again (destinations that
  /// already have it do not get it twice).
  Result<Outcome> submit(FrameBuffer& buffer, const FrameMeta& meta);
  /// Sends memory the session does not own. `keep_while_sent` is held until no transfer
  /// reads `frame`; where a transport needs memory registered (verbs), `frame` is registered
  /// on first use and `keep_while_registered` is held as long as the connection, so the
  /// registration never outlives the memory. Blocking: returns once every destination has
  /// sent or dropped it. Submitting the same frame again after `interrupted` sends it only
  /// where it has not gone.
  Result<Outcome> submit_external(std::span<const std::byte> frame, const FrameMeta& meta,
                                  std::shared_ptr<const void> keep_while_sent,
                                  const std::shared_ptr<const void>& keep_while_registered);
  /// Whether submit_external() can send memory the session does not own as it lies: every
  /// destination reads any memory (TCP), or the memory can be registered for the
  /// connection's life (`registrable`: the caller holds it that long, as a buffer pool of its
  /// own does). Else the caller copies into a session buffer (acquire_buffer()).
  bool sends_in_place(bool registrable) const;
  /// Waits until frame `sequence` is due at the stream's rate, counted from the first call
  /// (the connections are kept alive meanwhile). A live stream's frame due longer ago than
  /// SendPolicy::max_lateness is `late`: the link was busy with earlier frames for that long,
  /// and sending it would only add delay; it is counted as dropped, and the receiver sees
  /// the gap.
  Result<Pacing> pace(uint64_t sequence);
  /// A frame the source itself could not deliver: counted as dropped.
  void skip(uint64_t sequence);
  /// Sends every frame in flight, then EndOfStream, and closes every connection. Idempotent.
  Result<void> end_stream();

  /// Adds an audio track (at most proto::kMaxAudioStreams); `format.stream_id` is the
  /// session's to number. Returns the track's number, 0, 1, ... Before or after
  /// start_stream(): a destination gets it once its ring is up.
  Result<uint32_t> start_audio(const proto::AudioStart& format);
  /// `samples` samples per channel of `track` in its format (planar: all of channel 0, then
  /// channel 1, ...), the first at `pts_ns` on the video's clock. Copied: `data` is the
  /// caller's again when this returns. Never waits in non-blocking mode.
  Result<void> submit_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                            std::span<const std::byte> data);
  /// Ends one track; the video and the other tracks go on.
  Result<void> end_audio(uint32_t track);
  /// How much of a track's samples are gathered before they go: a little audio latency
  /// (played audio is placed by its pts, not by when it came) for fewer messages.
  static constexpr std::chrono::milliseconds kAudioBatch{40};

  /// Every destination's receiver sent EndOfStream (also noticed while the caller was away).
  bool receiver_ended() const;
  /// Why the session cannot go on (its last destination lost, or any with require_all).
  std::optional<Error> failure() const;
  /// The source's counters: frames sent to at least one destination, and dropped (by every
  /// destination, late, or skipped), over every connection since connect().
  stats::TransferStats stats() const;
  /// Each destination as it stands.
  std::vector<DestinationReport> destinations() const;
  /// For a pool in GPU memory, the first destination's ladder decision, with the reason for
  /// each rung passed over; empty for host memory.
  std::string gpu_path() const;

 private:
  struct Impl;
  explicit SenderSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo
