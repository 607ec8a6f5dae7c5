// SPDX-License-Identifier: Apache-2.0
// A composite tile's stream's clock laid on the canvas's (compositor.hpp).
//
// Pictures: a frame's time on the canvas is its pts plus an offset that follows the quickest
// way frames come through: the offset is tied at the first frame, taken from any frame that
// arrives sooner after its time than the offset says (jitter only ever delays), and moved a
// 256th of the way toward each later one, so that a path that got longer, or a sender whose
// clock runs slow against the receiver's, is followed (0.1% slow: a millisecond a second,
// about 8 ms behind), and one whose clock runs fast is followed at once. A frame whose pts
// jumped ahead is sooner than the offset says and ties it at once; frames more than two
// canvas periods later than it says are frames held up on the way, unless they go on for 30
// frames in a row (the sender's pts went back), which ties it again.
//
// Sound: a track's samples are laid on the canvas's clock one after another, each packet
// where the one before it ended, so there is never a gap or an overlap for the recording or
// the mix to fill or trim. Where a packet belongs (its pts, plus the offset, plus how late the
// tile's pictures are shown) and where it would follow on part, the track is resampled a
// little slower or faster (delta(): libswresample's compensation, at most 1%) until they meet,
// half the distance about every second; so a sender's clock that drifts against the canvas's is
// followed by its sound too, without a click. Where they part by more than 100 ms (a jump in
// the sender's pts, a pause) the packet is placed where it belongs, and that is counted; in
// the track's first second, while the offset finds the quickest way through, by more than
// half a millisecond (not counted).
//
// Not thread-safe: the compositor calls it under its lock.
#pragma once

#include <cstdint>
#include <optional>

namespace rdmavideo::media {

class TileClock {
 public:
  /// A canvas of `period_ns` a frame whose sound is `rate` samples a second.
  TileClock(int64_t period_ns, uint32_t rate) : period_ns_(period_ns), rate_(rate) {}

  /// Forgets the stream (a new one takes the tile).
  void reset();
  /// Whether a frame has tied the stream's clock to the canvas's.
  bool tied() const { return offset_.has_value(); }
  /// A frame of `pts_ns` (the stream's clock) arrived `arrival_ns` into the canvas's clock:
  /// its time on the canvas's clock (within +-2^62 ns whatever the pts).
  int64_t frame(int64_t pts_ns, int64_t arrival_ns);
  /// The stream's clock on the canvas's: canvas ns = pts + offset (tied() first).
  int64_t offset_ns() const;

  struct Placement {
    int64_t at =
        0;  ///< the canvas sample the packet's first converted sample goes to (within +-2^40)
    int delta = 0;        ///< samples more (+, slower) or fewer (-) to make of it
    bool jumped = false;  ///< placed where it belongs rather than where the last one ended
  };
  /// Where a packet goes whose first sample is at `pts_ns` and whose pictures are shown
  /// `shift_ns` after their times, about `samples` canvas samples long (tied() first).
  Placement audio(int64_t pts_ns, int64_t shift_ns, int64_t samples);
  /// `samples` were laid from `at` on: the next packet follows them.
  void placed(int64_t at, int64_t samples) {
    next_ = at + samples;
    laid_ += samples;
  }
  /// Packets placed where they belong rather than where the last one ended, after the
  /// track's first second.
  uint64_t audio_jumps() const { return jumps_; }
  /// How far the sound is from where it belongs, at the last packet: + it is early.
  double audio_error_ms() const { return error_ms_; }

 private:
  int64_t period_ns_;
  uint32_t rate_;
  std::optional<double> offset_;  // canvas ns - pts ns, smoothed
  int late_ = 0;                  // frames in a row more than two periods later than it says
  std::optional<int64_t> next_;   // the canvas sample after the last laid
  int64_t laid_ = 0;              // samples laid since the first packet was placed
  double carry_ = 0;              // the compensation's fraction of a sample, carried
  uint64_t jumps_ = 0;
  double error_ms_ = 0;
};

}  // namespace rdmavideo::media
