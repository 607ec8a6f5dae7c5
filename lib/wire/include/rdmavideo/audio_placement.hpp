// SPDX-License-Identifier: Apache-2.0
// Where sound goes on a picture's timeline.
//
// continuity(): where a chunk falls against the end of what a track holds so far, the one
// vocabulary of every audio timeline (the sender's placement below, a recording's track, the
// display's player, a canvas tile's clock): it follows on, leaves a gap, overlaps, or has
// jumped. What each then does is its own (fill a gap with silence, or resample over it).
//
// AudioPlacement: where a sender's sound goes on its picture's timeline: the pts its frames
// carry, in ns since the first frame. The one placement the sender's audio inputs
// (av::CaptureFeed) and the OBS output share.
//
// Each chunk comes with when its first sample was taken, on the picture's timeline. A chunk
// continues the one before it, sample-exact, while that time stays within `resync` of where
// the continuation falls; further away, the chunk's clock and the picture's have parted, and it
// is placed at its own time again (counted). Continuation is counted in samples from where the
// track was last placed, so no rounding builds up however many chunks follow. With
// `cut_before_start`, samples from before the first frame are cut (a recording starts with its
// picture); without it they are sent, and the receiver trims them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace rdmavideo {

enum class Continuity { follows, gap, overlap, jump };

/// A chunk `apart` from where the track's sound so far ends (its start minus that end, in any
/// one unit: ns or samples): within `tolerance` it follows on; later by at most `most_ahead`
/// it leaves a gap, earlier by at most `most_behind` it overlaps; beyond either it has jumped.
constexpr Continuity continuity(int64_t apart, int64_t tolerance, int64_t most_ahead,
                                int64_t most_behind) {
  if (apart > tolerance) return apart > most_ahead ? Continuity::jump : Continuity::gap;
  if (apart < -tolerance) return apart < -most_behind ? Continuity::jump : Continuity::overlap;
  return Continuity::follows;
}

class AudioPlacement {
 public:
  AudioPlacement(uint32_t sample_rate, std::chrono::nanoseconds resync, bool cut_before_start);

  struct Placed {
    int64_t pts_ns = 0;  ///< the first sample sent
    uint32_t skip = 0;   ///< samples cut at the chunk's start (before the first frame)
  };
  /// The chunk of `samples` whose first sample was taken at `at_ns`; nullopt where every
  /// sample of it is cut.
  std::optional<Placed> place(int64_t at_ns, uint32_t samples);
  /// Times a chunk was placed anew.
  uint64_t resyncs() const { return resyncs_; }

 private:
  int64_t ns_of(uint64_t samples) const;  // exact: samples * 1e9 / rate, floored

  uint32_t rate_;
  int64_t resync_ns_;
  bool cut_;
  bool started_ = false;
  int64_t base_ns_ = 0;      // where the track was last placed anew
  uint64_t since_base_ = 0;  // samples placed since then
  uint64_t resyncs_ = 0;
};

}  // namespace rdmavideo
