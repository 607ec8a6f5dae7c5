// SPDX-License-Identifier: Apache-2.0
// Fan-out: one frame handed to every destination that is up, staged once for those that
// send from a pinned copy, checksummed once, and (blocking mode) waited for.
#include "session_impl.hpp"

namespace rdmavideo {

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
      count_source_drop(stats::DropCause::not_up, sent_before);  // nobody to send to
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

}  // namespace rdmavideo
