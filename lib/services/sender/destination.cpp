// SPDX-License-Identifier: Apache-2.0
// A destination of a sender session: its thread, which connects (and reconnects with
// back-off), joins each stream format, and sends its queue of frames and audio.
#include "destination.hpp"

#include "rdmavideo/caught.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/signals.hpp"

namespace rdmavideo::sender {

void Destination::run() {
  block_async_signals();
  bool first = true;
  for (;;) {
    try {
      serve(first);
      return;
    } catch (...) {
      // What the platform's libraries may throw (an allocation, the crypto library) ends
      // this destination for good, saying what, and not the process. serve() then waits for
      // the end, dropping what is queued. lost() runs under core_mu, as it does in serve().
      first = false;
      std::lock_guard cl(core_mu);
      lost(error_of(std::current_exception(), fmt::format("destination {}", endpoint.to_string())),
           Retry::never);
    }
  }
}

void Destination::serve(bool& first) {
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
      if (!first && (!options.reconnect || !retry)) {
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
      std::lock_guard lock(stream.mu);
      wanted_generation = stream.generation;
      wanted_format = stream.format;
      wanted_pool = stream.pool;
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
          return stop || end || !queue.empty() || stream.generation.load() != wanted_generation;
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

bool Destination::connect() {
  set_state(DestinationState::connecting);
  ConnectOptions connect_options = options.connect;
  connect_options.endpoint = endpoint;
  if (endpoint.named) {
    auto found =
        options.resolve
            ? options.resolve(endpoint)
            : Result<Endpoint>(make_error(ErrorCode::unsupported,
                                          "\"{}\" is a receiver's name, and this program finds "
                                          "none (give HOST:PORT)",
                                          endpoint.host));
    if (!found) {
      try_again_or_give_up(found.error());
      return false;
    }
    log().info("[send] \"{}\" is at {}", endpoint.host, found->to_string());
    connect_options.endpoint = *found;
  }
  auto made = sender::SenderCore::connect(options.transport, connect_options);
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
  stream.notify();
  return true;
}

Result<void> Destination::register_pool(const std::shared_ptr<detail::BufferPool>& new_pool) {
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
  auto decision = gpu::choose_path(options.gpu_path, channel.gpu_facts(), *stream.gpu);
  if (!decision) return Unexpected(decision.error());
  if (decision->path != gpu::Path::staged) {
    if (auto ok = channel.register_gpu_memory(region->bytes(), region, decision->path, *stream.gpu);
        !ok) {
      if (auto fell = decision->fall_back(options.gpu_path, ok.error()); !fell) return fell;
    }
  }
  staged = decision->path == gpu::Path::staged;
  if (staged) {
    std::shared_ptr<gpu::Stager> slots_for_all;
    {
      std::lock_guard lock(stream.mu);
      if (!stream.stager) {
        auto slots = gpu::Stager::create(stream.gpu, new_pool->buffer(0).size());
        if (!slots) return Unexpected(slots.error());
        stream.stager = std::move(*slots);
      }
      slots_for_all = stream.stager;
    }
    if (registered_stager != slots_for_all) {
      if (auto ok = channel.register_memory(slots_for_all->all(), slots_for_all->keep()); !ok)
        return ok;
      registered_stager = slots_for_all;
    }
  }
  log().info("[{}] frames from {}: {}", who, stream.gpu->describe(), decision->summary());
  {
    std::lock_guard lock(report_mu);
    report.gpu_path = decision->summary();
  }
  events.gpu_path_chosen(decision->summary());
  registered_pool = new_pool;
  return {};
}

Result<void> Destination::join(uint64_t stream_generation, const proto::StreamStart& stream_format,
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
  stream.notify();
  return {};
}

void Destination::settle(Job& job, Took took, stats::DropCause cause) {
  const std::shared_ptr<Dispatch> dispatch = job.dispatch;
  Dispatch& d = *dispatch;
  bool complete = false;
  {
    std::lock_guard lock(d.mu);
    const uint64_t bit = uint64_t{1} << index;
    if (took == Took::sent) d.sent |= bit;
    if (took == Took::interrupted) d.interrupted |= bit;
    if (took == Took::ended) d.ended |= bit;
    if (took == Took::dropped && !d.cause) d.cause = cause;
    complete = --d.remaining == 0;
  }
  if (took == Took::dropped) count([cause](stats::TransferStats& s) { s.count_drop(cause); });
  job = Job{};  // the holds go (the frame is with the core where it was sent)
  if (complete) {
    if (d.on_complete) d.on_complete(d);
    std::lock_guard lock(d.mu);
    d.cv.notify_all();
  }
}

void Destination::drop_queued() {
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
    settle(job, Took::dropped, stats::DropCause::behind);
  }
}

void Destination::finish_job(Job& job, Took took, stats::DropCause cause) {
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
    stream.notify();
    return;
  }
  settle(job, took, cause);
  {
    std::lock_guard lock(mu);
    busy = false;
  }
  stream.notify();
}

void Destination::send(Job& job) {
  if (core->receiver_ended()) {
    mark_ended();
    return finish_job(job, Took::ended);
  }
  if (job.generation != joined) return finish_job(job, Took::dropped);
  // A credit as the policy says: live, until the frame is later than the lateness bound
  // (then it is the receiver's want of a slot that drops it; a frame that waited in this
  // destination's queue past its bound goes only where a credit is there at once); no-drop,
  // waiting.
  std::optional<sender::Credit> credit;
  const bool live = options.policy.live;
  const auto give_up = job.dispatch->ready + stream.max_lateness();
  FrameTiming timing;
  timing.sequence = job.info.sequence;
  timing.destination = index;
  timing.ready = job.dispatch->ready;
  timing.taken = Clock::now();
  const auto& on_frame = options.on_frame;
  for (;;) {
    if (!live && events.interrupted()) return finish_job(job, Took::interrupted);
    const auto left =
        std::chrono::ceil<milliseconds>(std::max(Clock::duration{}, give_up - Clock::now()));
    auto got = core->acquire(live ? std::min(left, kTick) : kTick);  // slices: see interrupts
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
    if (live && Clock::now() >= give_up) {
      if (on_frame) {
        timing.credited = timing.written = Clock::now();
        timing.dropped = stats::DropCause::no_credit;
        on_frame(timing);
      }
      return finish_job(job, Took::dropped, stats::DropCause::no_credit);
    }
    if (live && events.interrupted()) return finish_job(job, Took::interrupted);
    std::lock_guard lock(mu);
    if (stop) break;
  }
  if (!credit) return finish_job(job, Took::dropped);
  const bool staged_frame = staged && !job.staged.empty();
  const auto frame = staged_frame ? job.staged : job.frame;
  auto hold = staged_frame ? job.staged_hold : job.hold;
  proto::FrameWritten info = job.info;
  timing.credited = Clock::now();
  info.sent_ns = stats::realtime_ns();
  if (auto ok = core->send_frame(*credit, frame, info, hold); !ok) {
    lost(ok.error());
    return finish_job(job, Took::dropped);
  }
  hold->arm();
  const auto now = Clock::now();
  if (on_frame) {
    timing.written = now;
    on_frame(timing);
  }
  count([&](stats::TransferStats& s) {
    ++s.frames;
    s.bytes += frame.size();
    s.latency.record_ns(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - job.dispatch->ready).count()));
  });
  core->retire();
  finish_job(job, Took::sent);
}

void Destination::start_audio_tracks() {
  std::vector<proto::AudioStart> tracks;
  {
    std::lock_guard lock(stream.mu);
    if (audio_started >= stream.audio_tracks.size()) return;
    tracks.assign(stream.audio_tracks.begin() + static_cast<ptrdiff_t>(audio_started),
                  stream.audio_tracks.end());
  }
  for (const auto& track : tracks) {
    if (auto ok = core->start_audio(track); !ok) return lost(ok.error());
    ++audio_started;
  }
}

void Destination::send_audio(const AudioJob& job) {
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
  if (job.what == AudioJob::What::start) return;
  proto::AudioStart track;
  {
    std::lock_guard lock(stream.mu);
    track = stream.audio_tracks.at(job.track);
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

void Destination::lost(const Error& error, Retry may) {
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
  try_again_or_give_up(error, may);
}

void Destination::try_again_or_give_up(const Error& error, Retry may) {
  retry = may == Retry::if_worth_it && worth_retrying(error);
  const bool again = options.reconnect && retry && !events.stopping();
  set_state(again ? DestinationState::connecting : DestinationState::failed, error);
  if (again) {
    log().warn("{}; connecting again in {:.1f} s (reconnecting)", error.message(),
               std::chrono::duration<double>(backoff).count());
  } else {
    events.destination_lost(error);
  }
  stream.notify();
}

void Destination::end_stream() {
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

}  // namespace rdmavideo::sender
