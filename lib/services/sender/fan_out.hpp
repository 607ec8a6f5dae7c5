// SPDX-License-Identifier: Apache-2.0
// A sender session's destinations and what became of its frames: each frame handed to every
// destination that is up (staged once for those that send from a pinned copy, checksummed
// once, and in blocking mode waited for), audio queued beside the frames, the counters, and
// the session's failure. It hears its destinations through DestinationEvents.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "destination.hpp"
#include "jobs.hpp"
#include "rdmavideo/sender_session.hpp"
#include "session_stream.hpp"

namespace rdmavideo::sender {

struct FanOut final : DestinationEvents {
  FanOut(const SenderSessionOptions& o, SessionStream& s) : options(o), stream(s) {}

  const SenderSessionOptions& options;
  SessionStream& stream;
  std::shared_ptr<detail::Returns> returns = std::make_shared<detail::Returns>();
  std::vector<std::unique_ptr<Destination>> destinations;

  // The caller's.
  std::vector<std::weak_ptr<FrameHold>> slot_holds;  // per staging slot: alive while read
  std::vector<std::byte> checksum_scratch;           // a GPU frame, downloaded to hash it
  bool ended = false;     // the stream has ended: nothing more is dispatched
  bool counting = false;  // the first frame was offered: counters run

  std::atomic<bool> connected{false};  // connect() has returned the session
  mutable std::mutex state_mu;         // what other threads read
  stats::TransferStats counters;
  std::optional<Error> failure;
  std::optional<std::string> first_gpu_path;

  // DestinationEvents.
  // A destination was lost for good. The session goes on while another can be sent to, and
  // says so in one line; else (or with require_all) it fails with the destination's error.
  void destination_lost(const Error& error) override;
  void gpu_path_chosen(const std::string& summary) override;
  bool interrupted() const override { return options.interrupt && options.interrupt->load(); }
  bool stopping() const override { return options.connect.stop && options.connect.stop->load(); }

  // The session cannot go on: every call from now on returns `error` (the caller says it).
  void fail_session(const Error& error);
  std::optional<Error> failure_now() const {
    std::lock_guard lock(state_mu);
    return failure;
  }
  // Live to several receivers: nobody waits for the slowest.
  bool live_fan_out() const { return options.policy.live && destinations.size() > 1; }
  // Every destination is over, at least one because its receiver wants no more frames (the
  // others failed): nothing more can be sent.
  bool all_receivers_ended() const;

  // Rates and CPU count from the first frame, not from connecting or preparing a source.
  void start_counting();
  // Every destination done with a frame: the source's counters.
  void complete(Dispatch& d);
  // A frame no destination was offered (late, skipped, no buffer free, nobody up): every
  // destination that has not had it counts it, and the source does unless one had it (an
  // interrupted frame offered again, `had_it` the destinations it reached).
  void count_source_drop(stats::DropCause cause, uint64_t had_it = 0);
  // A live frame sent while a destination is away (reconnecting under --reconnect) is one it
  // missed: counted as dropped for it, as a frame it had no credit for is.
  void count_missed(const std::vector<Destination*>& targets);

  // Waits until no destination has a frame queued or in hand (frames in flight go first).
  // Live to several receivers, at most kLiveDrain: what a receiver that is behind still has
  // queued then is dropped for it, counted, so that ending the stream never waits on the
  // slowest one's pace; the frame it is being sent goes on to the end. One receiver gets
  // all it was given (the pool and the audio bound keep that short).
  void drain_queues();
  // Waits for memory to come back (a buffer, a slot, an external frame's place): in blocking
  // mode the caller drives its own destination's completions meanwhile; the others' threads
  // drive theirs. Returns the returns' count to wait from next.
  uint64_t wait_for_returns(uint64_t seen);

  // Hands a frame to every destination that is up and has not had it (`sent_before`), and
  // in blocking mode waits until each has sent or dropped it.
  Result<SenderSession::Outcome> dispatch(std::span<const std::byte> frame, const FrameMeta& meta,
                                          std::shared_ptr<FrameHold> hold, bool in_gpu,
                                          uint64_t sent_before, uint64_t* sent_now);
  // Audio for every destination: sent at once to the caller's own (blocking mode), queued
  // for the others that are up; those not up count it dropped.
  Result<void> queue_audio(std::shared_ptr<const AudioJob> audio);

 private:
  // Copies a GPU frame into the next pinned slot, once no transfer reads that slot.
  Result<std::pair<std::span<const std::byte>, std::shared_ptr<FrameHold>>> stage(
      std::span<const std::byte> frame);
};

}  // namespace rdmavideo::sender
