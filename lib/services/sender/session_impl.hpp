// SPDX-License-Identifier: Apache-2.0
// A sender session's insides, shared by its parts: the session facade (session.cpp), a
// destination's thread (destination.cpp), fan-out dispatch (dispatch.cpp) and audio
// gathering (session_audio.cpp). Included by those alone.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "buffer_pool.hpp"
#include "gpu/stager.hpp"
#include "rdmavideo/checksum.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/sender_session.hpp"
#include "rdmavideo/signals.hpp"
#include "sender/sender_core.hpp"

namespace rdmavideo {
namespace session_detail {

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

}  // namespace session_detail

// The session's parts see its own words unqualified (this header is theirs alone).
using namespace session_detail;  // NOLINT(google-build-using-namespace)

struct SenderSession::Impl {
  // One receiver: its connection (a sender core), its queue of frames, and the thread that
  // sends them, reconnects, and keeps the connection alive.
  struct Destination {
    Impl& session;
    uint32_t index;  // its bit in a Dispatch's masks
    Endpoint endpoint;
    std::string who;   // "send host:port" for messages
    std::string peer;  // under mu: "host:port", with the RDMA device once connected over verbs

    std::mutex mu;
    std::condition_variable cv;
    std::deque<Job> queue;  // under mu
    bool busy = false;      // under mu: a job taken and not finished
    bool stop = false;      // under mu: the session is ending
    bool end = false;       // under mu: send EndOfStream and close
    // Written by the thread under mu, read by others under it: the core (so a caller can wake
    // its channel) and whether frames reach it.
    std::unique_ptr<sender::SenderCore> core;
    // Held by whoever drives the core: this thread, or in blocking mode the caller's, which
    // sends to the first destination itself (a hand-off to a thread and back costs a frame
    // two wake-ups, a quarter of a 4 MB frame's time on a virtual machine).
    std::mutex core_mu;
    bool direct = false;  // blocking mode's first destination: the caller sends to it
    bool up = false;      // connected and streaming the current generation
    bool staged = false;  // GPU frames go to it from the pinned copy
    uint64_t joined = 0;  // the generation its ring is for
    std::optional<proto::RingInfo> ring;
    std::thread thread;

    // The thread's own.
    std::shared_ptr<detail::BufferPool> registered_pool;  // pool memory its channel has
    std::shared_ptr<gpu::Stager> registered_stager;
    milliseconds backoff = kFirstRetry;
    bool retry = true;  // reconnecting is still worth it
    // Under core_mu: audio tracks whose AudioStart went on the current connection (tracks
    // start in order, so a count), and whether one line said its receiver takes no audio.
    size_t audio_started = 0;
    bool audio_refusal_said = false;

    mutable std::mutex report_mu;
    DestinationReport report;  // under report_mu

    Destination(Impl& s, uint32_t i, Endpoint e)
        : session(s),
          index(i),
          endpoint(std::move(e)),
          who(fmt::format("send {}", endpoint.to_string())),
          peer(endpoint.to_string()) {
      report.endpoint = endpoint;
    }

    DestinationState state() const {
      std::lock_guard lock(report_mu);
      return report.state;
    }
    void set_state(DestinationState state, std::optional<Error> error = std::nullopt) {
      std::lock_guard lock(report_mu);
      report.state = state;
      if (error) report.error = std::move(error);
    }
    uint32_t report_connections() const {
      std::lock_guard lock(report_mu);
      return report.connections;
    }
    template <typename F>
    void count(F&& f) {
      std::lock_guard lock(report_mu);
      f(report.stats);
    }
    // The memory registrations its connection sends from, for the report (the caller drives
    // the core).
    void note_registrations() {
      std::lock_guard lock(report_mu);
      report.registrations = core->channel().registrations();
      report.registrations_made = core->channel().registrations_made();
    }

    // The receiver wants no more frames: nothing more is sent here.
    void mark_ended() {
      {
        std::lock_guard lock(mu);
        up = false;
      }
      set_state(DestinationState::ended);
      std::lock_guard lock(session.stream_mu);
      session.stream_cv.notify_all();
    }
    void run();  // the destination's thread: serve() with exceptions stopped
    void serve(bool& first);
    bool connect();
    Result<void> join(uint64_t stream_generation, const proto::StreamStart& stream_format,
                      const std::shared_ptr<detail::BufferPool>& stream_pool);
    Result<void> register_pool(const std::shared_ptr<detail::BufferPool>& new_pool);
    void send(Job& job);
    enum class Retry { if_worth_it, never };
    void lost(const Error& error, Retry may = Retry::if_worth_it);
    /// After a failed connect or a lost connection: connect again after the back-off
    /// (--reconnect, and an error worth another try), or give this destination up.
    void try_again_or_give_up(const Error& error, Retry may = Retry::if_worth_it);
    void finish_job(Job& job, Took took, stats::DropCause cause = stats::DropCause::not_up);
    // A frame job's part in its dispatch, as finish_job() without touching `busy` (a job
    // that never left the queue).
    void settle(Job& job, Took took, stats::DropCause cause = stats::DropCause::not_up);
    // Everything queued, dropped and counted (a live stream ending while it is behind).
    void drop_queued();
    void end_stream();
    // Audio, under core_mu: AudioStart for every track not started on this connection yet,
    // then the job's samples or end. Counted in the report either way.
    void send_audio(const AudioJob& job);
    void start_audio_tracks();
  };

  SenderSessionOptions options;
  std::shared_ptr<detail::Returns> returns = std::make_shared<detail::Returns>();
  std::vector<std::unique_ptr<Destination>> destinations;
  std::shared_ptr<cuda::Device> gpu;  // the pool's GPU, for GPU memory

  // The stream, as destinations join it (under stream_mu).
  mutable std::mutex stream_mu;
  std::condition_variable stream_cv;  // a destination joined, failed or finished a job
  std::optional<proto::StreamStart> format;
  std::shared_ptr<detail::BufferPool> pool;
  std::shared_ptr<gpu::Stager> stager;  // made when the first destination stages
  std::atomic<uint64_t> generation{0};  // StreamStarts so far (changed under stream_mu)
  // How late a live frame may still go (SendPolicy::max_lateness, or max_lateness_periods of
  // the current format's frame periods), set with the format.
  std::atomic<Clock::rep> lateness{0};
  Clock::duration max_lateness() const { return Clock::duration(lateness.load()); }
  // The stream's pool as it is now (start_stream() replaces it); null before the first.
  std::shared_ptr<detail::BufferPool> current_pool() const {
    std::lock_guard lock(stream_mu);
    return pool;
  }

  // The caller's.
  std::vector<std::weak_ptr<FrameHold>> slot_holds;  // per staging slot: alive while read
  std::vector<std::byte> checksum_scratch;           // a GPU frame, downloaded to hash it
  std::shared_ptr<std::atomic<uint32_t>> external_in_flight =
      std::make_shared<std::atomic<uint32_t>>(0);
  std::optional<Clock::time_point> pace_start;
  bool ended = false;     // end_stream() ran
  bool counting = false;  // the first frame was offered: counters run
  // An interrupted submit_external(): the frame and where it has gone already.
  const std::byte* interrupted_frame = nullptr;
  uint64_t interrupted_sequence = 0;
  uint64_t interrupted_sent = 0;

  // Audio tracks (under stream_mu): their formats, in order, with stream ids 2, 3, ...
  std::vector<proto::AudioStart> audio_tracks;
  // Samples gathered per track before they go (kAudioBatch), under audio_mu: planar tracks
  // keep each channel's samples apart until the batch is laid out.
  struct Gathered {
    int64_t pts_ns = 0;
    uint32_t samples = 0;
    std::vector<std::vector<std::byte>> channels;  // planar: one per channel; else one
  };
  std::mutex audio_mu;
  std::vector<Gathered> gathered;  // by track

  std::atomic<bool> connected{false};  // connect() has returned the session
  mutable std::mutex state_mu;         // what other threads read
  stats::TransferStats counters;
  std::optional<Error> failure;
  std::optional<std::string> first_gpu_path;

  bool interrupted() const { return options.interrupt && options.interrupt->load(); }
  bool stop_flag() const { return options.connect.stop && options.connect.stop->load(); }

  // The session cannot go on: every call from now on returns `error` (the caller says it).
  void fail_session(const Error& error) {
    {
      std::lock_guard lock(state_mu);
      if (failure) return;
      failure = error;
    }
    // During connect() the failure is connect()'s to return, not a callback's to report.
    if (options.on_failure && connected) options.on_failure(error);
  }

  // A destination was lost for good. The session goes on while another can be sent to, and
  // says so in one line; else (or with require_all) it fails with the destination's error.
  void destination_lost(const Error& error) {
    if (options.require_all) {
      if (destinations.size() > 1) {
        return fail_session(
            Error(error.code(), fmt::format("{} ({})", error.message(), kEveryDestinationRequired),
                  error.sys_errno()));
      }
      return fail_session(error);
    }
    size_t others = 0;
    for (const auto& d : destinations) {
      std::lock_guard lock(d->report_mu);
      const auto state = d->report.state;
      // Connecting for the first time, or again under --reconnect.
      const bool coming =
          state == DestinationState::connecting && (!d->report.error || options.reconnect);
      if (state == DestinationState::streaming || state == DestinationState::ended || coming)
        ++others;
    }
    if (others == 0) return fail_session(error);
    log().error("{}; {} other destination{} go{} on", error.message(), others,
                others == 1 ? "" : "s", others == 1 ? "es" : "");
  }

  // Every destination done with a frame: the source's counters.
  void complete(Dispatch& d) {
    std::lock_guard lock(state_mu);
    if (d.sent & ~d.sent_before) {
      if (!d.sent_before) {
        ++counters.frames;
        counters.bytes += d.bytes;
        counters.latency.record_ns(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - d.ready).count()));
      }
    } else if (!d.interrupted && !d.sent_before) {
      counters.count_drop(d.cause.value_or(stats::DropCause::not_up));
    }
  }

  // A frame no destination was offered (late, skipped, no buffer free, nobody up): every
  // destination that has not had it counts it, and the source does unless one had it (an
  // interrupted frame offered again, `had_it` the destinations it reached).
  bool live_fan_out() const { return options.policy.live && destinations.size() > 1; }

  // A live frame sent while a destination is away (reconnecting under --reconnect) is one it
  // missed: counted as dropped for it, as a frame it had no credit for is.
  void count_missed(const std::vector<Destination*>& targets) {
    for (auto& d : destinations) {
      if (std::find(targets.begin(), targets.end(), d.get()) != targets.end()) continue;
      if (d->state() != DestinationState::connecting || d->report_connections() == 0) continue;
      d->count([](stats::TransferStats& s) { s.count_drop(stats::DropCause::not_up); });
    }
  }

  void count_source_drop(stats::DropCause cause, uint64_t had_it = 0) {
    if (!had_it) {
      std::lock_guard lock(state_mu);
      counters.count_drop(cause);
    }
    for (auto& d : destinations) {
      if ((had_it >> d->index) & 1) continue;
      d->count([cause](stats::TransferStats& s) { s.count_drop(cause); });
    }
  }

  // Every destination is over, at least one because its receiver wants no more frames (the
  // others failed): nothing more can be sent.
  bool all_receivers_ended() const {
    bool any = false;
    for (const auto& d : destinations) {
      const auto state = d->state();
      if (state == DestinationState::ended)
        any = true;
      else if (state != DestinationState::failed)
        return false;
    }
    return any;
  }

  void start_counting() {
    if (counting) return;
    // Rates and CPU count from the first frame, not from connecting or preparing a source.
    counting = true;
    std::lock_guard lock(state_mu);
    counters.start = Clock::now();
    counters.cpu_start = stats::process_cpu_seconds();
  }

  // Waits until no destination has a frame queued or in hand (frames in flight go first).
  // Live to several receivers, at most kLiveDrain: what a receiver that is behind still has
  // queued then is dropped for it, counted, so that ending the stream never waits on the
  // slowest one's pace; the frame it is being sent goes on to the end. One receiver gets
  // all it was given (the pool and the audio bound keep that short).
  void drain_queues() {
    std::unique_lock lock(stream_mu);
    const auto drained = [&] {
      return std::all_of(destinations.begin(), destinations.end(), [](const auto& d) {
        std::lock_guard inner(d->mu);
        return d->queue.empty() && !d->busy;
      });
    };
    if (!live_fan_out()) return stream_cv.wait(lock, drained);
    if (stream_cv.wait_for(lock, kLiveDrain, drained)) return;
    lock.unlock();
    for (auto& d : destinations) d->drop_queued();
  }

  // Copies a GPU frame into the next pinned slot, once no transfer reads that slot.
  Result<std::pair<std::span<const std::byte>, std::shared_ptr<FrameHold>>> stage(
      std::span<const std::byte> frame) {
    const uint32_t slot = stager->next();
    if (slot_holds.size() < slot + 1) slot_holds.resize(slot + 1);
    uint64_t seen = returns->count();
    while (!slot_holds[slot].expired()) {
      if (auto f = failure_now()) return Unexpected(*f);
      seen = wait_for_returns(seen);
    }
    auto copy = stager->download(slot, cuda::address(frame.data()), frame.size());
    if (!copy) return Unexpected(copy.error().context("send"));
    auto hold = std::make_shared<FrameHold>(returns);
    slot_holds[slot] = hold;
    std::lock_guard lock(state_mu);
    ++counters.gpu_copies;
    return std::pair(*copy, hold);
  }

  // Waits for memory to come back (a buffer, a slot, an external frame's place): in blocking
  // mode the caller drives its own destination's completions meanwhile; the others' threads
  // drive theirs. Returns the returns' count to wait from next.
  uint64_t wait_for_returns(uint64_t seen) {
    Destination& first = *destinations.front();
    if (first.direct) {
      std::lock_guard cl(first.core_mu);
      if (first.core && first.core->in_flight() > 0) {
        if (auto ok = first.core->retire_oldest(); !ok) first.lost(ok.error());
        return returns->count();
      }
    }
    return returns->wait(seen, kTick);
  }

  std::optional<Error> failure_now() const {
    std::lock_guard lock(state_mu);
    return failure;
  }

  // Audio for every destination: sent at once to the caller's own (blocking mode), queued
  // for the others that are up; those not up count it dropped.
  Result<void> queue_audio(std::shared_ptr<const AudioJob> audio);
  std::shared_ptr<AudioJob> take_gathered(uint32_t track);
  // Every track's gathered samples go now (the stream ends).
  Result<void> flush_audio();

  // Hands a frame to every destination that is up and has not had it (`sent_before`), and
  // in blocking mode waits until each has sent or dropped it.
  Result<Outcome> dispatch(std::span<const std::byte> frame, const FrameMeta& meta,
                           std::shared_ptr<FrameHold> hold, bool in_gpu, uint64_t sent_before,
                           uint64_t* sent_now);
};

}  // namespace rdmavideo
