// SPDX-License-Identifier: Apache-2.0
// continuity(), every audio timeline's one vocabulary, and AudioPlacement: a sender's sound on
// its picture's timeline, as the capture feed and the OBS output place it.
#include <gtest/gtest.h>

#include "rdmavideo/audio_placement.hpp"

namespace rdmavideo {
namespace {

using namespace std::chrono_literals;

// Each side of each bound: within the tolerance it follows on (at it too), then a gap or an
// overlap up to its own bound (inclusive), then a jump; the two bounds are independent.
TEST(Continuity, EachSideOfEachBound) {
  static_assert(continuity(0, 10, 100, 50) == Continuity::follows);
  EXPECT_EQ(continuity(10, 10, 100, 50), Continuity::follows);
  EXPECT_EQ(continuity(-10, 10, 100, 50), Continuity::follows);
  EXPECT_EQ(continuity(11, 10, 100, 50), Continuity::gap);
  EXPECT_EQ(continuity(100, 10, 100, 50), Continuity::gap);
  EXPECT_EQ(continuity(101, 10, 100, 50), Continuity::jump);
  EXPECT_EQ(continuity(-11, 10, 100, 50), Continuity::overlap);
  EXPECT_EQ(continuity(-50, 10, 100, 50), Continuity::overlap);
  EXPECT_EQ(continuity(-51, 10, 100, 50), Continuity::jump);
  // A tolerance as wide as the bounds: it follows on or has jumped, nothing between.
  EXPECT_EQ(continuity(20, 20, 20, 20), Continuity::follows);
  EXPECT_EQ(continuity(-21, 20, 20, 20), Continuity::jump);
  // The extremes of a peer's pts do not wrap.
  EXPECT_EQ(continuity(INT64_MAX, 10, 100, 50), Continuity::jump);
  EXPECT_EQ(continuity(INT64_MIN + 1, 10, 100, 50), Continuity::jump);
}

// A chunk that continues the one before within the resync distance is placed right after it,
// sample-exact: 48 kHz chunks of 441 samples, read with up to 5 ms of jitter, land at
// n * 441 / 48000 s exactly, however many of them follow.
TEST(AudioPlacement, ChunksContinueSampleExactThroughJitter) {
  AudioPlacement p(48000, 20ms, false);
  const int64_t start = 1'000'000;
  for (uint64_t n = 0; n < 100'000; ++n) {
    const int64_t exact = start + static_cast<int64_t>(n * 441 * 1'000'000'000 / 48000);
    const int64_t jitter = (static_cast<int64_t>(n * 7919) % 10'000'001) - 5'000'000;
    const auto placed = p.place(exact + (n == 0 ? 0 : jitter), 441);
    ASSERT_TRUE(placed);
    ASSERT_EQ(placed->pts_ns, exact) << "chunk " << n;
    ASSERT_EQ(placed->skip, 0u);
  }
  EXPECT_EQ(p.resyncs(), 0u);
}

// Once the chunk's own time is further than the resync distance from the continuation, the
// clocks have parted: it is placed at its own time, counted, and the next continue from there.
TEST(AudioPlacement, AChunkBeyondTheResyncDistanceIsPlacedAnewAndCounted) {
  AudioPlacement p(48000, 20ms, false);
  ASSERT_EQ(p.place(0, 480)->pts_ns, 0);                                 // 10 ms
  ASSERT_EQ(p.place(10'000'000 + 19'000'000, 480)->pts_ns, 10'000'000);  // within 20 ms
  EXPECT_EQ(p.resyncs(), 0u);
  const auto moved = p.place(20'000'000 + 21'000'000, 480);  // 21 ms off
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->pts_ns, 41'000'000);
  EXPECT_EQ(p.resyncs(), 1u);
  EXPECT_EQ(p.place(51'000'000, 480)->pts_ns, 51'000'000);
}

// With cut_before_start, samples before the first frame are cut: a chunk wholly before it is
// not sent, one across it is sent from its first sample at or after 0.
TEST(AudioPlacement, SamplesBeforeTheFirstFrameAreCutWhereAsked) {
  AudioPlacement p(48000, 20ms, true);
  EXPECT_FALSE(p.place(-30'000'000, 480));        // -30 ms .. -20 ms
  EXPECT_FALSE(p.place(-20'000'000, 480));        // -20 ms .. -10 ms
  const auto across = p.place(-10'000'000, 960);  // -10 ms .. +10 ms
  ASSERT_TRUE(across);
  EXPECT_EQ(across->skip, 480u);
  EXPECT_EQ(across->pts_ns, 0);
  const auto next = p.place(10'000'000, 480);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->skip, 0u);
  EXPECT_EQ(next->pts_ns, 10'000'000);
  // At 44.1 kHz no sample falls on 0: the first one after it is taken.
  AudioPlacement q(44100, 20ms, true);
  const auto odd = q.place(-1'000'000, 441);  // -1 ms .. +9 ms
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->skip, 45u);                       // 44.1 samples in 1 ms: the 45th is past 0
  EXPECT_EQ(odd->pts_ns, -1'000'000 + 1'020'408);  // 45 / 44100 s, floored
  EXPECT_GE(odd->pts_ns, 0);
  // Without the cut, the same chunk is sent whole.
  AudioPlacement r(44100, 20ms, false);
  EXPECT_EQ(r.place(-1'000'000, 441)->skip, 0u);
}

}  // namespace
}  // namespace rdmavideo
