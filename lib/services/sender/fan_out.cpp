// SPDX-License-Identifier: Apache-2.0
#include "fan_out.hpp"

#include <algorithm>

#include "rdmavideo/checksum.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::sender {

void FanOut::fail_session(const Error& error) {
  {
    std::lock_guard lock(state_mu);
    if (failure) return;
    failure = error;
  }
  // During connect() the failure is connect()'s to return, not a callback's to report.
  if (options.on_failure && connected) options.on_failure(error);
}

void FanOut::destination_lost(const Error& error) {
  if (options.require_all) {
    if (destinations.size() > 1) {
      return fail_session(Error(error.code(),
                                fmt::format("{} ({})", error.message(), kEveryDestinationRequired),
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
  log().error("{}; {} other destination{} go{} on", error.message(), others, others == 1 ? "" : "s",
              others == 1 ? "es" : "");
}

void FanOut::gpu_path_chosen(const std::string& summary) {
  std::lock_guard lock(state_mu);
  if (!first_gpu_path) first_gpu_path = summary;
}

void FanOut::complete(Dispatch& d) {
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

void FanOut::count_missed(const std::vector<Destination*>& targets) {
  for (auto& d : destinations) {
    if (std::find(targets.begin(), targets.end(), d.get()) != targets.end()) continue;
    if (d->state() != DestinationState::connecting || d->report_connections() == 0) continue;
    d->count([](stats::TransferStats& s) { s.count_drop(stats::DropCause::not_up); });
  }
}

void FanOut::count_source_drop(stats::DropCause cause, uint64_t had_it) {
  if (!had_it) {
    std::lock_guard lock(state_mu);
    counters.count_drop(cause);
  }
  for (auto& d : destinations) {
    if ((had_it >> d->index) & 1) continue;
    d->count([cause](stats::TransferStats& s) { s.count_drop(cause); });
  }
}

bool FanOut::all_receivers_ended() const {
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

void FanOut::start_counting() {
  if (counting) return;
  // Rates and CPU count from the first frame, not from connecting or preparing a source.
  counting = true;
  std::lock_guard lock(state_mu);
  counters.start = Clock::now();
  counters.cpu_start = stats::process_cpu_seconds();
}

void FanOut::drain_queues() {
  std::unique_lock lock(stream.mu);
  const auto drained = [&] {
    return std::all_of(destinations.begin(), destinations.end(), [](const auto& d) {
      std::lock_guard inner(d->mu);
      return d->queue.empty() && !d->busy;
    });
  };
  if (!live_fan_out()) return stream.cv.wait(lock, drained);
  if (stream.cv.wait_for(lock, kLiveDrain, drained)) return;
  lock.unlock();
  for (auto& d : destinations) d->drop_queued();
}

Result<std::pair<std::span<const std::byte>, std::shared_ptr<FrameHold>>> FanOut::stage(
    std::span<const std::byte> frame) {
  const uint32_t slot = stream.stager->next();
  if (slot_holds.size() < slot + 1) slot_holds.resize(slot + 1);
  uint64_t seen = returns->count();
  while (!slot_holds[slot].expired()) {
    if (auto f = failure_now()) return Unexpected(*f);
    seen = wait_for_returns(seen);
  }
  auto copy = stream.stager->download(slot, cuda::address(frame.data()), frame.size());
  if (!copy) return Unexpected(copy.error().context("send"));
  auto hold = std::make_shared<FrameHold>(returns);
  slot_holds[slot] = hold;
  std::lock_guard lock(state_mu);
  ++counters.gpu_copies;
  return std::pair(*copy, hold);
}

uint64_t FanOut::wait_for_returns(uint64_t seen) {
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

Result<SenderSession::Outcome> FanOut::dispatch(std::span<const std::byte> frame,
                                                const FrameMeta& meta,
                                                std::shared_ptr<FrameHold> hold, bool in_gpu,
                                                uint64_t sent_before, uint64_t* sent_now) {
  using Outcome = SenderSession::Outcome;
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
      std::lock_guard lock(stream.mu);
      current = stream.generation;
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
      count_source_drop(stats::DropCause::not_up, sent_before);  // nobody to send to
      return Outcome::dropped;
    }
    if (interrupted()) return Outcome::interrupted;
    if (auto f = failure_now()) return Unexpected(*f);
    std::unique_lock lock(stream.mu);
    stream.cv.wait_for(lock, kTick);
  }
  Job job;
  job.frame = frame;
  job.hold = std::move(hold);
  job.generation = current;
  job.info.sequence = meta.sequence;
  job.info.pts_ns = meta.pts_ns ? *meta.pts_ns
                                : static_cast<int64_t>(static_cast<double>(meta.sequence) /
                                                       stream.format->frame_rate.value() * 1e9);
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
      if (auto ok = stream.gpu->download(checksum_scratch, cuda::address(frame.data())); !ok)
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
    for (auto& old : stale) t->settle(old, Took::dropped, stats::DropCause::behind);
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

Result<void> FanOut::queue_audio(std::shared_ptr<const AudioJob> audio) {
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

}  // namespace rdmavideo::sender
