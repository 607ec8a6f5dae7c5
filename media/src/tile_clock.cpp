// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/tile_clock.hpp"

#include <algorithm>
#include <cmath>

#include "rdmavideo/audio_placement.hpp"

namespace rdmavideo::media {

namespace {
constexpr double kFollowUp = 1.0 / 256;     // of a later frame's distance from the offset
constexpr double kSettleSeconds = 1.0;      // the sound closes its distance at this pace
constexpr double kMostCorrection = 0.01;    // resampled at most 1% slower or faster
constexpr int64_t kPlaceAgainDivisor = 10;  // beyond a tenth of a second: placed again
constexpr int64_t kSettlingDivisor = 2000;  // in its first second: beyond half a millisecond
constexpr int kLateToTieAgain = 30;  // frames in a row over two periods late: its pts went back
// A peer's pts may be anything: times on the canvas's clock are kept within +-2^62 ns (146
// years) and its samples within +-2^40 (265 days at 48 kHz), so that what follows from them
// never overflows.
constexpr int64_t kMostNs = int64_t{1} << 62;
constexpr double kMostSamples = static_cast<double>(int64_t{1} << 40);

// a + b, or the nearest value within +-kMostNs.
int64_t bounded_sum(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? kMostNs : -kMostNs;
  return std::clamp(sum, -kMostNs, kMostNs);
}
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
  int64_t lead_ns = 0;
  if (__builtin_sub_overflow(arrival_ns, pts_ns, &lead_ns))
    lead_ns = pts_ns > 0 ? -kMostNs : kMostNs;
  const double lead = static_cast<double>(std::clamp(lead_ns, -kMostNs, kMostNs));
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
  return bounded_sum(pts_ns, offset_ns());
}

int64_t TileClock::offset_ns() const { return offset_ ? std::llround(*offset_) : 0; }

TileClock::Placement TileClock::audio(int64_t pts_ns, int64_t shift_ns, int64_t samples) {
  const double belongs_ns =
      static_cast<double>(bounded_sum(pts_ns, shift_ns)) + offset_.value_or(0.0);
  const auto belongs =
      std::llround(std::clamp(belongs_ns * rate_ / 1e9, -kMostSamples, kMostSamples));
  const bool settling = laid_ < static_cast<int64_t>(rate_);
  // Within the bound it follows on, the resampling closing what is left; beyond it, jumped.
  const int64_t bound =
      static_cast<int64_t>(rate_) / (settling ? kSettlingDivisor : kPlaceAgainDivisor);
  if (!next_ || continuity(belongs - *next_, bound, bound, bound) == Continuity::jump) {
    if (next_ && !settling) ++jumps_;
    if (!next_) laid_ = 0;
    carry_ = 0;
    error_ms_ = 0;
    return {belongs, 0, true};
  }
  // Later than it follows on (error > 0): make more samples of it, so it moves later.
  const double error = static_cast<double>(belongs - *next_);
  error_ms_ = -error * 1000.0 / rate_;
  const double ratio =
      std::clamp(error / (rate_ * kSettleSeconds), -kMostCorrection, kMostCorrection);
  const double want = ratio * static_cast<double>(samples) + carry_;
  const int delta = static_cast<int>(std::lround(want));
  carry_ = want - delta;
  return {*next_, delta, false};
}

}  // namespace rdmavideo::media
