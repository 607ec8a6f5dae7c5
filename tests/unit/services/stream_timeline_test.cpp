// SPDX-License-Identifier: Apache-2.0
// StreamTimeline: a received stream's pictures and sound on one time line, kept together
// whatever one source's timestamps do (a jump, an hour ahead, sound late or paused, sound
// with no picture), with every track's samples contiguous.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "rdmavideo/stream_timeline.hpp"

namespace rdmavideo {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr int64_t kFrame = kSecond / 30;
constexpr uint32_t kRate = 48000;
constexpr uint32_t kChunk = 480;  // 10 ms

// Drives a timeline as a stream's connection thread does, and checks what every source got.
struct Rig {
  explicit Rig(bool live) : line(live) { line.start_track(0, kRate, 0); }

  StreamTimeline line;
  int64_t now = 0;                // the receiver's monotonic clock
  std::vector<int64_t> pictures;  // stamps
  int64_t sound_end = -1;         // where the pushed sound so far ends (silence included)
  uint64_t silence = 0;           // samples of silence the track was given
  uint64_t discontinuities = 0;   // a chunk or silence not where the sound before ended

  int64_t ns(uint64_t samples) const { return static_cast<int64_t>(samples * kSecond / kRate); }
  void pushed(int64_t at, uint64_t samples) {
    if (sound_end >= 0 && std::llabs(at - sound_end) > 1) ++discontinuities;
    sound_end = at + ns(samples);
  }
  void picture(int64_t pts, int64_t arrival = -1) {
    pictures.push_back(line.picture(pts, kFrame, arrival, now));
    for (const auto& s : line.idle(now)) {
      pushed(s.at_ns, s.samples);
      silence += s.samples;
    }
  }
  void sound(int64_t pts, int64_t arrival = -1) {
    const auto placed = line.sound(0, pts, kChunk, arrival, now);
    if (placed.silence_samples) {
      pushed(placed.silence_at_ns, placed.silence_samples);
      silence += placed.silence_samples;
    }
    if (placed.keep) pushed(placed.at_ns, kChunk - placed.skip);
  }
  // `seconds` of a sender: a picture every frame and the sound up to its end, both offered
  // to `picture_pts` and `sound_pts`, which turn the sender's time into what it stamps.
  // A sender in real time: everything sent for a frame arrives as the frame ends.
  template <typename P, typename S>
  void run(double seconds, P picture_pts, S sound_pts, bool live = false) {
    int64_t sound_at = 0;
    for (int64_t f = 0; f < static_cast<int64_t>(seconds * 30); ++f) {
      const int64_t t = f * kFrame;
      now = t + kFrame;
      const int64_t arrival = live ? now : -1;
      for (; sound_at < t + kFrame; sound_at += ns(kChunk)) {
        const auto pts = sound_pts(sound_at);
        if (pts) sound(*pts, arrival);
      }
      const auto pts = picture_pts(t);
      if (pts) picture(*pts, arrival);
    }
  }
  // The pictures' stamps never go back, and each frame is a frame after the one before.
  void expect_pictures_every_frame() const {
    for (size_t i = 1; i < pictures.size(); ++i) {
      ASSERT_NEAR(static_cast<double>(pictures[i] - pictures[i - 1]), kFrame, 2 * kMs)
          << "picture " << i;
    }
  }
};

std::optional<int64_t> same(int64_t t) { return t; }

TEST(StreamTimeline, ASteadySenderKeepsItsOwnTimestamps) {
  Rig rig(false);
  rig.run(
      4, [](int64_t t) { return std::optional(t + 5 * kSecond); },
      [](int64_t t) { return std::optional(t + 5 * kSecond); });
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.pictures.front(), 0);
  EXPECT_EQ(rig.line.jumps(), 0u);
  EXPECT_EQ(rig.silence, 0u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.sound_end), 4.0 * kSecond, 20 * kMs);
}

// The pictures' pts jump 2 s ahead while the sound goes on: the pictures are moved back
// (one jump, said once), so picture and sound stay together and nothing waits 2 s.
TEST(StreamTimeline, APictureJumpIsMovedBackBesideTheSound) {
  Rig rig(false);
  rig.run(
      5, [](int64_t t) { return std::optional(t >= 2 * kSecond ? t + 2 * kSecond : t); }, same);
  rig.expect_pictures_every_frame();
  const auto jumps = rig.line.take_jumps();
  ASSERT_EQ(jumps.size(), 1u);
  EXPECT_EQ(jumps[0].source, StreamTimeline::kPictures);
  EXPECT_NEAR(static_cast<double>(jumps[0].by_ns), -2.0 * kSecond, kMs);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.pictures.back() - rig.sound_end), 0, 40 * kMs);
}

// The whole sender jumps (its pts start again from 0): both sources go on where they were.
TEST(StreamTimeline, ASenderWhoseClockGoesBackGoesOnWhereItWas) {
  Rig rig(false);
  rig.run(
      4, [](int64_t t) { return std::optional(t >= 2 * kSecond ? t - 2 * kSecond : t); },
      [](int64_t t) { return std::optional(t >= 2 * kSecond ? t - 2 * kSecond : t); });
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 2u) << "the sound and the pictures, once each";
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.pictures.back()), 4.0 * kSecond, 50 * kMs);
}

// A file sent as fast as it goes, its sound 1.5 s behind its pictures as they arrive but
// coming all the time: kept as the sender stamped it, no silence, no jump.
TEST(StreamTimeline, SoundBehindThePicturesButComingIsKeptAsStamped) {
  Rig rig(false);
  int64_t sound_at = 0;
  for (int64_t f = 0; f < 180; ++f) {
    rig.now = f * kMs;  // 180 pictures in 180 ms
    const int64_t t = f * kFrame;
    for (; sound_at < t + kFrame - 1500 * kMs; sound_at += rig.ns(kChunk)) rig.sound(sound_at);
    rig.picture(t);
  }
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 0u);
  EXPECT_EQ(rig.silence, 0u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.sound_end), 4.5 * kSecond, 20 * kMs);
}

// Sound that arrives 3 s after its pictures: silence while it is missing, then it is moved
// once to within half a second of the pictures, and stays there, contiguous.
TEST(StreamTimeline, LateSoundIsMovedOnceBesideThePicturesAndStaysContiguous) {
  Rig rig(false);
  rig.run(8, same, [](int64_t t) {
    return t >= 3 * kSecond ? std::optional(t - 3 * kSecond) : std::nullopt;
  });
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 1u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_GT(rig.silence, 0u);
  const int64_t behind = rig.pictures.back() - rig.sound_end;
  EXPECT_GE(behind, 0);
  EXPECT_LE(behind, StreamTimeline::kApartNs);
}

// One chunk stamped an hour ahead: moved back, then the next moved back again; the sound
// stays contiguous and the pictures are not touched.
TEST(StreamTimeline, OneChunkAnHourAheadIsMovedBackAndTheTrackGoesOn) {
  Rig rig(false);
  rig.run(4, same, [](int64_t t) {
    return std::optional(t >= 2 * kSecond && t < 2 * kSecond + 10 * kMs ? t + 3600 * kSecond : t);
  });
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 2u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_EQ(rig.silence, 0u);
  EXPECT_NEAR(static_cast<double>(rig.sound_end), 4.0 * kSecond, 40 * kMs);
}

// A track that says nothing for 2 s while the pictures go on is given silence up to half a
// second behind them, then the rest of the hole when it speaks again: contiguous, 2 s of it.
TEST(StreamTimeline, APausedTrackIsGivenSilenceAndStaysContiguous) {
  Rig rig(false);
  rig.run(5, same, [](int64_t t) {
    return t >= 2 * kSecond && t < 4 * kSecond ? std::nullopt : std::optional(t);
  });
  EXPECT_EQ(rig.line.jumps(), 0u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.silence) / kRate, 2.0, 0.011);
}

// Sound with no picture at all: the pictures are owed a gap up to half a second behind it,
// each time asked only for what is new.
TEST(StreamTimeline, SoundWithNoPicturesAsksForAGapInThePictures) {
  Rig rig(false);
  for (int64_t t = 0; t < 3 * kSecond; t += rig.ns(kChunk)) rig.sound(t);
  EXPECT_FALSE(rig.line.picture_gap(rig.now)) << "sound as fast as it comes: no picture yet";
  rig.now = kSecond;
  const auto gap = rig.line.picture_gap(rig.now);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->first, 0);
  EXPECT_NEAR(static_cast<double>(gap->second), 2.5 * kSecond, 20 * kMs);
  EXPECT_FALSE(rig.line.picture_gap(rig.now)) << "nothing new";
  for (int64_t t = 3 * kSecond; t < 4 * kSecond; t += rig.ns(kChunk)) rig.sound(t);
  const auto more = rig.line.picture_gap(rig.now);
  ASSERT_TRUE(more);
  EXPECT_EQ(more->first, gap->second);
  EXPECT_EQ(rig.line.jumps(), 0u);
}

// A chunk of 30 ms that overlaps what went before by 20 ms keeps its last 10 ms, right after
// it; one that lies wholly before is dropped; one 20 ms late leaves 20 ms of silence before it.
TEST(StreamTimeline, OverlapsAreCutAndHolesFilledSampleExact) {
  StreamTimeline line(false);
  line.start_track(0, kRate, 0);
  EXPECT_EQ(line.sound(0, 0, 480, -1, 0).at_ns, 0);
  const auto overlapping = line.sound(0, -10 * kMs, 1440, -1, 0);
  EXPECT_TRUE(overlapping.keep);
  EXPECT_EQ(overlapping.skip, 960u);
  EXPECT_EQ(overlapping.at_ns, 10 * kMs);
  EXPECT_EQ(overlapping.silence_samples, 0u);
  EXPECT_FALSE(line.sound(0, 0, 480, -1, 0).keep) << "wholly before where the track is";
  EXPECT_EQ(line.cut_samples(), 960u + 480u);
  const auto late = line.sound(0, 40 * kMs, 480, -1, 0);
  EXPECT_EQ(late.silence_at_ns, 20 * kMs);
  EXPECT_EQ(late.silence_samples, 960u);
  EXPECT_EQ(late.at_ns, 40 * kMs);
  EXPECT_EQ(line.silence_samples(), 960u);
  EXPECT_EQ(line.jumps(), 0u);
}

// Live: one picture stamped an hour ahead does not become the stream's latency; every later
// picture still gets its own stamp, a frame after the one before, at its arrival.
TEST(StreamTimeline, LiveOnePictureAnHourAheadDoesNotHoldTheTimeLine) {
  Rig rig(true);
  rig.run(
      4,
      [](int64_t t) {
        return std::optional(t == 60 * kFrame ? t + 3600 * kSecond : t + 7 * kSecond);
      },
      [](int64_t t) { return std::optional(t + 7 * kSecond); }, true);
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 2u) << "there and back";
  for (size_t i = 0; i < rig.pictures.size(); ++i) {
    ASSERT_LE(rig.pictures[i], static_cast<int64_t>(i + 1) * kFrame) << "stamped after it arrived";
  }
  EXPECT_NEAR(static_cast<double>(rig.pictures.back()), 119.0 * kFrame, 5 * kMs);
}

TEST(StreamTimeline, LiveOneChunkAnHourAheadDoesNotHoldTheTimeLine) {
  Rig rig(true);
  rig.run(
      4, same, [](int64_t t) { return std::optional(t == 2 * kSecond ? t + 3600 * kSecond : t); },
      true);
  rig.expect_pictures_every_frame();
  EXPECT_EQ(rig.line.jumps(), 2u);
  EXPECT_EQ(rig.discontinuities, 0u);
  EXPECT_NEAR(static_cast<double>(rig.pictures.back()), 119.0 * kFrame, 5 * kMs);
}

// Timestamps at the ends of int64 (a hostile peer's) land somewhere, without overflow.
TEST(StreamTimeline, ExtremeTimestampsDoNotOverflow) {
  for (const bool live : {false, true}) {
    Rig rig(live);
    for (int i = 0; i < 50; ++i) {
      const int64_t pts = i % 3 == 0 ? INT64_MAX : i % 3 == 1 ? INT64_MIN : i * kFrame;
      rig.picture(pts, live ? i * kFrame : -1);
      rig.sound(i % 2 ? INT64_MIN : INT64_MAX, live ? i * kFrame : -1);
      rig.line.picture_gap(i * kFrame);
    }
    for (size_t i = 1; i < rig.pictures.size(); ++i)
      EXPECT_GE(rig.pictures[i], rig.pictures[i - 1]);
  }
}

}  // namespace
}  // namespace rdmavideo
