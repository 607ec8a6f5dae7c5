// SPDX-License-Identifier: Apache-2.0
// ReceiverService: receives many streams at once into rings of frame buffers and hands each
// stream's frames to a sink the application supplies.
//
// Lifecycle: start() listens (TCP, verbs, or both for `automatic`) and returns; an accept
// thread takes connections as they come, and each connection runs on a thread of its own,
// with its own rings and credits, so a slow or silent peer holds up nobody else. On a
// connection's first accepted StreamStart the stream is admitted (or refused: the receiver
// is busy) and the SinkFactory is asked for the stream's sink; every frame then goes to that
// sink as a FrameLease, and at the end the sink's finish() is told how the stream ended. A
// bad or dead peer ends its own stream only. stop() ends every stream (each sender is told)
// and waits for every sink to finish; it wakes every wait through the service's own stop
// signal, never through process signals.
//
// Threads: start(), stop() and the destructor from one controlling thread; reports(),
// local_endpoint(), describe() and counts from any thread. Sinks are called on their
// stream's connection thread (see StreamSink). The service owns its threads and listener;
// sinks are owned by the service from the factory until finish() has returned.
//
// Security and limits: with ListenOptions::key every sender proves the key in its handshake
// before anything about a ring leaves the receiver (docs/security.md); every ring and what
// sinks keep beside it comes out of one memory budget (max_memory); at most max_handshakes
// connections are in their handshake at once and at most max_pending past it with no stream,
// each cap shedding its oldest connection when full, and both fitted into the descriptor
// limit with a reserve kept for streams. When accept() runs out of descriptors anyway the
// listener backs off, sheds the oldest connection that is no stream, logs once a second and
// recovers by itself. A GPU memory kind is the `memory` the rings are allocated in.
//
// Audio (protocol version 3): a connection's audio streams are tracks of its video stream.
// They reach the video's sink (audio_started(), audio(), audio_ended()), are reported under
// it (StreamReport::audio), and count against nothing but the memory budget: each stream
// with audio reserves an audio queue (kAudioQueueBytes) from it, and packets its sink has
// not let go of beyond that (each its samples plus kAudioPacketOverheadBytes) are dropped
// and counted, as are those a sink does not take.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo {

/// A stream as the service admitted it.
struct StreamInfo {
  uint64_t number = 0;  ///< 1, 2, ... in order of admission
  std::string name;     ///< StreamStart.name as the sender sent it (may be empty)
  std::string peer;     ///< "host:port", with the RDMA device on verbs
  TransportKind transport = TransportKind::tcp;
  std::shared_ptr<const proto::StreamStart> format;  ///< the first format
  /// The service's memory budget: a sink reserves what it keeps beside the ring (a
  /// verifier's frames, conversion buffers) and fails the stream when it cannot.
  std::shared_ptr<memory::Budget> budget;
};

/// How a stream ended.
struct StreamEnd {
  enum class How {
    sender_ended,    ///< the sender sent EndOfStream
    frames_reached,  ///< the receiver's frame limit; the sender was told to stop
    stopped,         ///< the service was stopped; the sender was told to stop
    failed,          ///< the peer broke the protocol, died, or the sink failed
  };
  How how = How::sender_ended;
  std::optional<Error> error;  ///< why, when failed
  uint64_t sender_frames = 0;  ///< EndOfStream.frames, when the sender sent one
  uint64_t sender_dropped = 0;
  bool ok() const { return how != How::failed; }
};
std::string_view to_string(StreamEnd::How how);

/// One audio stream of a video stream: a track, as its sender started it.
struct AudioTrack {
  uint32_t index = 0;  ///< 0, 1, ... in the order the stream's tracks started
  proto::AudioStart format;
};

/// Samples of one track as they arrived, in the track's format. `queued` holds their place in
/// the stream's audio queue (counted in the memory budget) until the packet is dropped.
struct AudioPacket {
  uint32_t track = 0;    ///< AudioTrack::index
  int64_t pts_ns = 0;    ///< of the first sample, on the video's pts clock
  uint32_t samples = 0;  ///< per channel
  std::vector<std::byte> data;
  std::shared_ptr<const void> queued;
};

/// Bytes a stream's audio may hold queued at its sink at once (about 2.7 s of 8 channels of
/// 48 kHz float); reserved from the memory budget when its first track starts.
inline constexpr uint64_t kAudioQueueBytes = 4ull << 20;
/// What a packet costs that queue beyond its samples: the packet, its allocations and the
/// sink's queue entry (about 150 bytes measured; rounded up). A packet is counted by what it
/// holds in memory, so a sender of one-sample chunks fills the queue as soon as one of
/// whole chunks does (2.3 M such chunks took 334 MB when only their samples were counted).
inline constexpr uint64_t kAudioPacketOverheadBytes = 256;

/// The application's per-stream consumer.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  /// Every frame of the stream, in order, on the stream's connection thread. The sink owns
  /// the lease: dropping it returns the slot's credit. Must not block: queue the frame and
  /// work on it on a thread of the sink's own. The ring bounds how many frames a sink can
  /// hold; holding them all holds the sender back.
  virtual void frame(FrameLease frame) = 0;
  /// Not nullopt once the sink cannot go on (a disk write failed). The service then ends
  /// the stream, telling the sender why. Polled after every frame and about every 200 ms.
  virtual std::optional<Error> failure() const { return std::nullopt; }
  /// The stream is over. Waits for the sink's own work and finalises it (a recording's
  /// trailer); an error makes the stream count as failed. Called once, on the connection
  /// thread, after the connection has closed.
  virtual Result<void> finish(const StreamEnd& end) = 0;
  /// The service is stopping: give up waiting on what does not move (an output pipe nobody
  /// reads), so finish() returns soon; what cannot be written is reported, not waited for.
  /// From the stopping thread, possibly while finish() runs; the default does nothing.
  virtual void abort() {}
  /// Audio (all on the connection thread, never blocking, like frame()): a track of this
  /// stream starts; its samples, in order; it ends (also implied by finish()). A sink that
  /// takes no audio keeps the defaults: audio() returning false counts the packet dropped.
  virtual void audio_started(const AudioTrack& track) { (void)track; }
  // By value, as a sink that takes it moves it; this default only drops it.
  virtual bool audio(AudioPacket packet) {  // NOLINT(performance-unnecessary-value-param)
    (void)packet;
    return false;
  }
  virtual void audio_ended(uint32_t track) { (void)track; }
};

/// One audio track of a stream, for status lines and summaries.
struct AudioReport {
  AudioTrack track;
  uint64_t chunks = 0;   ///< AudioChunks received
  uint64_t samples = 0;  ///< samples per channel received
  uint64_t dropped = 0;  ///< chunks dropped: the queue full, or the sink took no audio
  uint64_t dropped_samples = 0;
  /// The track's pts minus the video's at the arrival of each chunk (the last frame's pts
  /// and its arrival), in ms: how far the audio travels ahead of (>0) or behind the picture.
  double av_offset_ms = 0;      ///< the last chunk's
  double av_offset_max_ms = 0;  ///< the largest magnitude so far, with its sign
  bool ended = false;           ///< AudioEnd received
};

/// Makes the sink for a newly admitted stream; an error refuses the stream, telling the
/// sender why. Called on the stream's connection thread.
using SinkFactory = std::function<Result<std::unique_ptr<StreamSink>>(const StreamInfo& info)>;

/// A stream's state and counters, for status lines and summaries.
struct StreamReport {
  enum class State { running, ended, failed };
  StreamInfo info;
  proto::StreamStart format;   ///< the current (or last) format
  stats::TransferStats stats;  ///< frames, bytes, dropped, latency, seconds; cpu: see below
  double cpu_seconds = 0;      ///< the stream's connection thread's CPU time
  State state = State::running;
  std::optional<StreamEnd> end;  ///< once ended or failed
  uint32_t ring_slots = 0;       ///< slots of the current ring
  uint32_t slots_filled = 0;     ///< of them, holding frames the sink has not let go
  std::string memory = "host";   ///< where frames are handed to the sink: "host", "cuda:0"
  std::string gpu_path;          ///< GPU memory: how frames get there, with the reasons
  std::optional<stats::GpuRdmaWrites>
      gpu_rdma_writes;             ///< GPU memory: the NIC's writes and its reads
  std::vector<AudioReport> audio;  ///< the stream's audio tracks, in order
  uint16_t version = 0;            ///< the protocol version negotiated
};

/// Streams that ended long ago, folded together: the service keeps the reports of every
/// running stream and of the last `kept_ended_streams` that ended, and folds older ones into
/// this, so a receiver that serves for months holds bounded memory.
struct FoldedStreams {
  uint64_t count = 0;          ///< streams folded in
  uint64_t failed = 0;         ///< of them, how many failed
  stats::TransferStats stats;  ///< their counters added up (start: the earliest)
};

struct ReceiverServiceOptions {
  TransportKind transport = TransportKind::automatic;
  ListenOptions listen;
  /// Where frames are handed to sinks: host memory, or GPU memory (FrameLease::memory_kind()
  /// says which; FrameLease::to_host() brings one back for a sink that needs the CPU).
  memory::MemorySpec memory = memory::MemoryKind::host;
  /// For GPU memory: how the peer's writes reach it (dma-buf, peer memory, staged; auto
  /// takes the first that works), decided per stream.
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;
  uint32_t max_streams = 1;  ///< streams served at once; one more is refused as busy
  /// Streams admitted over the service's life before it refuses all others; 0: no limit.
  uint64_t stream_limit = 0;
  std::optional<uint64_t> frames_per_stream;  ///< end each stream after this many frames
  /// End a stream that sends no frame for this long (its sender is told); none by default,
  /// as a paused GStreamer sender legitimately sends only keepalives.
  std::optional<std::chrono::milliseconds> idle_timeout;
  /// Connections still in their handshake (no Hello yet, or, with a key, no proof) at once;
  /// one more drops the oldest of them, so idle or trickling peers never lock a real sender
  /// out nor use up descriptors. Each also ends at the handshake deadline (Timeouts.connect).
  uint32_t max_handshakes = 64;
  /// Connections past their handshake with no stream yet (a paused rdmasink connects long
  /// before its caps, so they have no deadline) at once; one more sheds the oldest of them.
  /// With a key they have all proved it, so an anonymous peer never sheds one.
  uint32_t max_pending = 64;
  /// Descriptors the front end needs beside the service's (its metrics endpoint's
  /// connections, say). The service keeps a reserve for the streams it admits and fits its
  /// connection caps into what the descriptor limit (RLIMIT_NOFILE) leaves (limits()).
  uint32_t front_end_descriptors = 0;
  /// Reports of ended streams kept one by one (reports()); older ones are folded together
  /// (folded_streams()).
  size_t kept_ended_streams = 256;
  /// The most memory all streams may hold at once (rings, and what sinks reserve); a
  /// StreamStart beyond it is refused, naming the request and the limit. nullopt: half of
  /// physical memory, and on verbs no more than the locked-memory limit unless the process
  /// may lock more (memory::default_budget()).
  std::optional<uint64_t> max_memory;
  SinkFactory sink_factory;
  /// Checks every StreamStart, the first and each later one, against what the front end's
  /// sinks can take (an encoder's largest frame rate or size), before a ring is reserved or
  /// the stream admitted; an error refuses that StreamStart and should name the field. On
  /// the connection thread. None: every format the protocol allows is taken.
  std::function<Result<void>(const proto::StreamStart& format)> format_check;
  /// Called on the connection thread once a stream's sink has finished.
  std::function<void(const StreamReport& report)> on_stream_end;
  /// Called (on a connection thread) when an ended stream's report leaves reports() for
  /// folded_streams(): what the front end keeps per stream can be folded too.
  std::function<void(const StreamReport& report)> on_stream_folded;
};

class ReceiverService {
 public:
  /// Listens and starts accepting. The error names the address and the cause.
  static Result<std::unique_ptr<ReceiverService>> start(ReceiverServiceOptions options);
  ~ReceiverService();  // stop()s
  ReceiverService(const ReceiverService&) = delete;
  ReceiverService& operator=(const ReceiverService&) = delete;

  /// The bound address, with the real port when listening on port 0.
  Endpoint local_endpoint() const;
  /// "tcp", "verbs" or "tcp+verbs".
  std::string describe() const;

  /// Stops accepting, ends every stream (its sender is told to stop), abort()s every sink
  /// and waits for every sink to finish. Idempotent.
  void stop();

  /// Every stream running, and the last `kept_ended_streams` that ended, in order of
  /// admission.
  std::vector<StreamReport> reports() const;
  /// The ended streams no longer in reports(), added up.
  FoldedStreams folded_streams() const;
  /// Streams over (ended or failed) so far, counted once their on_stream_end and
  /// on_stream_folded calls are made.
  uint64_t ended_streams() const;
  /// The memory budget every stream draws from.
  const memory::Budget& budget() const;
  /// Connections that ended before they became a stream, by reason: the ErrorCode's name
  /// ("auth_failed", "resource" for busy or over budget, "protocol", "timeout", ...), and
  /// "handshake_dropped" for those dropped to make room for a newer handshake.
  std::vector<std::pair<std::string, uint64_t>> refusals() const;
  /// Connections taken that have not passed their handshake yet (at most max_handshakes).
  uint32_t connections_in_handshake() const;
  /// Connections past their handshake that are no stream yet (at most max_pending).
  uint32_t connections_pending() const;
  /// accept() failures for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)
  /// so far: the listener backs off and sheds connections that are no stream meanwhile.
  uint64_t accept_failures() const;
  /// The caps the service runs with, after fitting them into the descriptor limit.
  struct Limits {
    uint32_t max_handshakes = 0;
    uint32_t max_pending = 0;
    uint64_t descriptor_limit = 0;  ///< RLIMIT_NOFILE's soft limit at start
    uint64_t reserved = 0;          ///< of it, kept for streams, the process and the front end
  };
  Limits limits() const;

 private:
  struct Impl;
  explicit ReceiverService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo
