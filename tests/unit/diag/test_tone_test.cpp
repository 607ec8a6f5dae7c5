// SPDX-License-Identifier: Apache-2.0
// The test tone every sender can send beside the test pattern: its format, a beep on each whole
// second, the quiet sine between, and the same samples however a stream cuts them into chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "rdmavideo/test_tone.hpp"

namespace rdmavideo {
namespace {

std::vector<float> floats(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

float peak(const std::vector<float>& v, size_t from, size_t to) {
  float p = 0;
  for (size_t i = from; i < to; ++i) p = std::max(p, std::abs(v[i]));
  return p;
}

TEST(TestTone, IsFloatPlanarAt48kHzNamedByItsFrequency) {
  const TestTone tone(1000, 6);
  const auto f = tone.format();
  EXPECT_EQ(f.sample_format, proto::SampleFormat::f32p);
  EXPECT_EQ(f.sample_rate, 48000u);
  EXPECT_EQ(f.channels, 6u);
  EXPECT_EQ(f.name, "tone 1000 Hz");
}

TEST(TestTone, BeepsForATenthOfEachWholeSecondAndIsQuietBetween) {
  const TestTone tone(1000);
  const auto two_seconds = floats(tone.samples(0, 2 * 48000));  // left, then right
  EXPECT_NEAR(peak(two_seconds, 0, 4800), TestTone::kBeepLevel, 0.01);
  EXPECT_NEAR(peak(two_seconds, 4800, 48000), TestTone::kQuietLevel, 0.001);
  EXPECT_NEAR(peak(two_seconds, 48000, 48000 + 4800), TestTone::kBeepLevel, 0.01);
  EXPECT_TRUE(TestTone::in_beep(48000));
  EXPECT_TRUE(TestTone::in_beep(48000 + 4799));
  EXPECT_FALSE(TestTone::in_beep(48000 + 4800));
  // The right channel is the left.
  const auto both = floats(tone.samples(0, 480));
  EXPECT_TRUE(std::equal(both.begin(), both.begin() + 480, both.begin() + 480));
}

TEST(TestTone, ChunksOfAnySizeJoinIntoTheSameSamples) {
  for (double hz : {1000.0, 997.5}) {  // a whole number of Hz from its table, else computed
    const TestTone tone(hz, 1);
    const auto whole = floats(tone.samples(47'000, 3000));
    std::vector<float> joined;
    for (uint64_t at = 47'000; at < 50'000; at += 7) {
      const auto part =
          floats(tone.samples(at, static_cast<uint32_t>(std::min<uint64_t>(7, 50'000 - at))));
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_EQ(joined, whole) << hz << " Hz";
  }
}

}  // namespace
}  // namespace rdmavideo
