// SPDX-License-Identifier: Apache-2.0
// The test tone that goes with the test pattern (rdmavideo/test_pattern.hpp; rdmavideo-send
// --testsrc --tone HZ): a quiet sine at HZ (-40 dBFS), and at every whole
// second of the stream a beep of the same sine at -6 dBFS for 100 ms, beginning on the very
// sample of the second. The test pattern flashes on the first frame at or after each whole
// second (kStreamFlash), so a recording's sync is the distance from each beep's first sample
// to its flash's frame, and the tone's frequency is checked by counting its zero crossings.
// 48 kHz float planar, as OBS mixes: stereo, or up to 16 channels of the same sine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo {

class TestTone {
 public:
  static constexpr uint32_t kRate = 48000;
  static constexpr double kBeepSeconds = 0.1;
  static constexpr double kBeepLevel = 0.5;    // -6 dBFS
  static constexpr double kQuietLevel = 0.01;  // -40 dBFS

  TestTone(double frequency, uint32_t channels = 2);

  /// The AudioStart of the track ("tone 1000 Hz").
  proto::AudioStart format() const;
  /// Samples [first, first + count) of the track, planar (left, then right).
  std::vector<std::byte> samples(uint64_t first, uint32_t count) const;
  /// Whether sample `index` lies in a beep.
  static bool in_beep(uint64_t index);

 private:
  float value(uint64_t index) const;

  double frequency_;
  uint32_t channels_;
  // A whole number of Hz repeats every second: that second, computed once (the beep
  // included), so a frame's samples are a copy. Empty for other frequencies.
  std::vector<float> second_;
};

}  // namespace rdmavideo
