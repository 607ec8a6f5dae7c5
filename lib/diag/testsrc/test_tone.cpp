// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/test_tone.hpp"

#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

namespace rdmavideo {

proto::AudioStart TestTone::format() const {
  proto::AudioStart a;
  a.sample_format = proto::SampleFormat::f32p;
  a.sample_rate = kRate;
  a.channels = channels_;
  // WAVE channel masks: mono is front centre, stereo, 5.1 and 7.1 as FFmpeg names them; other
  // counts take the default order (0).
  switch (channels_) {
    case 1: a.channel_layout = 0x4; break;
    case 2: a.channel_layout = 0x3; break;
    case 6: a.channel_layout = 0x3f; break;
    case 8: a.channel_layout = 0x63f; break;
    default: a.channel_layout = 0; break;
  }
  a.name = fmt::format("tone {:g} Hz", frequency_);
  return a;
}

TestTone::TestTone(double frequency, uint32_t channels)
    : frequency_(frequency), channels_(channels) {
  if (frequency == std::floor(frequency)) {
    std::vector<float> second(kRate);
    for (uint32_t i = 0; i < kRate; ++i) second[i] = value(i);  // computed: the table is empty yet
    second_ = std::move(second);
  }
}

float TestTone::value(uint64_t n) const {
  if (!second_.empty()) return second_[n % kRate];
  // The phase from the sample number alone, reduced per period so it stays exact for hours.
  const double cycles =
      std::fmod(static_cast<double>(n % (uint64_t{kRate} * 1000)) * frequency_ / kRate, 1.0);
  const double level = in_beep(n) ? kBeepLevel : kQuietLevel;
  return static_cast<float>(level * std::sin(2 * std::numbers::pi * cycles));
}

bool TestTone::in_beep(uint64_t index) {
  return index % kRate < static_cast<uint64_t>(kBeepSeconds * kRate);
}

std::vector<std::byte> TestTone::samples(uint64_t first, uint32_t count) const {
  // Planar: the first channel computed (or copied from the second's table), the rest copied.
  std::vector<std::byte> bytes(size_t{count} * channels_ * sizeof(float));
  auto* out = reinterpret_cast<float*>(bytes.data());
  for (uint32_t i = 0; i < count; ++i) out[i] = value(first + i);
  for (uint32_t c = 1; c < channels_; ++c)
    std::memcpy(out + size_t{c} * count, out, size_t{count} * sizeof(float));
  return bytes;
}

}  // namespace rdmavideo
