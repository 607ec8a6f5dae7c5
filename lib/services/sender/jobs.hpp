// SPDX-License-Identifier: Apache-2.0
// What a sender session's parts hand one another: a frame on its way to the destinations
// (Dispatch) and what became of it at each, a destination's jobs (a frame or audio), and the
// timings they share.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "buffer_pool.hpp"
#include "rdmavideo/destination_report.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"
#include "rdmavideo/stats.hpp"

namespace rdmavideo::sender {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the service thread looks at the connection, and how long a wait slices itself
// to notice the interrupt flag.
inline constexpr milliseconds kTick(200);

using DestinationState = DestinationReport::State;

// Most destinations a session sends to: kMaxDestinations (a frame's destinations are a 64-bit
// mask). Reconnect back-off: doubling from the first to the most.
inline constexpr milliseconds kFirstRetry(500);
inline constexpr milliseconds kMostRetry(5000);

// What is worth another try: a wrong or missing key, or a receiver that cannot take this
// format, will say the same next time.
inline bool worth_retrying(const Error& error) {
  return error.code() != ErrorCode::auth_failed && error.code() != ErrorCode::unsupported &&
         error.code() != ErrorCode::invalid_argument;
}

// One frame on its way to the destinations, and what became of it at each.
struct Dispatch {
  std::mutex mu;
  std::condition_variable cv;
  uint32_t remaining = 0;    // destinations yet to send or drop it
  uint64_t sent = 0;         // destinations that sent it (mask)
  uint64_t interrupted = 0;  // destinations whose wait the interrupt ended (mask)
  uint64_t ended = 0;        // destinations whose receiver wants no more (mask)
  uint64_t sent_before = 0;  // destinations that had it from an earlier, interrupted submit
  size_t bytes = 0;
  Clock::time_point ready;
  std::optional<stats::DropCause> cause;       // why the first destination that dropped it did
  std::function<void(Dispatch&)> on_complete;  // once every destination is done with it
};

enum class Took { sent, dropped, ended, interrupted };

// Audio batches (kAudioBatch each) of one track a destination's queue holds at most.
inline constexpr size_t kMostQueuedAudio = 64;
// Live frames a destination's queue holds at most (besides the one it is sending).
inline constexpr size_t kLiveBacklog = 2;
// How long ending a live stream waits for the destinations' queues to empty.
inline constexpr std::chrono::seconds kLiveDrain{5};

// Samples of one audio track for the destinations' queues, shared by them all.
struct AudioJob {
  // start: the track's AudioStart, which goes at once where the ring is up (a receiver's
  // recording knows its tracks by the first frame), not with the track's first samples.
  enum class What { start, samples, end };
  What what = What::samples;
  uint32_t track = 0;
  int64_t pts_ns = 0;
  uint32_t samples = 0;
  std::vector<std::byte> data;
};

// A frame (or audio) for one destination's queue.
struct Job {
  std::shared_ptr<const AudioJob> audio;   // set: this job is audio, nothing below is used
  std::span<const std::byte> frame;        // the frame as it lies (pool buffer, external, GPU)
  std::span<const std::byte> staged;       // its pinned copy, for a destination that stages
  std::shared_ptr<FrameHold> hold;         // the frame's claim
  std::shared_ptr<FrameHold> staged_hold;  // the staging slot's claim
  proto::FrameWritten info;                // sequence, pts, checksum
  uint64_t generation = 0;                 // the stream format it belongs to
  std::shared_ptr<Dispatch> dispatch;
};

}  // namespace rdmavideo::sender
