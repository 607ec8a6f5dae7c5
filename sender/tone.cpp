// SPDX-License-Identifier: Apache-2.0
#include "tone.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace rdmavideo::sender {

proto::AudioStart Tone::format() const {
  proto::AudioStart a;
  a.sample_format = proto::SampleFormat::f32p;
  a.sample_rate = kRate;
  a.channels = kChannels;
  a.channel_layout = 0x3;  // front left, front right
  a.name = fmt::format("tone {:g} Hz", frequency_);
  return a;
}

bool Tone::in_beep(uint64_t index) {
  return index % kRate < static_cast<uint64_t>(kBeepSeconds * kRate);
}

std::vector<std::byte> Tone::samples(uint64_t first, uint32_t count) const {
  std::vector<float> out(size_t{count} * kChannels);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t n = first + i;
    // The phase from the sample number alone, reduced per period so it stays exact for hours.
    const double cycles = std::fmod(static_cast<double>(n % (uint64_t{kRate} * 1000)) * frequency_ / kRate, 1.0);
    const double level = in_beep(n) ? kBeepLevel : kQuietLevel;
    const auto v = static_cast<float>(level * std::sin(2 * M_PI * cycles));
    for (uint32_t c = 0; c < kChannels; ++c) out[size_t{c} * count + i] = v;
  }
  std::vector<std::byte> bytes(out.size() * sizeof(float));
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

}  // namespace rdmavideo::sender
