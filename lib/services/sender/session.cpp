// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/sender_session.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "gpu/stager.hpp"
#include "rdmavideo/checksum.hpp"
#include "rdmavideo/log.hpp"
#include "sender/sender_core.hpp"
#include "util/signals.hpp"

namespace rdmavideo {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
// How often the service thread looks at the connection, and how long a wait slices itself
// to notice the interrupt flag.
constexpr milliseconds kTick(200);
}  // namespace

namespace detail {

// Where the caller waits for memory to come back (a pool buffer, a staging slot, an external
// frame's place): whoever returns it, on whichever thread, notifies.
class Returns {
 public:
  void notify() {
    {
      std::lock_guard lock(mu_);
      ++count_;
    }
    cv_.notify_all();
  }
  // Waits until something returns after `seen` (or `wait` passes); the new count.
  uint64_t wait(uint64_t seen, std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, wait, [&] { return count_ != seen; });
    return count_;
  }
  uint64_t count() {
    std::lock_guard lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t count_ = 0;
};

// The buffers of one stream format: one region, `count` buffers at a page-rounded stride.
// A buffer is free, lent (a FrameBuffer holds it), or in flight (the session holds it until
// no transfer reads it). FrameBuffers release from any thread, so state is under a mutex.
class BufferPool {
 public:
  enum class State : uint8_t { free, lent, in_flight };

  BufferPool(std::shared_ptr<memory::Region> region, uint32_t count, size_t frame_bytes,
             size_t stride, std::shared_ptr<Returns> returns)
      : region_(std::move(region)),
        frame_bytes_(frame_bytes),
        stride_(stride),
        returns_(std::move(returns)),
        states_(count, State::free) {}

  uint32_t count() const { return static_cast<uint32_t>(states_.size()); }
  const std::shared_ptr<memory::Region>& region() const { return region_; }
  size_t offset(uint32_t index) const { return index * stride_; }
  std::span<std::byte> buffer(uint32_t index) const {
    return region_->bytes().subspan(index * stride_, frame_bytes_);
  }

  State state(uint32_t index) {
    std::lock_guard lock(mu_);
    return states_[index];
  }
  // A free buffer (the asked-for one, or any), now lent; nullopt when there is none.
  std::optional<uint32_t> lend(std::optional<uint32_t> index) {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < states_.size(); ++i) {
      if ((!index || *index == i) && states_[i] == State::free) {
        states_[i] = State::lent;
        return i;
      }
    }
    return std::nullopt;
  }
  bool all_lent() {
    std::lock_guard lock(mu_);
    return std::all_of(states_.begin(), states_.end(), [](State s) { return s == State::lent; });
  }
  void set(uint32_t index, State state) {
    {
      std::lock_guard lock(mu_);
      states_[index] = state;
    }
    if (state == State::free) returns_->notify();
  }

 private:
  std::shared_ptr<memory::Region> region_;
  size_t frame_bytes_;
  size_t stride_;
  std::shared_ptr<Returns> returns_;  // told when a buffer is free again
  std::mutex mu_;
  std::vector<State> states_;  // under mu_
};

}  // namespace detail

FrameBuffer::FrameBuffer(FrameBuffer&& other) noexcept { *this = std::move(other); }

FrameBuffer& FrameBuffer::operator=(FrameBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    bytes_ = std::exchange(other.bytes_, {});
    index_ = other.index_;
    kind_ = other.kind_;
    sent_to_ = std::exchange(other.sent_to_, 0);
  }
  return *this;
}

FrameBuffer::~FrameBuffer() { reset(); }

Result<void> FrameBuffer::write(std::span<const std::byte> from, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "write into an empty FrameBuffer");
  if (offset > bytes_.size() || from.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "write of {} bytes at {} into a frame of {}",
                      from.size(), offset, bytes_.size());
  }
  return memory::write(*pool_->region(), pool_->offset(index_) + offset, from);
}

Result<void> FrameBuffer::read(std::span<std::byte> to, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "read from an empty FrameBuffer");
  if (offset > bytes_.size() || to.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "read of {} bytes at {} from a frame of {}",
                      to.size(), offset, bytes_.size());
  }
  return memory::read(*pool_->region(), pool_->offset(index_) + offset, to);
}

void FrameBuffer::reset() noexcept {
  if (pool_) pool_->set(index_, detail::BufferPool::State::free);
  pool_.reset();
  bytes_ = {};
  sent_to_ = 0;
}

// What a frame in flight holds until every core that has it says no transfer reads it: a pool
// buffer's return, an external frame's owner, a staging slot. Armed once the frame was
// handed to a destination, so a frame no destination took returns nothing (the buffer stays
// the caller's, or is returned by the caller).
class FrameHold {
 public:
  FrameHold(std::shared_ptr<detail::Returns> returns, std::function<void()> on_done = {},
            std::shared_ptr<const void> keep = nullptr)
      : returns_(std::move(returns)), on_done_(std::move(on_done)), keep_(std::move(keep)) {}
  ~FrameHold() {
    if (armed_ && on_done_) on_done_();
    keep_.reset();
    returns_->notify();
  }
  FrameHold(const FrameHold&) = delete;
  FrameHold& operator=(const FrameHold&) = delete;
  void arm() { armed_ = true; }

 private:
  std::shared_ptr<detail::Returns> returns_;
  std::function<void()> on_done_;
  std::shared_ptr<const void> keep_;
  std::atomic<bool> armed_{false};
};

namespace {

using DestinationState = DestinationReport::State;

// Most destinations a session sends to (a frame's destinations are a 64-bit mask).
constexpr size_t kMaxDestinations = 64;
// Reconnect back-off: doubling from the first to the most.
constexpr milliseconds kFirstRetry(500);
constexpr milliseconds kMostRetry(5000);

// What is worth another try: a wrong or missing key, or a receiver that cannot take this
// format, will say the same next time.
bool worth_retrying(const Error& error) {
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
  std::function<void(Dispatch&)> on_complete;  // once every destination is done with it
};

enum class Took { sent, dropped, ended, interrupted };

// Audio batches (kAudioBatch each) of one track a destination's queue holds at most.
constexpr size_t kMostQueuedAudio = 64;
// Live frames a destination's queue holds at most (besides the one it is sending).
constexpr size_t kLiveBacklog = 2;
// How long ending a live stream waits for the destinations' queues to empty.
constexpr std::chrono::seconds kLiveDrain{5};

// Samples of one audio track for the destinations' queues, shared by them all.
struct AudioJob {
  enum class What { samples, end };
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

}  // namespace

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
    void run();
    bool connect();
    Result<void> join(uint64_t stream_generation, const proto::StreamStart& stream_format,
                      const std::shared_ptr<detail::BufferPool>& stream_pool);
    Result<void> register_pool(const std::shared_ptr<detail::BufferPool>& new_pool);
    void send(Job& job);
    void lost(const Error& error);
    /// After a failed connect or a lost connection: connect again after the back-off
    /// (--reconnect, and an error worth another try), or give this destination up.
    void try_again_or_give_up(const Error& error);
    void finish_job(Job& job, Took took);
    // A frame job's part in its dispatch, as finish_job() without touching `busy` (a job
    // that never left the queue).
    void settle(Job& job, Took took);
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
        return fail_session(Error(error.code(),
                                  error.message() + " (--require-all: every destination or none)",
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
      ++counters.dropped;
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
      d->count([](stats::TransferStats& s) { ++s.dropped; });
    }
  }

  void count_source_drop(bool late = false, uint64_t had_it = 0) {
    if (!had_it) {
      std::lock_guard lock(state_mu);
      ++counters.dropped;
      if (late) ++counters.dropped_late;
    }
    for (auto& d : destinations) {
      if ((had_it >> d->index) & 1) continue;
      d->count([late](stats::TransferStats& s) {
        ++s.dropped;
        if (late) ++s.dropped_late;
      });
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

// ---- a destination's thread ----------------------------------------------------------------

void SenderSession::Impl::Destination::run() {
  block_async_signals();
  bool first = true;
  for (;;) {
    {
      std::unique_lock lock(mu);
      if (stop) break;
      if (end && queue.empty()) {
        lock.unlock();
        end_stream();
        break;
      }
    }
    if (!core) {
      if (!first && (!session.options.reconnect || !retry)) {
        // Failed for good: wait for the end, dropping what is queued.
        std::unique_lock lock(mu);
        cv.wait_for(lock, kTick, [&] { return stop || end || !queue.empty(); });
        while (!queue.empty()) {
          Job job = std::move(queue.front());
          queue.pop_front();
          lock.unlock();
          finish_job(job, Took::dropped);
          lock.lock();
        }
        continue;
      }
      if (!first) {
        std::unique_lock lock(mu);
        cv.wait_for(lock, backoff, [&] { return stop || end; });
        if (stop || end) continue;
        backoff = std::min(backoff * 2, kMostRetry);
      }
      first = false;
      if (connect()) backoff = kFirstRetry;
      continue;
    }
    // Join a new stream format first (the caller waits for it).
    uint64_t wanted_generation;
    std::optional<proto::StreamStart> wanted_format;
    std::shared_ptr<detail::BufferPool> wanted_pool;
    {
      std::lock_guard lock(session.stream_mu);
      wanted_generation = session.generation;
      wanted_format = session.format;
      wanted_pool = session.pool;
    }
    {
      std::unique_lock cl(core_mu);
      if (!core) continue;
      if (wanted_format && joined != wanted_generation) {
        if (auto ok = join(wanted_generation, *wanted_format, wanted_pool); !ok) lost(ok.error());
        continue;
      }
    }
    // Completions to drive here: frames in flight that the caller does not drive itself.
    bool completions = false;
    if (!direct) {
      std::lock_guard cl(core_mu);
      completions = core && core->in_flight() > 0;
    }
    std::optional<Job> job;
    {
      std::unique_lock lock(mu);
      if (queue.empty() && !completions) {
        // A new stream format wakes it too (start_stream() notifies), however close it came.
        cv.wait_for(lock, kTick, [&] {
          return stop || end || !queue.empty() || session.generation.load() != wanted_generation;
        });
      }
      if (!queue.empty()) {
        job = std::move(queue.front());
        queue.pop_front();
        busy = true;
      }
    }
    std::unique_lock cl(core_mu);
    if (!core) {
      if (job) finish_job(*job, Took::dropped);
      continue;
    }
    if (job && job->audio) {
      send_audio(*job->audio);
      finish_job(*job, Took::sent);
      continue;
    }
    if (job) {
      send(*job);
      continue;
    }
    // Nothing to send: completions (a wake() from a new frame ends the wait), the receiver's
    // messages, keepalives, the watchdogs.
    auto ok = completions ? core->progress(milliseconds(5)) : core->keep_alive();
    if (!ok) {
      lost(ok.error());
    } else if (core->receiver_ended()) {
      mark_ended();
    }
  }
  std::lock_guard cl(core_mu);
  std::lock_guard lock(mu);
  core.reset();  // its frames' holds go with it
}

bool SenderSession::Impl::Destination::connect() {
  set_state(DestinationState::connecting);
  ConnectOptions connect_options = session.options.connect;
  connect_options.endpoint = endpoint;
  auto made = sender::SenderCore::connect(session.options.transport, connect_options);
  if (!made) {
    try_again_or_give_up(made.error());
    return false;
  }
  {
    std::lock_guard cl(core_mu);
    std::lock_guard lock(mu);
    core = std::move(*made);
    joined = 0;
    audio_started = 0;
    registered_pool.reset();
    registered_stager.reset();
    who = fmt::format("send {}", core->peer());
    peer = core->peer();
  }
  {
    std::lock_guard lock(report_mu);
    report.transport = std::string(to_string(core->kind()));
    ++report.connections;
    if (report.connections > 1)
      log().info("[{}] connected again (connection {})", who, report.connections);
  }
  set_state(DestinationState::streaming);
  std::lock_guard lock(session.stream_mu);
  session.stream_cv.notify_all();
  return true;
}

Result<void> SenderSession::Impl::Destination::register_pool(
    const std::shared_ptr<detail::BufferPool>& new_pool) {
  if (registered_pool == new_pool) return {};
  auto& channel = core->channel();
  if (registered_pool && !staged) channel.forget_memory(registered_pool->region()->bytes());
  registered_pool.reset();
  const auto& region = new_pool->region();
  if (region->kind() != memory::MemoryKind::cuda) {
    if (auto ok = channel.register_memory(region->bytes(), region); !ok) return ok;
    registered_pool = new_pool;
    staged = false;
    return {};
  }
  // GPU memory: this destination's rung of the ladder.
  auto decision = gpu::choose_path(session.options.gpu_path, channel.gpu_facts(), *session.gpu);
  if (!decision) return Unexpected(decision.error());
  if (decision->path != gpu::Path::staged) {
    if (auto ok =
            channel.register_gpu_memory(region->bytes(), region, decision->path, *session.gpu);
        !ok) {
      if (auto fell = decision->fall_back(session.options.gpu_path, ok.error()); !fell) return fell;
    }
  }
  staged = decision->path == gpu::Path::staged;
  if (staged) {
    std::shared_ptr<gpu::Stager> slots_for_all;
    {
      std::lock_guard lock(session.stream_mu);
      if (!session.stager) {
        auto slots = gpu::Stager::create(session.gpu, new_pool->buffer(0).size());
        if (!slots) return Unexpected(slots.error());
        session.stager = std::move(*slots);
      }
      slots_for_all = session.stager;
    }
    if (registered_stager != slots_for_all) {
      if (auto ok = channel.register_memory(slots_for_all->all(), slots_for_all->keep()); !ok)
        return ok;
      registered_stager = slots_for_all;
    }
  }
  log().info("[{}] frames from {}: {}", who, session.gpu->describe(), decision->summary());
  {
    std::lock_guard lock(report_mu);
    report.gpu_path = decision->summary();
  }
  {
    std::lock_guard lock(session.state_mu);
    if (!session.first_gpu_path) session.first_gpu_path = decision->summary();
  }
  registered_pool = new_pool;
  return {};
}

Result<void> SenderSession::Impl::Destination::join(
    uint64_t stream_generation, const proto::StreamStart& stream_format,
    const std::shared_ptr<detail::BufferPool>& stream_pool) {
  // Frames of the old format are out before the ring changes.
  if (auto ok = core->retire_all(); !ok) return ok;
  if (stream_pool) {
    if (auto ok = register_pool(stream_pool); !ok) return ok;
  }
  auto answered = core->start_stream(stream_format);
  if (!answered) return Unexpected(answered.error());
  {
    std::lock_guard lock(mu);
    ring = *answered;
    joined = stream_generation;
    up = true;
  }
  note_registrations();
  log().debug("[{}] ring of {} slots", who, answered->slot_count);
  // The tracks so far go out before the first frame, so a recording has them from the start.
  if (core->carries_audio()) start_audio_tracks();
  if (!core) return make_error(ErrorCode::peer_closed, "{}: lost while starting its audio", who);
  std::lock_guard lock(session.stream_mu);
  session.stream_cv.notify_all();
  return {};
}

void SenderSession::Impl::Destination::settle(Job& job, Took took) {
  const std::shared_ptr<Dispatch> dispatch = job.dispatch;
  Dispatch& d = *dispatch;
  bool complete = false;
  {
    std::lock_guard lock(d.mu);
    const uint64_t bit = uint64_t{1} << index;
    if (took == Took::sent) d.sent |= bit;
    if (took == Took::interrupted) d.interrupted |= bit;
    if (took == Took::ended) d.ended |= bit;
    complete = --d.remaining == 0;
  }
  if (took == Took::dropped) count([](stats::TransferStats& s) { ++s.dropped; });
  job = Job{};  // the holds go (the frame is with the core where it was sent)
  if (complete) {
    if (d.on_complete) d.on_complete(d);
    std::lock_guard lock(d.mu);
    d.cv.notify_all();
  }
}

void SenderSession::Impl::Destination::drop_queued() {
  std::deque<Job> dropped;
  {
    std::lock_guard lock(mu);
    dropped.swap(queue);
  }
  for (auto& job : dropped) {
    if (job.audio) {
      std::lock_guard lock(report_mu);
      if (job.audio->what == AudioJob::What::samples)
        report.audio_dropped_samples += job.audio->samples;
      continue;
    }
    settle(job, Took::dropped);
  }
}

void SenderSession::Impl::Destination::finish_job(Job& job, Took took) {
  if (job.audio) {
    // Audio counts itself where it was sent; here only what never went.
    if (took != Took::sent) {
      std::lock_guard lock(report_mu);
      report.audio_dropped_samples += job.audio->samples;
    }
    job = Job{};
    {
      std::lock_guard lock(mu);
      busy = false;
    }
    std::lock_guard lock(session.stream_mu);
    session.stream_cv.notify_all();
    return;
  }
  settle(job, took);
  {
    std::lock_guard lock(mu);
    busy = false;
  }
  std::lock_guard lock(session.stream_mu);
  session.stream_cv.notify_all();
}

void SenderSession::Impl::Destination::send(Job& job) {
  if (core->receiver_ended()) {
    mark_ended();
    return finish_job(job, Took::ended);
  }
  if (job.generation != joined) return finish_job(job, Took::dropped);
  // A credit as the policy says: now or never (live), or waiting (no-drop).
  std::optional<sender::Credit> credit;
  const bool live = session.options.policy.live;
  for (;;) {
    if (!live && session.interrupted()) return finish_job(job, Took::interrupted);
    auto got = core->acquire(live ? milliseconds(0) : kTick);  // slices: the interrupt is seen
    if (!got) {
      lost(got.error());
      return finish_job(job, Took::dropped);
    }
    if (*got) {
      credit = **got;
      break;
    }
    if (core->receiver_ended()) {
      mark_ended();
      return finish_job(job, Took::ended);
    }
    if (live) return finish_job(job, Took::dropped);
    std::lock_guard lock(mu);
    if (stop) break;
  }
  if (!credit) return finish_job(job, Took::dropped);
  const bool staged_frame = staged && !job.staged.empty();
  const auto frame = staged_frame ? job.staged : job.frame;
  auto hold = staged_frame ? job.staged_hold : job.hold;
  proto::FrameWritten info = job.info;
  info.sent_ns = stats::realtime_ns();
  if (auto ok = core->send_frame(*credit, frame, info, hold); !ok) {
    lost(ok.error());
    return finish_job(job, Took::dropped);
  }
  hold->arm();
  const auto now = Clock::now();
  count([&](stats::TransferStats& s) {
    ++s.frames;
    s.bytes += frame.size();
    s.latency.record_ns(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - job.dispatch->ready).count()));
  });
  core->retire();
  finish_job(job, Took::sent);
}

void SenderSession::Impl::Destination::start_audio_tracks() {
  std::vector<proto::AudioStart> tracks;
  {
    std::lock_guard lock(session.stream_mu);
    if (audio_started >= session.audio_tracks.size()) return;
    tracks.assign(session.audio_tracks.begin() + static_cast<ptrdiff_t>(audio_started),
                  session.audio_tracks.end());
  }
  for (const auto& track : tracks) {
    if (auto ok = core->start_audio(track); !ok) return lost(ok.error());
    ++audio_started;
  }
}

void SenderSession::Impl::Destination::send_audio(const AudioJob& job) {
  auto dropped = [&] {
    std::lock_guard lock(report_mu);
    report.audio_dropped_samples += job.samples;
  };
  bool is_up = false;
  {
    std::lock_guard lock(mu);
    is_up = up;
  }
  if (!core || !is_up) return dropped();
  if (!core->carries_audio()) {
    if (!audio_refusal_said) {
      audio_refusal_said = true;
      log().warn(
          "[{}] the receiver speaks protocol version {}, which carries no audio: sending it the "
          "video only",
          who, core->version());
      std::lock_guard lock(report_mu);
      report.audio_refused = true;
    }
    return dropped();
  }
  start_audio_tracks();
  if (!core) return dropped();  // lost while starting them
  proto::AudioStart track;
  {
    std::lock_guard lock(session.stream_mu);
    track = session.audio_tracks.at(job.track);
  }
  auto ok = job.what == AudioJob::What::end
                ? core->end_audio(track.stream_id)
                : core->send_audio(track, job.pts_ns, job.samples, job.data);
  if (!ok) {
    lost(ok.error());
    return dropped();
  }
  if (job.what == AudioJob::What::samples) {
    std::lock_guard lock(report_mu);
    ++report.audio_chunks;
    report.audio_samples += job.samples;
  }
}

void SenderSession::Impl::Destination::lost(const Error& error) {
  std::deque<Job> dropped;
  {
    std::lock_guard lock(mu);
    core.reset();  // closed; its frames' holds go
    up = false;
    dropped.swap(queue);  // frames queued for it: a caller may be waiting for them
  }
  for (auto& job : dropped) {
    {
      std::lock_guard lock(mu);
      busy = true;
    }
    finish_job(job, Took::dropped);
  }
  try_again_or_give_up(error);
}

void SenderSession::Impl::Destination::try_again_or_give_up(const Error& error) {
  retry = worth_retrying(error);
  const bool again = session.options.reconnect && retry && !session.stop_flag();
  set_state(again ? DestinationState::connecting : DestinationState::failed, error);
  if (again) {
    log().warn("{}; connecting again in {:.1f} s (--reconnect)", error.message(),
               std::chrono::duration<double>(backoff).count());
  } else {
    session.destination_lost(error);
  }
  std::lock_guard lock(session.stream_mu);
  session.stream_cv.notify_all();
}

void SenderSession::Impl::Destination::end_stream() {
  std::unique_ptr<sender::SenderCore> ending;
  {
    std::lock_guard cl(core_mu);
    std::lock_guard lock(mu);
    ending = std::move(core);
    up = false;
  }
  if (!ending) return;
  stats::TransferStats s;
  {
    std::lock_guard lock(report_mu);
    report.stats.finish();
    s = report.stats;
  }
  if (auto ok = ending->end_stream({s.frames, s.dropped}); !ok) {
    set_state(DestinationState::failed, ok.error());
    log().debug("[{}] {}", who, ok.error().message());
  } else {
    std::lock_guard lock(report_mu);
    if (report.state == DestinationState::streaming) report.state = DestinationState::ended;
  }
}

// ---- the session ---------------------------------------------------------------------------

Result<SenderSession::Outcome> SenderSession::Impl::dispatch(std::span<const std::byte> frame,
                                                             const FrameMeta& meta,
                                                             std::shared_ptr<FrameHold> hold,
                                                             bool in_gpu, uint64_t sent_before,
                                                             uint64_t* sent_now) {
  if (auto f = failure_now()) return Unexpected(*f);
  if (ended) return Outcome::receiver_ended;
  start_counting();
  // Which destinations take it: those up (joined the current stream) that do not have it.
  // With nobody up, a no-drop sender waiting for a reconnect waits here.
  std::vector<Destination*> targets;
  uint64_t current = 0;  // the stream format's generation
  bool any_stages = false;
  for (;;) {
    targets.clear();
    {
      std::lock_guard lock(stream_mu);
      current = generation;
    }
    bool anyone_coming = false;
    for (auto& d : destinations) {
      std::lock_guard lock(d->mu);
      if (d->state() == DestinationState::connecting) anyone_coming = true;
      if (!d->up || d->joined != current || (sent_before >> d->index) & 1) continue;
      targets.push_back(d.get());
      any_stages |= d->staged;
    }
    if (!targets.empty()) break;
    if (all_receivers_ended()) return Outcome::receiver_ended;
    if (options.policy.live || !anyone_coming || options.non_blocking) {
      count_source_drop(/*late=*/false, sent_before);  // nobody to send to
      return Outcome::dropped;
    }
    if (interrupted()) return Outcome::interrupted;
    if (auto f = failure_now()) return Unexpected(*f);
    std::unique_lock lock(stream_mu);
    stream_cv.wait_for(lock, kTick);
  }
  Job job;
  job.frame = frame;
  job.hold = std::move(hold);
  job.generation = current;
  job.info.sequence = meta.sequence;
  job.info.pts_ns = meta.pts_ns ? *meta.pts_ns
                                : static_cast<int64_t>(static_cast<double>(meta.sequence) /
                                                       format->frame_rate.value() * 1e9);
  if (in_gpu && any_stages) {
    // Copied out of the GPU once, for every destination that stages.
    auto staged = stage(frame);
    if (!staged) return Unexpected(staged.error());
    job.staged = staged->first;
    job.staged_hold = staged->second;
  }
  if (options.policy.checksum) {
    job.info.flags |= proto::kFrameHasChecksum;
    if (!job.staged.empty()) {
      job.info.checksum = frame_checksum(job.staged);
    } else if (in_gpu) {
      // The hash is the CPU's: a frame the NIC reads from the GPU is downloaded for it.
      checksum_scratch.resize(frame.size());
      if (auto ok = gpu->download(checksum_scratch, cuda::address(frame.data())); !ok)
        return Unexpected(ok.error());
      job.info.checksum = frame_checksum(checksum_scratch);
      std::lock_guard lock(state_mu);
      ++counters.gpu_copies;
    } else {
      job.info.checksum = frame_checksum(frame);
    }
  }
  auto d = std::make_shared<Dispatch>();
  d->remaining = static_cast<uint32_t>(targets.size());
  d->sent_before = sent_before;
  d->bytes = frame.size();
  d->ready = meta.ready;
  d->on_complete = [this](Dispatch& done) { complete(done); };
  job.dispatch = d;
  Destination* direct = nullptr;
  for (Destination* t : targets) {
    if (t->direct) {
      direct = t;
      continue;
    }
    std::vector<Job> stale;
    {
      std::lock_guard lock(t->mu);
      if (live_fan_out()) {
        // A destination that fell behind loses its own frames, never another's: beyond
        // kLiveBacklog frames queued for it, the oldest is dropped for it, so it holds no
        // more of the pool than the frame it is sending and those few (a moment's hiccup
        // is caught up, a receiver that reads slowly is not waited for).
        auto frames = static_cast<size_t>(
            std::count_if(t->queue.begin(), t->queue.end(), [](const Job& q) { return !q.audio; }));
        for (auto it = t->queue.begin(); it != t->queue.end() && frames >= kLiveBacklog;) {
          if (it->audio) {
            ++it;
            continue;
          }
          stale.push_back(std::move(*it));
          it = t->queue.erase(it);
          --frames;
        }
      }
      t->queue.push_back(job);
      t->cv.notify_one();
      if (t->core) t->core->channel().wake();  // out of a wait for completions
    }
    for (auto& old : stale) t->settle(old, Took::dropped);
  }
  if (options.policy.live) count_missed(targets);
  if (direct) {
    // The caller's own: sent here, while the others' threads send theirs.
    std::lock_guard cl(direct->core_mu);
    {
      std::lock_guard lock(direct->mu);
      direct->busy = true;
    }
    if (direct->core) {
      direct->send(job);
    } else {
      direct->finish_job(job, Took::dropped);
    }
  }
  job = Job{};
  // Live to several receivers, nobody waits for the slowest (none is sent to on this thread).
  if (options.non_blocking || live_fan_out()) return Outcome::sent;
  std::unique_lock lock(d->mu);
  if (direct && (d->sent >> direct->index) & 1) {
    // Sent here: the others' threads go on with it while the caller fills the next buffer
    // (its buffer comes back once the slowest has it, which is the back-pressure).
    if (sent_now) *sent_now = d->sent;
    return Outcome::sent;
  }
  d->cv.wait(lock, [&] { return d->remaining == 0; });
  if (sent_now) *sent_now = d->sent;
  if (d->sent) return Outcome::sent;
  if (d->interrupted) return Outcome::interrupted;
  // This frame's destinations want no more; the others may still.
  if (d->ended && !(d->sent | d->interrupted) && all_receivers_ended())
    return Outcome::receiver_ended;
  if (auto f = failure_now()) return Unexpected(*f);
  return Outcome::dropped;
}

SenderSession::SenderSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SenderSession::~SenderSession() {
  if (auto ok = end_stream(); !ok) log().debug("[send] {}", ok.error().message());
}

Result<std::unique_ptr<SenderSession>> SenderSession::connect(SenderSessionOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  auto& o = impl->options;
  if (o.destinations.empty()) o.destinations.push_back(o.connect.endpoint);
  if (o.destinations.size() > kMaxDestinations) {
    return make_error(ErrorCode::invalid_argument, "{} destinations; a session sends to at most {}",
                      o.destinations.size(), kMaxDestinations);
  }
  if (o.memory.kind == memory::MemoryKind::cuda) {
    // Before connecting: a machine without the GPU should not cost a receiver a stream.
    auto device = cuda::Device::shared(o.memory.device);
    if (!device)
      return Unexpected(device.error().context(fmt::format("--memory {}", to_string(o.memory))));
    impl->gpu = *device;
  }
  for (uint32_t i = 0; i < o.destinations.size(); ++i) {
    impl->destinations.push_back(std::make_unique<Impl::Destination>(*impl, i, o.destinations[i]));
  }
  // Live to several receivers, each has its own thread, so that a slow one is never the
  // caller's to wait for.
  impl->destinations.front()->direct = !o.non_blocking && !impl->live_fan_out();
  // Every destination connects on its own thread, at once.
  for (auto& d : impl->destinations) {
    Impl::Destination* raw = d.get();
    d->thread = std::thread([raw] { raw->run(); });
  }
  // Until each is up, or failed (for good, or for now under --reconnect).
  {
    std::unique_lock lock(impl->stream_mu);
    impl->stream_cv.wait(lock, [&] {
      return std::all_of(impl->destinations.begin(), impl->destinations.end(), [](const auto& d) {
        std::lock_guard r(d->report_mu);
        return d->report.state != DestinationState::connecting || d->report.error.has_value();
      });
    });
  }
  auto fail_all = [&](const Error& error) -> Result<std::unique_ptr<SenderSession>> {
    for (auto& d : impl->destinations) {
      {
        std::lock_guard lock(d->mu);
        d->stop = true;
      }
      d->cv.notify_all();
    }
    for (auto& d : impl->destinations) d->thread.join();
    return Unexpected(error);
  };
  if (auto f = impl->failure_now()) return fail_all(*f);
  size_t up = 0;
  std::optional<Error> first_error;
  for (auto& d : impl->destinations) {
    std::lock_guard r(d->report_mu);
    if (d->report.state == DestinationState::streaming) ++up;
    if (d->report.error && !first_error) first_error = d->report.error;
  }
  if (up == 0 && !impl->options.reconnect && first_error) return fail_all(*first_error);
  if (up == 0 && impl->options.reconnect && first_error && !worth_retrying(*first_error)) {
    return fail_all(*first_error);
  }
  impl->connected = true;
  return std::unique_ptr<SenderSession>(new SenderSession(std::move(impl)));
}

TransportKind SenderSession::kind() const {
  auto& d = *impl_->destinations.front();
  std::lock_guard lock(d.report_mu);
  auto parsed = parse_transport(d.report.transport);
  return parsed ? *parsed : TransportKind::tcp;
}

std::string SenderSession::peer() const {
  std::string out;
  for (const auto& d : impl_->destinations) {
    if (!out.empty()) out += ", ";
    std::lock_guard lock(d->mu);
    out += d->peer;
  }
  return out;
}

Result<proto::RingInfo> SenderSession::start_stream(const proto::StreamStart& format,
                                                    uint32_t pool_buffers) {
  auto& s = *impl_;
  if (s.ended) return make_error(ErrorCode::peer_closed, "send {}: the stream has ended", peer());
  if (pool_buffers == 0) {
    return make_error(ErrorCode::invalid_argument, "send {}: a pool of 0 buffers", peer());
  }
  if (auto f = s.failure_now()) return Unexpected(*f);
  // Frames of the old format go out first.
  s.drain_queues();
  uint64_t generation;
  {
    std::lock_guard lock(s.stream_mu);
    const size_t frame_bytes = format.layout.frame_bytes;
    if (!s.pool || s.pool->count() != pool_buffers || !s.format ||
        s.format->layout.frame_bytes != format.layout.frame_bytes) {
      const bool gpu = s.options.memory.kind == memory::MemoryKind::cuda;
      const size_t stride =
          memory::round_up(frame_bytes, gpu ? memory::kGpuPageBytes : memory::kPageBytes);
      auto region = memory::Region::allocate(s.options.memory, stride * pool_buffers);
      if (!region) return Unexpected(region.error().context(fmt::format("send {}", peer())));
      // Buffers of the old pool still lent keep their memory; they can no longer be sent.
      s.pool = std::make_shared<detail::BufferPool>(std::move(*region), pool_buffers, frame_bytes,
                                                    stride, s.returns);
      s.stager.reset();
      s.slot_holds.clear();
    }
    s.format = format;
    generation = ++s.generation;
  }
  for (auto& d : s.destinations) {
    std::lock_guard lock(d->mu);
    d->cv.notify_one();
    if (d->core) d->core->channel().wake();
  }
  s.pace_start.reset();
  // Until every connected destination has its ring (or failed).
  std::unique_lock lock(s.stream_mu);
  s.stream_cv.wait(lock, [&] {
    if (s.failure_now()) return true;
    return std::all_of(s.destinations.begin(), s.destinations.end(), [&](const auto& d) {
      std::lock_guard inner(d->mu);
      return !d->core || d->joined == generation;
    });
  });
  lock.unlock();
  if (auto f = s.failure_now()) return Unexpected(*f);
  std::optional<proto::RingInfo> first;
  std::optional<Error> error;
  bool connecting = false;
  for (auto& d : s.destinations) {
    {
      std::lock_guard inner(d->mu);
      if (d->up && d->joined == generation && !first) first = d->ring;
    }
    std::lock_guard r(d->report_mu);
    if (d->report.state == DestinationState::connecting) connecting = true;
    if (d->report.error && !error) error = d->report.error;
    if (d->report.state == DestinationState::ended && !error) {
      error = Error(ErrorCode::peer_closed, fmt::format("{}: receiver ended the stream", d->who));
    }
  }
  if (first) return *first;
  if (connecting && s.options.reconnect) {
    // Nobody up yet: the ring comes when a destination connects.
    proto::RingInfo none;
    none.ring_epoch = 0;
    return none;
  }
  return Unexpected(error ? *error : Error(ErrorCode::peer_closed, "no destination is connected"));
}

Result<FrameBuffer> SenderSession::acquire_buffer(std::optional<uint32_t> index) {
  auto& s = *impl_;
  std::shared_ptr<detail::BufferPool> pool;
  {
    std::lock_guard lock(s.stream_mu);
    pool = s.pool;
  }
  if (!pool) return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
  if (index && *index >= pool->count()) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} out of range (pool of {})",
                      peer(), *index, pool->count());
  }
  uint64_t seen = s.returns->count();
  for (;;) {
    if (auto got = pool->lend(index)) {
      return FrameBuffer(pool, *got, pool->buffer(*got), pool->region()->kind());
    }
    if (index && pool->state(*index) == detail::BufferPool::State::lent) {
      return make_error(ErrorCode::invalid_argument, "send {}: buffer {} is already lent", peer(),
                        *index);
    }
    if (pool->all_lent()) {
      return make_error(ErrorCode::invalid_argument, "send {}: all {} buffers are lent out", peer(),
                        pool->count());
    }
    if (s.options.non_blocking) {
      // Every buffer is still with a destination: this frame is dropped, not waited for.
      s.start_counting();
      s.count_source_drop();
      return FrameBuffer();
    }
    if (auto f = s.failure_now()) return Unexpected(*f);
    // The one we want (or every one) is still being read by a transfer.
    seen = s.wait_for_returns(seen);
  }
}

Result<FrameBuffer> SenderSession::try_acquire_buffer(uint32_t index) {
  auto& s = *impl_;
  std::shared_ptr<detail::BufferPool> pool;
  {
    std::lock_guard lock(s.stream_mu);
    pool = s.pool;
  }
  if (!pool) return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
  if (index >= pool->count()) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} out of range (pool of {})",
                      peer(), index, pool->count());
  }
  if (auto got = pool->lend(index))
    return FrameBuffer(pool, *got, pool->buffer(*got), pool->region()->kind());
  if (pool->state(index) == detail::BufferPool::State::lent) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} is already lent", peer(),
                      index);
  }
  return FrameBuffer();
}

Result<SenderSession::Outcome> SenderSession::submit(FrameBuffer& buffer, const FrameMeta& meta) {
  auto& s = *impl_;
  std::shared_ptr<detail::BufferPool> pool;
  {
    std::lock_guard lock(s.stream_mu);
    pool = s.pool;
  }
  if (!buffer || buffer.pool_ != pool) {
    return make_error(ErrorCode::invalid_argument,
                      "send {}: submit of a buffer that is not from the current stream's pool",
                      peer());
  }
  const uint32_t index = buffer.index_;
  // Sent: the buffer is the pool's again once every destination that has it has let it go.
  auto hold = std::make_shared<FrameHold>(
      s.returns, [pool, index] { pool->set(index, detail::BufferPool::State::free); });
  pool->set(index, detail::BufferPool::State::in_flight);
  uint64_t sent = 0;
  const bool in_gpu = buffer.kind() == memory::MemoryKind::cuda;
  auto outcome = s.dispatch(buffer.bytes(), meta, hold, in_gpu, buffer.sent_to_, &sent);
  if (outcome && *outcome == Outcome::interrupted) {
    // Stays the caller's; where it went already, it does not go again.
    pool->set(index, detail::BufferPool::State::lent);
    buffer.sent_to_ |= sent;
    return outcome;
  }
  if (outcome && *outcome == Outcome::sent) {
    hold->arm();  // the cores that have it (non-blocking: will have it) return it
    buffer.pool_.reset();
    buffer.bytes_ = {};
    buffer.sent_to_ = 0;
  } else {
    pool->set(index, detail::BufferPool::State::lent);
    buffer.reset();
  }
  return outcome;
}

Result<SenderSession::Outcome> SenderSession::submit_external(
    std::span<const std::byte> frame, const FrameMeta& meta,
    std::shared_ptr<const void> keep_while_sent,
    std::shared_ptr<const void> keep_while_registered) {
  auto& s = *impl_;
  // Registered with every destination's connection that needs it (verbs), for its life.
  for (auto& d : s.destinations) {
    std::lock_guard cl(d->core_mu);
    if (!d->core || d->core->channel().registered(frame)) continue;
    if (!keep_while_registered) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: {} needs frame memory registered, and nothing keeps this frame's "
                        "memory alive for it",
                        d->who, to_string(d->core->kind()));
    }
    if (auto ok = d->core->channel().register_memory(frame, keep_while_registered); !ok) {
      return Unexpected(ok.error().context(d->who));
    }
    d->note_registrations();
  }
  const uint64_t sent_before =
      s.interrupted_frame == frame.data() && s.interrupted_sequence == meta.sequence
          ? s.interrupted_sent
          : 0;
  auto count = s.external_in_flight;
  auto hold = std::make_shared<FrameHold>(
      s.returns, [count] { --*count; }, std::move(keep_while_sent));
  uint64_t sent = 0;
  ++*count;
  hold->arm();
  auto outcome = s.dispatch(frame, meta, hold, false, sent_before, &sent);
  hold.reset();  // the cores that have it hold it; if none has, it is done now
  if (outcome && *outcome == Outcome::interrupted) {
    s.interrupted_frame = frame.data();
    s.interrupted_sequence = meta.sequence;
    s.interrupted_sent = sent_before | sent;
    return outcome;
  }
  s.interrupted_frame = nullptr;
  if (!outcome || *outcome != Outcome::sent) return outcome;
  uint64_t seen = s.returns->count();
  while (*count > s.options.max_external_in_flight) {
    if (auto f = s.failure_now()) return Unexpected(*f);
    seen = s.wait_for_returns(seen);
  }
  return outcome;
}

bool SenderSession::sends_in_place(bool registrable) const {
  if (registrable || impl_->options.transport == TransportKind::tcp) return true;
  // Verbs reads only registered memory; a destination not connected yet may become verbs.
  return std::all_of(impl_->destinations.begin(), impl_->destinations.end(), [](const auto& d) {
    std::lock_guard lock(d->report_mu);
    return d->report.transport == "tcp";
  });
}

Result<SenderSession::Pacing> SenderSession::pace(uint64_t sequence) {
  auto& s = *impl_;
  double rate;
  {
    std::lock_guard lock(s.stream_mu);
    if (!s.format)
      return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
    rate = s.format->frame_rate.value() * s.options.policy.readrate;
  }
  const auto at = [&](uint64_t n) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(n) / rate));
  };
  if (!s.pace_start) s.pace_start = Clock::now() - at(sequence);
  const auto due = *s.pace_start + at(sequence);
  // The destinations keep their connections alive while this sleeps.
  while (Clock::now() < due) {
    if (s.interrupted()) return Pacing{Pacing::What::interrupted, due};
    std::this_thread::sleep_until(std::min(due, Clock::now() + kTick));
  }
  if (auto f = s.failure_now()) return Unexpected(*f);
  // Live: a frame due more than two periods ago (the link was busy with earlier ones) is
  // dropped, so a slow link costs frames, not a delay that grows.
  if (s.options.policy.live && Clock::now() - due > at(2)) {
    s.start_counting();
    s.count_source_drop(/*late=*/true);
    return Pacing{Pacing::What::late, due};
  }
  return Pacing{Pacing::What::due, due};
}

void SenderSession::skip(uint64_t) {
  impl_->start_counting();
  impl_->count_source_drop();
}

Result<uint32_t> SenderSession::start_audio(const proto::AudioStart& format) {
  auto& s = *impl_;
  if (auto f = s.failure_now()) return Unexpected(*f);
  if (format.channels == 0 || format.channels > proto::kMaxAudioChannels) {
    return make_error(ErrorCode::invalid_argument, "audio of {} channels (1..{})", format.channels,
                      proto::kMaxAudioChannels);
  }
  if (format.sample_rate < proto::kMinSampleRate || format.sample_rate > proto::kMaxSampleRate) {
    return make_error(ErrorCode::invalid_argument, "audio at {} Hz ({}..{})", format.sample_rate,
                      proto::kMinSampleRate, proto::kMaxSampleRate);
  }
  std::lock_guard lock(s.stream_mu);
  if (s.audio_tracks.size() >= proto::kMaxAudioStreams) {
    return make_error(ErrorCode::invalid_argument, "more than {} audio tracks",
                      proto::kMaxAudioStreams);
  }
  const auto track = static_cast<uint32_t>(s.audio_tracks.size());
  proto::AudioStart m = format;
  m.stream_id = sender::SenderCore::kStreamId + 1 + track;
  s.audio_tracks.push_back(m);
  return track;
}

Result<void> SenderSession::Impl::queue_audio(std::shared_ptr<const AudioJob> audio) {
  if (auto f = failure_now()) return Unexpected(*f);
  Job job;
  job.audio = std::move(audio);
  for (auto& d : destinations) {
    if (d->direct) {
      // The caller's own destination, in order with the frames it sends.
      std::lock_guard cl(d->core_mu);
      {
        std::lock_guard lock(d->mu);
        d->busy = true;
      }
      d->send_audio(*job.audio);
      Job done = job;
      d->finish_job(done, Took::sent);
      continue;
    }
    std::lock_guard lock(d->mu);
    if (!d->up) {
      std::lock_guard report_lock(d->report_mu);
      d->report.audio_dropped_samples += job.audio->samples;
      continue;
    }
    // A destination that is behind (a receiver that reads slowly) holds at most
    // kMostQueuedAudio batches of a track (about 2.5 s): the oldest samples go, counted, so
    // the sender's memory stays bounded whatever the receiver does.
    const uint32_t track = job.audio->track;
    const auto of_track = [track](const Job& q) {
      return q.audio && q.audio->track == track && q.audio->what == AudioJob::What::samples;
    };
    if (static_cast<size_t>(std::count_if(d->queue.begin(), d->queue.end(), of_track)) >=
        kMostQueuedAudio) {
      const auto oldest = std::find_if(d->queue.begin(), d->queue.end(), of_track);
      if (oldest != d->queue.end()) {
        std::lock_guard report_lock(d->report_mu);
        d->report.audio_dropped_samples += oldest->audio->samples;
        d->queue.erase(oldest);
      }
    }
    d->queue.push_back(job);
    d->cv.notify_one();
    if (d->core) d->core->channel().wake();
  }
  return {};
}

// The samples gathered for `track` as one batch, laid out in its format; nothing when none.
// Under audio_mu.
std::shared_ptr<AudioJob> SenderSession::Impl::take_gathered(uint32_t track) {
  if (track >= gathered.size() || gathered[track].samples == 0) return nullptr;
  Gathered& g = gathered[track];
  auto job = std::make_shared<AudioJob>();
  job->track = track;
  job->pts_ns = g.pts_ns;
  job->samples = g.samples;
  for (auto& channel : g.channels) {
    job->data.insert(job->data.end(), channel.begin(), channel.end());
    channel.clear();
  }
  g.samples = 0;
  return job;
}

Result<void> SenderSession::Impl::flush_audio() {
  std::vector<std::shared_ptr<AudioJob>> jobs;
  {
    std::lock_guard lock(audio_mu);
    for (uint32_t t = 0; t < gathered.size(); ++t) {
      if (auto job = take_gathered(t)) jobs.push_back(std::move(job));
    }
  }
  for (auto& job : jobs) {
    if (auto ok = queue_audio(std::move(job)); !ok) return ok;
  }
  return {};
}

Result<void> SenderSession::submit_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                                         std::span<const std::byte> data) {
  auto& s = *impl_;
  proto::AudioStart format;
  {
    std::lock_guard lock(s.stream_mu);
    if (track >= s.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
    format = s.audio_tracks[track];
  }
  const uint32_t bps = proto::bytes_per_sample(format.sample_format);
  const uint64_t want = uint64_t{samples} * format.channels * bps;
  if (samples == 0 || data.size() != want) {
    return make_error(ErrorCode::invalid_argument,
                      "{} samples of audio track {} are {} bytes, not {}", samples, track, want,
                      data.size());
  }
  const auto ns_of = [&](uint64_t n) {
    return static_cast<int64_t>(n * 1'000'000'000 / format.sample_rate);
  };
  std::shared_ptr<AudioJob> before, full;
  {
    std::lock_guard lock(s.audio_mu);
    if (s.gathered.size() <= track) s.gathered.resize(track + 1);
    Impl::Gathered& g = s.gathered[track];
    // Samples that do not follow on from those gathered (a gap, a step back) go apart.
    if (g.samples > 0 && std::llabs(pts_ns - (g.pts_ns + ns_of(g.samples))) > 1'000'000) {
      before = s.take_gathered(track);
    }
    const bool is_planar = proto::planar(format.sample_format);
    g.channels.resize(is_planar ? format.channels : 1);
    if (g.samples == 0) g.pts_ns = pts_ns;
    if (is_planar) {
      const size_t plane = size_t{samples} * bps;
      for (uint32_t c = 0; c < format.channels; ++c) {
        const auto part = data.subspan(c * plane, plane);
        g.channels[c].insert(g.channels[c].end(), part.begin(), part.end());
      }
    } else {
      g.channels[0].insert(g.channels[0].end(), data.begin(), data.end());
    }
    g.samples += samples;
    if (std::chrono::nanoseconds(ns_of(g.samples)) >= kAudioBatch) full = s.take_gathered(track);
  }
  if (before) {
    if (auto ok = s.queue_audio(std::move(before)); !ok) return ok;
  }
  if (full) return s.queue_audio(std::move(full));
  return {};
}

Result<void> SenderSession::end_audio(uint32_t track) {
  auto& s = *impl_;
  {
    std::lock_guard lock(s.stream_mu);
    if (track >= s.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
  }
  std::shared_ptr<AudioJob> rest;
  {
    std::lock_guard lock(s.audio_mu);
    rest = s.take_gathered(track);
  }
  if (rest) {
    if (auto ok = s.queue_audio(std::move(rest)); !ok) return ok;
  }
  auto job = std::make_shared<AudioJob>();
  job->what = AudioJob::What::end;
  job->track = track;
  return s.queue_audio(std::move(job));
}

Result<void> SenderSession::end_stream() {
  auto& s = *impl_;
  if (s.ended) return {};
  if (!s.failure_now()) (void)s.flush_audio();  // what a destination cannot take it counts
  s.ended = true;
  if (!s.failure_now()) s.drain_queues();
  for (auto& d : s.destinations) {
    {
      std::lock_guard lock(d->mu);
      d->end = true;
    }
    d->cv.notify_all();
  }
  for (auto& d : s.destinations) {
    if (d->thread.joinable()) d->thread.join();
  }
  {
    std::lock_guard lock(s.state_mu);
    s.counters.finish();
  }
  {
    std::lock_guard lock(s.stream_mu);
    s.stager.reset();
  }
  if (auto f = s.failure_now()) return Unexpected(*f);
  // The first destination's error, for a single destination's caller (fan-out reports each).
  if (s.destinations.size() == 1) {
    std::lock_guard r(s.destinations.front()->report_mu);
    const auto& report = s.destinations.front()->report;
    if (report.state == DestinationState::failed && report.error) return Unexpected(*report.error);
  }
  return {};
}

bool SenderSession::receiver_ended() const { return impl_->all_receivers_ended(); }

std::optional<Error> SenderSession::failure() const { return impl_->failure_now(); }

stats::TransferStats SenderSession::stats() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->counters;
}

std::vector<DestinationReport> SenderSession::destinations() const {
  std::vector<DestinationReport> out;
  for (const auto& d : impl_->destinations) {
    std::lock_guard r(d->report_mu);
    out.push_back(d->report);
  }
  return out;
}

std::string SenderSession::gpu_path() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->first_gpu_path.value_or("");
}

std::string_view to_string(DestinationReport::State state) {
  switch (state) {
    case DestinationReport::State::connecting: return "connecting";
    case DestinationReport::State::streaming: return "streaming";
    case DestinationReport::State::ended: return "ended";
    case DestinationReport::State::failed: return "failed";
  }
  return "unknown";
}

}  // namespace rdmavideo
