// SPDX-License-Identifier: Apache-2.0
// The receiver core: one connection from accept to close, for every transport. It runs the
// handshake, admits the stream through its host, allocates and exposes rings, checks every
// message against the connection's state, hands frames to the stream's sink as leases,
// returns credits, keeps the peer alive and watches it, and closes the way the protocol
// says (docs/protocol.md §6, §7, §9). The transport supplies only a ReceiverChannel.
//
// Threads: run() on the connection's thread. stop() from any thread: it wakes every wait
// and the connection ends within a moment, telling the sender to stop. Leases release
// slots from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "channel/receiver_channel.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/ring.hpp"
#include "receiver/stream_audio.hpp"
#include "receiver/stream_record.hpp"

namespace rdmavideo::receiver {

class ConnectionCredits;

/// What a connection asks of the service that runs it.
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  /// Admits a stream whose first StreamStart passed every check and returns its sink and
  /// record; an error refuses it (the receiver is busy, the sink could not be made) and is
  /// sent to the peer.
  struct Admitted {
    StreamSink* sink = nullptr;
    std::shared_ptr<StreamRecord> record;
  };
  virtual Result<Admitted> admit(StreamInfo info) = 0;
  /// The connection has passed its handshake (Hello and, with a key, the proof) and is no
  /// stream yet: the host may shed an older such connection to bound how many there are.
  virtual void passed_handshake(const class ReceiverConnection& connection) { (void)connection; }
  /// The admitted stream is over and its connection closed: finish the sink and record it.
  virtual void release(const std::shared_ptr<StreamRecord>& record, StreamEnd end) = 0;
};

struct ConnectionConfig {
  uint32_t ring_size = 8;
  uint64_t max_frame_bytes = 1ull << 30;
  Timeouts timeouts;
  /// Where frames are handed to the sink: host memory, or a GPU (staged: the peer writes
  /// into a host ring and each frame is uploaded into the same slot of a GPU ring).
  memory::MemorySpec memory = memory::MemoryKind::host;
  std::optional<uint64_t> frames_per_stream;
  /// End a stream that sends no frame for this long; none: keepalives alone keep it.
  std::optional<std::chrono::milliseconds> idle_timeout;
  /// The key every sender must prove (ListenOptions::key); none: no authentication.
  std::shared_ptr<const auth::SharedKey> key;
  /// What rings are reserved from; none: no limit.
  std::shared_ptr<memory::Budget> budget;
  /// The highest protocol version this receiver offers (ListenOptions::max_version).
  uint16_t max_version = proto::kVersion;
  /// GPU memory: how the peer's writes reach it (rdmavideo/gpu_path.hpp).
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;
  /// ReceiverServiceOptions::format_check: what the sinks can take, asked of every StreamStart
  /// before its ring is reserved.
  std::function<Result<void>(const proto::StreamStart&)> format_check;
};

class ReceiverConnection {
 public:
  /// Where the connection is in its life; only ever moves forward.
  enum class Stage : uint8_t {
    handshake,  ///< taken, Hello (and with a key, the proof) not passed yet
    pending,    ///< past the handshake, no stream admitted yet (a paused rdmasink waits here)
    stream,     ///< a stream was admitted: it counts against max_streams
  };

  ReceiverConnection(std::unique_ptr<ReceiverChannel> channel, ConnectionConfig config,
                     ConnectionHost& host);
  ~ReceiverConnection();
  ReceiverConnection(const ReceiverConnection&) = delete;
  ReceiverConnection& operator=(const ReceiverConnection&) = delete;

  const std::string& peer() const { return peer_; }

  /// Runs the connection to its end. A failure before a stream was admitted (a bad Hello, a
  /// refused StreamStart) is returned; a stream's end goes to the host's release().
  Result<void> run();
  /// Thread-safe: ends the connection soon, telling the sender to stop.
  void stop();
  /// Thread-safe: ends a connection that is no stream at once, telling the peer nothing and
  /// draining nothing (it is shed to make room for another, or for descriptors).
  void shed();
  /// Thread-safe: where the connection is. Before `stream` it holds a descriptor and a thread
  /// but no ring.
  Stage stage() const { return stage_; }
  bool in_handshake() const { return stage_ == Stage::handshake; }

 private:
  struct Ring;

  Result<void> handshake(Clock::time_point deadline);
  // Leaves the handshake stage and tells the host (which may shed an older pending one).
  void passed_handshake();
  // The shared-key exchange after Hello (docs/protocol.md §4.1), then protect()s the channel.
  Result<void> authenticate(const proto::Hello& hello, const proto::HelloAck& ack,
                            Clock::time_point deadline);
  // The next message of the handshake, by `deadline`; `what` names what was awaited.
  Result<proto::Message> handshake_message(Clock::time_point deadline, std::string_view what);
  Result<void> start_stream(const proto::StreamStart& m);
  Result<void> frame_written(const proto::FrameWritten& m);
  // Sends under the send lock (credits may be sent from a consumer's thread meanwhile).
  Result<void> send(const proto::Message& message);
  Result<void> flush_credits();
  void keepalive_if_quiet();
  // Closes the connection on `error`: tells the peer where that makes sense, and returns the
  // error with who we talk to in front.
  Error fail(const Error& error, bool tell_peer = true);
  void finish_stream(StreamEnd end);

  std::unique_ptr<ReceiverChannel> channel_;
  ConnectionConfig config_;
  ConnectionHost& host_;
  std::string peer_;  // the channel's peer, with the RDMA device once established
  std::string who_;   // "recv host:port "name"" for messages
  std::shared_ptr<ConnectionCredits> credits_;  // shared with leases

  std::atomic<bool> stopping_{false};
  std::atomic<Stage> stage_{Stage::handshake};
  std::mutex send_mu_;                    // one message at a time on the channel
  Clock::time_point last_sent_;           // under send_mu_
  Clock::time_point last_heard_;          // connection thread only
  std::shared_ptr<Ring> ring_;            // the current ring; leases keep older ones
  uint32_t last_epoch_ = 0;               // the last StreamStart.ring_epoch accepted
  StreamSink* sink_ = nullptr;            // the admitted stream's sink
  std::shared_ptr<StreamRecord> record_;  // the admitted stream's record
  uint64_t frames_ = 0;                   // frames of this stream handed to the sink
  Clock::time_point last_frame_;          // the last frame's arrival, or the admission
  uint64_t next_sequence_ = 0;            // the sequence after the last frame's
  double cpu_start_ = 0;                  // this thread's CPU time at the stream's start
  bool closed_ = false;
  uint16_t version_ = proto::kMinVersion;  // negotiated in the handshake

  StreamAudio audio_;  // the stream's audio tracks
};

}  // namespace rdmavideo::receiver
