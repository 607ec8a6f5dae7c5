// SPDX-License-Identifier: Apache-2.0
// Where a stream's pictures, and the sound beside them, land on a file's timeline: the one
// pts repair the recorder and the .wav writer share (docs/protocol.md §3.9).
//
// The first picture is at 0. Each later one is at its pts' distance from the first, in the
// file's unit (an encoder's time base; nanoseconds for a .wav beside raw frames), unless that
// would break the file: a step backwards (a GStreamer seek), a jump forwards of more than
// AudioTrack::kMostGapNs, or a distance whose arithmetic overflows (2^62, INT64_MIN,
// INT64_MAX) puts the picture `step` units after the previous one instead. Shorter forward gaps
// are kept (a paused sender leaves a gap, which each track fills with silence). What a repair
// moved the pictures by is kept, and the sound is moved with them: audio() places a sample's
// pts on the file's timeline as the picture of the same instant was placed.
#pragma once

extern "C" {
#include <libavutil/rational.h>
}

#include <cstdint>
#include <optional>

namespace rdmavideo::av {

class PictureTimeline {
 public:
  /// Pictures placed in units of `unit` seconds.
  explicit PictureTimeline(AVRational unit) : unit_(unit) {}

  struct Placed {
    int64_t at = 0;       ///< in the unit, since the first picture
    bool jumped = false;  ///< repaired for jumping forwards too far (or overflowing)
  };
  /// Places the picture of `pts_ns` (the sender's), `step` units after the previous one where
  /// it must be repaired.
  Placed place(int64_t pts_ns, int64_t step);

  bool started() const { return origin_ns_.has_value(); }
  /// The last picture placed, in the unit; nullopt before the first.
  std::optional<int64_t> last() const { return last_; }
  /// Sound of the sender's `pts_ns` on the file's timeline (ns since the first picture), moved
  /// as the pictures were; far beyond any gap where the arithmetic overflows (the track then
  /// continues in place). nullopt before the first picture.
  std::optional<int64_t> audio_ns(int64_t pts_ns) const;
  /// `units` of the unit, in ns.
  int64_t to_ns(int64_t units) const;

 private:
  AVRational unit_;
  std::optional<int64_t> origin_ns_;  // the first picture's pts
  std::optional<int64_t> last_;       // in the unit
  int64_t offset_ns_ = 0;             // file - sender: what the repairs moved the pictures by
};

}  // namespace rdmavideo::av
