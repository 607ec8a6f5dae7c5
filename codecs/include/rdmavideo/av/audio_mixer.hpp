// SPDX-License-Identifier: Apache-2.0
// Mixes several tracks of interleaved float at one rate and channel count into one, with
// libavfilter's amix (each input at 1/N, as amix normalises): the composite's sound when
// every tile's is mixed (rdmavideo-recv --composite-audio mix).
//
// The caller aligns the inputs: each call gives every input the same number of samples for
// the same stretch of time (silence for an input with nothing there), and gets that many
// mixed samples back. One thread calls a mixer.
//
// A build without FFmpeg has the same API (src/unavailable.cpp): open() fails with
// `unsupported`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

class AudioMixer {
 public:
  /// `inputs` tracks (1..64) of `channels` channels (1 or 2) at `rate` Hz.
  static Result<std::unique_ptr<AudioMixer>> open(uint32_t inputs, uint32_t rate,
                                                  uint32_t channels);
  ~AudioMixer();
  AudioMixer(const AudioMixer&) = delete;
  AudioMixer& operator=(const AudioMixer&) = delete;

  /// `samples` samples per channel of each input (`inputs` spans of samples x channels
  /// floats), mixed; valid until the next call.
  Result<std::span<const float>> mix(const std::vector<std::span<const float>>& inputs,
                                     uint32_t samples);

 private:
  struct Impl;
  explicit AudioMixer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
