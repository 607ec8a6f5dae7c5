// SPDX-License-Identifier: Apache-2.0
#include "tile_clock.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace rdmavideo::receiver {

namespace {
constexpr double kFollowUp = 1.0 / 256;     // of a later frame's distance from the offset
constexpr double kSettleSeconds = 1.0;      // the sound closes its distance at this pace
constexpr double kMostCorrection = 0.01;    // resampled at most 1% slower or faster
constexpr int64_t kPlaceAgainDivisor = 10;  // beyond a tenth of a second: placed again
constexpr int64_t kSettlingDivisor = 2000;  // in its first second: beyond half a millisecond
constexpr int kLateToTieAgain = 30;          // frames in a row over two periods late: its pts went back
}  // namespace

void TileClock::reset() {
  offset_.reset();
  late_ = 0;
  next_.reset();
  laid_ = 0;
  carry_ = 0;
  error_ms_ = 0;
}

int64_t TileClock::frame(int64_t pts_ns, int64_t arrival_ns) {
  const double lead = static_cast<double>(arrival_ns - pts_ns);
  if (!offset_ || lead < *offset_) {
    offset_ = lead;  // the first frame, the quickest way through yet, or its pts jumped ahead
    late_ = 0;
  } else if (lead - *offset_ > 2.0 * static_cast<double>(period_ns_)) {
    // Held up on the way (a burst follows), or, when it goes on, its pts went back.
    if (++late_ >= kLateToTieAgain) {
      offset_ = lead;
      late_ = 0;
    }
  } else {
    *offset_ += (lead - *offset_) * kFollowUp;
    late_ = 0;
  }
  return pts_ns + offset_ns();
}

int64_t TileClock::offset_ns() const { return offset_ ? std::llround(*offset_) : 0; }

TileClock::Placement TileClock::audio(int64_t pts_ns, int64_t shift_ns, int64_t samples) {
  const double belongs_ns = static_cast<double>(pts_ns + shift_ns) + offset_.value_or(0.0);
  const auto belongs = static_cast<int64_t>(std::llround(belongs_ns * rate_ / 1e9));
  const int64_t apart = next_ ? std::llabs(belongs - *next_) : 0;
  const bool settling = laid_ < static_cast<int64_t>(rate_);
  if (!next_ || apart > static_cast<int64_t>(rate_) / kPlaceAgainDivisor ||
      (settling && apart > static_cast<int64_t>(rate_) / kSettlingDivisor)) {
    if (next_ && !settling) ++jumps_;
    if (!next_) laid_ = 0;
    carry_ = 0;
    error_ms_ = 0;
    return {belongs, 0, true};
  }
  // Later than it follows on (error > 0): make more samples of it, so it moves later.
  const double error = static_cast<double>(belongs - *next_);
  error_ms_ = -error * 1000.0 / rate_;
  const double ratio = std::clamp(error / (rate_ * kSettleSeconds), -kMostCorrection, kMostCorrection);
  const double want = ratio * static_cast<double>(samples) + carry_;
  const int delta = static_cast<int>(std::lround(want));
  carry_ = want - delta;
  return {*next_, delta, false};
}

}  // namespace rdmavideo::receiver
