// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/frame_sender.hpp"

#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo {

Result<FrameSender::Outcome> FrameSender::send(std::span<const std::byte> frame, uint64_t sequence,
                                               int64_t pts_ns,
                                               std::chrono::steady_clock::time_point ready) {
  std::optional<Credit> credit;
  if (policy_.live) {
    auto got = connection_.acquire(std::chrono::milliseconds(0));
    if (!got) return Unexpected(got.error());
    credit = *got;
    if (!credit && !connection_.receiver_ended()) {
      ++stats_.dropped;
      return Outcome::dropped;
    }
  } else {
    // Wait in short slices so a stop request is noticed within one.
    while (!credit && !connection_.receiver_ended()) {
      if (stop_ && stop_->load()) return Outcome::stopped;
      auto got = connection_.acquire(std::chrono::milliseconds(200));
      if (!got) return Unexpected(got.error());
      credit = *got;
    }
  }
  if (!credit) return Outcome::receiver_ended;

  proto::FrameWritten info;
  info.sequence = sequence;
  info.pts_ns = pts_ns;
  info.sent_ns = stats::realtime_ns();
  if (policy_.checksum) {
    info.flags |= proto::kFrameHasChecksum;
    info.checksum = frame_checksum(frame);
  }
  if (auto ok = connection_.send_frame(*credit, frame, info); !ok) return Unexpected(ok.error());
  ++stats_.frames;
  stats_.bytes += frame.size();
  const auto done = std::chrono::steady_clock::now();
  stats_.latency.record_ns(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(done - ready).count()));
  return Outcome::sent;
}

}  // namespace rdmavideo
