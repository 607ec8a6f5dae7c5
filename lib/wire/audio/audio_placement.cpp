// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/audio_placement.hpp"

namespace rdmavideo {

AudioPlacement::AudioPlacement(uint32_t sample_rate, std::chrono::nanoseconds resync,
                               bool cut_before_start)
    : rate_(sample_rate ? sample_rate : 1), resync_ns_(resync.count()), cut_(cut_before_start) {}

int64_t AudioPlacement::ns_of(uint64_t samples) const {
  // In 128 bits: an hour of 768 kHz sound times 1e9 is beyond 64.
  return static_cast<int64_t>(static_cast<unsigned __int128>(samples) * 1'000'000'000u / rate_);
}

std::optional<AudioPlacement::Placed> AudioPlacement::place(int64_t at_ns, uint32_t samples) {
  if (!started_) {
    started_ = true;
    base_ns_ = at_ns;
    since_base_ = 0;
  } else if (continuity(at_ns - (base_ns_ + ns_of(since_base_)), resync_ns_, resync_ns_,
                        resync_ns_) == Continuity::jump) {
    ++resyncs_;
    base_ns_ = at_ns;
    since_base_ = 0;
  }
  const uint64_t first = since_base_;
  since_base_ += samples;
  uint32_t skip = 0;
  if (cut_ && base_ns_ + ns_of(first) < 0) {
    // The first sample at or after the picture's start: base + ns_of(first + k) >= 0.
    const auto before = static_cast<unsigned __int128>(-(base_ns_ + ns_of(first)));
    const auto k = static_cast<uint64_t>((before * rate_ + 999'999'999) / 1'000'000'000);
    if (k >= samples) return std::nullopt;
    skip = static_cast<uint32_t>(k);
    while (skip > 0 && base_ns_ + ns_of(first + skip - 1) >= 0) --skip;  // floored ns_of
    while (base_ns_ + ns_of(first + skip) < 0) ++skip;
    if (skip >= samples) return std::nullopt;
  }
  return Placed{base_ns_ + ns_of(first + skip), skip};
}

}  // namespace rdmavideo
