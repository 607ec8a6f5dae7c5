// SPDX-License-Identifier: Apache-2.0
#include "picture_timeline.hpp"

extern "C" {
#include <libavutil/mathematics.h>
}

#include <limits>

#include "audio_track.hpp"

namespace rdmavideo::av {
namespace {
constexpr AVRational kNs{1, 1'000'000'000};
}  // namespace

int64_t PictureTimeline::to_ns(int64_t units) const { return av_rescale_q(units, unit_, kNs); }

PictureTimeline::Placed PictureTimeline::place(int64_t pts_ns, int64_t step) {
  if (!origin_ns_) {
    origin_ns_ = pts_ns;
    last_ = 0;
    return {};
  }
  int64_t since_first = 0;
  const bool overflow = __builtin_sub_overflow(pts_ns, *origin_ns_, &since_first);
  const int64_t max_jump = av_rescale_q(AudioTrack::kMostGapNs, kNs, unit_);
  int64_t at = overflow ? 0 : av_rescale_q_rnd(since_first, kNs, unit_, AV_ROUND_NEAR_INF);
  const bool backwards = !overflow && at <= *last_;
  const bool jump = overflow || at - *last_ > max_jump;
  if (backwards || jump) {
    at = *last_ + step;
    // The sound keeps to the picture: it is moved as the picture was (where the move can be
    // told: a pts whose distance overflows leaves the last move in place).
    int64_t moved = 0;
    if (!overflow && !__builtin_sub_overflow(to_ns(at), since_first, &moved)) offset_ns_ = moved;
  }
  last_ = at;
  return {at, jump};
}

std::optional<int64_t> PictureTimeline::audio_ns(int64_t pts_ns) const {
  if (!origin_ns_) return std::nullopt;
  int64_t since = 0;
  if (__builtin_sub_overflow(pts_ns, *origin_ns_, &since) ||
      __builtin_add_overflow(since, offset_ns_, &since)) {
    return std::numeric_limits<int64_t>::max() / 2;  // beyond any gap: continued in place
  }
  return since;
}

}  // namespace rdmavideo::av
