// SPDX-License-Identifier: Apache-2.0
// Turns a track's samples, as the sender sent them (any format the protocol carries), into
// what a sound device plays: interleaved 32-bit float at the device's rate and channel count
// (libswresample: format, layout and rate; a layout with more channels than the device is
// mixed down by FFmpeg's matrix).
//
// It also lets playback follow a clock that is not the device's: compensate() asks for a few
// samples more or fewer over the next stretch of output (libswresample's soft compensation,
// which stretches the audio without a click), which is how a receiver keeps a sender whose
// clock runs a little fast or slow from growing or draining its queue.
//
// A build without FFmpeg has the same API (src/unavailable.cpp): open() fails with
// `unsupported`. One thread calls a converter.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

class AudioConverter {
 public:
  /// From `from` to interleaved float at `rate` Hz with `channels` channels (their default
  /// layout). An error names what libswresample refused.
  static Result<std::unique_ptr<AudioConverter>> open(const proto::AudioStart& from, uint32_t rate,
                                                      uint32_t channels);
  ~AudioConverter();
  AudioConverter(const AudioConverter&) = delete;
  AudioConverter& operator=(const AudioConverter&) = delete;

  /// `samples` samples per channel of the track's format, the first `skip` left out.
  /// Returns the output's interleaved floats, valid until the next call; the resampler may
  /// keep a few samples back for the next call.
  Result<std::span<const float>> convert(uint32_t samples, std::span<const std::byte> data,
                                         uint32_t skip = 0);
  /// Over the next `distance` output samples, play `delta` samples more (positive: slower,
  /// the queue grows) or fewer (negative). A new call replaces the last. At most a 50th of
  /// the distance is applied at once (any distance, from one sample, is valid); the rest is
  /// carried to the next calls, up to 4,800 samples.
  Result<void> compensate(int delta, int distance);
  /// "f32p 48000 Hz 5.1 -> 48000 Hz stereo" for the log.
  std::string describe() const;

 private:
  struct Impl;
  explicit AudioConverter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
