// SPDX-License-Identifier: Apache-2.0
// The built-in test pattern and the receiver's FrameVerifier: frames verify against their
// own sequence number and nothing else, a damaged byte is located by plane and offset, both
// ends render the same frames, and the pattern really is colour bars.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo {
namespace {

using Bytes = std::vector<std::byte>;

::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

proto::StreamStart pattern_stream(PixelFormat format, uint32_t w, uint32_t h) {
  auto m = proto::make_stream_start(format, w, h, Rational{30, 1});
  EXPECT_TRUE(m) << m.error().message();
  m->flags = proto::kStreamTestPattern;
  return *m;
}

Bytes copy_of(std::span<const std::byte> data) { return Bytes(data.begin(), data.end()); }

constexpr std::pair<uint32_t, uint32_t> kSizes[] = {{64, 36}, {33, 17}};

std::string trace(PixelFormat format, uint32_t w, uint32_t h) {
  return std::string(name(format)) + " " + std::to_string(w) + "x" + std::to_string(h);
}

TEST(TestPattern, FrameVerifiesAgainstItsOwnSequence) {
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(trace(format, w, h));
      const proto::StreamStart stream = pattern_stream(format, w, h);
      TestPattern pattern(stream);
      for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{1000}, ~uint64_t{0}}) {
        SCOPED_TRACE(n);
        const auto frame = pattern.frame(n);
        ASSERT_EQ(frame.size(), stream.layout.frame_bytes);
        const auto mismatch = pattern.verify(n, frame);
        EXPECT_FALSE(mismatch.has_value()) << mismatch->describe(n);
      }
    }
  }
}

TEST(TestPattern, TinyFramesVerify) {
  // Frames smaller than the stamp carry as much of it as fits.
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : {std::pair<uint32_t, uint32_t>{1, 1}, std::pair<uint32_t, uint32_t>{2, 2},
                        std::pair<uint32_t, uint32_t>{3, 1}}) {
      SCOPED_TRACE(trace(format, w, h));
      const proto::StreamStart stream = pattern_stream(format, w, h);
      TestPattern sender(stream);
      const TestPattern receiver(stream);
      for (uint64_t n = 0; n < 3; ++n) {
        const auto frame = sender.frame(n);
        ASSERT_EQ(frame.size(), stream.layout.frame_bytes);
        const auto mismatch = receiver.verify(n, frame);
        EXPECT_FALSE(mismatch.has_value()) << mismatch->describe(n);
      }
    }
  }
}

TEST(TestPattern, FrameCarriesItsStamp) {
  TestPattern pattern(pattern_stream(PixelFormat::rgba, 64, 36));
  const auto frame = pattern.frame(0x0102030405060708);
  const std::string tag(reinterpret_cast<const char*>(frame.data()), 8);
  EXPECT_EQ(tag, "RDVFRAME");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(frame[8 + i], std::byte(8 - i)) << i;  // little-endian
}

// The stamp of a 10-bit format holds only valid 10-bit samples, so a stamped frame is video
// an encoder takes as it is (FFV1 mis-codes words above 10 bits).
TEST(TestPattern, TenBitStampsAreValidSamples) {
  const uint64_t sequence = 0xfedcba9876543210;
  for (PixelFormat format : {PixelFormat::p010, PixelFormat::yuv422p10, PixelFormat::v210}) {
    SCOPED_TRACE(std::string(name(format)));
    TestPattern pattern(pattern_stream(format, 96, 8));
    const auto frame = pattern.frame(sequence);
    const size_t n = pattern.stamp_bytes();
    ASSERT_GT(n, TestPattern::kStampPayloadBytes);
    std::vector<uint8_t> payload;
    if (format == PixelFormat::v210) {
      for (size_t at = 0; at < n; at += 4) {
        uint32_t word = 0;
        std::memcpy(&word, frame.data() + at, 4);
        EXPECT_EQ(word >> 30, 0u) << "v210 word " << at / 4 << " uses bits 30-31";
        for (int c = 0; c < 3; ++c) payload.push_back(static_cast<uint8_t>(word >> (10 * c)));
      }
    } else {
      for (size_t at = 0; at < n; at += 2) {
        uint16_t word = 0;
        std::memcpy(&word, frame.data() + at, 2);
        if (format == PixelFormat::p010) {
          EXPECT_EQ(word & 0x3f, 0) << "p010 word " << at / 2 << " has low bits set";
          word >>= 6;
        }
        EXPECT_LE(word, 1023) << "word " << at / 2;
        payload.push_back(static_cast<uint8_t>(word));
      }
    }
    EXPECT_EQ(std::string(payload.begin(), payload.begin() + 8), "RDVFRAME");
    uint64_t got = 0;
    for (int i = 0; i < 8; ++i) got |= uint64_t{payload[8 + i]} << (8 * i);
    EXPECT_EQ(got, sequence);
    EXPECT_FALSE(pattern.verify(sequence, frame).has_value());
  }
}

TEST(TestPattern, WrongSequenceIsFoundInTheStamp) {
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(trace(format, w, h));
      TestPattern pattern(pattern_stream(format, w, h));
      const Bytes frame = copy_of(pattern.frame(5));
      const auto mismatch = pattern.verify(6, frame);
      ASSERT_TRUE(mismatch.has_value());
      EXPECT_EQ(mismatch->plane, 0);
      EXPECT_LT(mismatch->offset, pattern.stamp_bytes());
      EXPECT_NE(mismatch->got, mismatch->expected);
      const std::string text = mismatch->describe(6);
      EXPECT_TRUE(contains(text, "frame 6"));
      EXPECT_TRUE(contains(text, "plane 0"));
      if (traits(format).bits == 8) {
        EXPECT_EQ(mismatch->offset, 8u);  // the tag matches; the sequence's low byte does not
        EXPECT_EQ(mismatch->got, 5);
        EXPECT_EQ(mismatch->expected, 6);
        EXPECT_TRUE(contains(text, "byte 8"));
      } else {
        EXPECT_GE(mismatch->offset, 8u);  // past the encoded tag's first samples
      }
    }
  }
}

TEST(TestPattern, DamagedByteInLastPlaneIsLocated) {
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(trace(format, w, h));
      const proto::StreamStart stream = pattern_stream(format, w, h);
      TestPattern pattern(stream);
      Bytes frame = copy_of(pattern.frame(3));  // a copy: frame() hands out the pattern's buffer
      const int last = stream.layout.plane_count - 1;
      const Plane& plane = stream.layout.planes[last];
      const size_t within = size_t{plane.stride} * plane.rows / 2 + 1;
      const size_t at = plane.offset + within;
      ASSERT_GE(at, 64u);  // past the stamp
      ASSERT_LT(at, frame.size());
      const auto original = static_cast<uint8_t>(frame[at]);
      frame[at] ^= std::byte{0xff};

      const auto mismatch = pattern.verify(3, frame);
      ASSERT_TRUE(mismatch.has_value());
      EXPECT_EQ(mismatch->plane, last);
      EXPECT_EQ(mismatch->offset, within);
      EXPECT_EQ(mismatch->got, static_cast<uint8_t>(original ^ 0xff));
      EXPECT_EQ(mismatch->expected, original);
      EXPECT_TRUE(contains(mismatch->describe(3),
                           "plane " + std::to_string(last) + " byte " + std::to_string(within)));
    }
  }
}

TEST(TestPattern, ShortFrameIsReportedWhereItEnds) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::nv12, 64, 36);
  TestPattern pattern(stream);
  const auto frame = pattern.frame(1);
  const auto mismatch = pattern.verify(1, frame.first(frame.size() - 10));
  ASSERT_TRUE(mismatch.has_value());
  EXPECT_EQ(mismatch->plane, 1);
  EXPECT_EQ(mismatch->offset, stream.layout.planes[1].stride * stream.layout.planes[1].rows - 10);
}

// A frame longer than the pattern's must be reported as a mismatch at the pattern's end.
// Regression: verify() read one byte past the rendered frame for data longer than it
// (a heap-buffer-overflow under ASan).
TEST(TestPattern, LongFrameIsReportedWhereThePatternEnds) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::rgba, 64, 36);
  TestPattern pattern(stream);
  Bytes frame = copy_of(pattern.frame(2));
  frame.push_back(std::byte{0x5a});
  const auto mismatch = pattern.verify(2, frame);
  ASSERT_TRUE(mismatch.has_value());
  EXPECT_EQ(mismatch->plane, 0);
  EXPECT_EQ(mismatch->offset, stream.layout.frame_bytes);
  EXPECT_EQ(mismatch->got, 0x5a);
}

// A layout may put plane 0 after some padding (validate_layout allows it), and a receiver's
// TestPattern, which never sends, must still accept the sender's frames. Regression: verify()
// once built the expected stamp in a copy of only the first 64 bytes, so with
// planes[0].offset > 48 every frame failed at "plane 0 byte 0".
TEST(TestPattern, ReceiverAcceptsFramesWhenPlaneZeroIsPadded) {
  proto::StreamStart stream = pattern_stream(PixelFormat::uyvy, 64, 36);
  stream.layout.planes[0].offset = 64;
  stream.layout.frame_bytes += 64;
  ASSERT_TRUE(validate_layout(stream.pixel_format, stream.width, stream.height, stream.layout));
  TestPattern sender(stream);
  const TestPattern receiver(stream);
  for (uint64_t n = 0; n < 3; ++n) {
    SCOPED_TRACE(n);
    const auto frame = sender.frame(n);
    const auto mismatch = receiver.verify(n, frame);
    EXPECT_FALSE(mismatch.has_value()) << mismatch->describe(n);
  }
}

TEST(TestPattern, PhaseCountIsBounded) {
  for (uint32_t bytes : {0u, 1u, 64u, 1u << 20, 4147200u, 33177600u, 100u << 20, 192u << 20,
                         1u << 30, 0xffffffffu}) {
    SCOPED_TRACE(bytes);
    const uint32_t phases = TestPattern::phase_count(bytes);
    EXPECT_GE(phases, 2u);
    EXPECT_LE(phases, 8u);
  }
  EXPECT_EQ(TestPattern::phase_count(64 * 36 * 4), 8u);  // small frames: the most phases
  EXPECT_EQ(TestPattern::phase_count(1u << 30), 2u);     // huge frames: the fewest
  // 4K RGBA stays under about 200 MB of rendered frames.
  const uint32_t uhd_rgba = 3840 * 2160 * 4;
  EXPECT_LE(uint64_t{TestPattern::phase_count(uhd_rgba)} * uhd_rgba, 201u << 20);
  // Larger frames never get more phases.
  uint32_t previous = 8;
  for (uint32_t bytes = 1u << 20; bytes < (1u << 30); bytes += 7u << 20) {
    const uint32_t phases = TestPattern::phase_count(bytes);
    EXPECT_LE(phases, previous) << bytes;
    previous = phases;
  }
}

TEST(TestPattern, SameStreamStartGivesSameFrames) {
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(trace(format, w, h));
      const proto::StreamStart stream = pattern_stream(format, w, h);
      TestPattern a(stream);
      TestPattern b(stream);
      const uint32_t phases = TestPattern::phase_count(stream.layout.frame_bytes);
      for (uint64_t n = 0; n < phases + 2; ++n) {
        SCOPED_TRACE(n);
        const Bytes fa = copy_of(a.frame(n));
        const Bytes fb = copy_of(b.frame(n));
        EXPECT_TRUE(fa == fb);
        EXPECT_FALSE(b.verify(n, fa).has_value());  // b, as a receiver, accepts a's frame
      }
    }
  }
}

TEST(TestPattern, FramesMoveFromPhaseToPhase) {
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    TestPattern pattern(pattern_stream(format, 64, 36));
    Bytes f0 = copy_of(pattern.frame(0));
    Bytes f1 = copy_of(pattern.frame(1));
    ASSERT_EQ(f0.size(), f1.size());
    // Past the stamp, the frames differ (the box has moved).
    EXPECT_FALSE(std::equal(f0.begin() + 64, f0.end(), f1.begin() + 64));
  }
}

// 75% colour bars, BT.709 limited range: 75% white has luma 16 + 0.75 * 219 = 180.
TEST(TestPattern, UyvyStartsWithSeventyFivePercentWhiteBar) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::uyvy, 64, 36);
  TestPattern pattern(stream);
  const auto frame = pattern.frame(0);
  const uint32_t stride = stream.layout.planes[0].stride;
  const size_t row = 1 * size_t{stride};  // row 0 carries the stamp; the box is lower down
  for (size_t pair = 0; pair < 64 / 8 / 2; ++pair) {  // the first bar is 8 pixels wide
    SCOPED_TRACE(pair);
    const std::byte* p = frame.data() + row + 4 * pair;  // U Y0 V Y1
    EXPECT_NEAR(static_cast<int>(p[1]), 180, 2);
    EXPECT_NEAR(static_cast<int>(p[3]), 180, 2);
    EXPECT_NEAR(static_cast<int>(p[0]), 128, 2);  // grey: no chroma
    EXPECT_NEAR(static_cast<int>(p[2]), 128, 2);
  }
  // The last bar is black (luma 16), the second yellow (luma 168, blue difference low).
  const std::byte* black = frame.data() + row + 4 * (63 / 2);
  EXPECT_NEAR(static_cast<int>(black[1]), 16, 2);
  const std::byte* yellow = frame.data() + row + 4 * 5;  // pixels 10, 11
  EXPECT_NEAR(static_cast<int>(yellow[1]), 168, 2);
  EXPECT_LT(static_cast<int>(yellow[0]), 64);
}

TEST(FrameChecksum, IsStableAndSensitive) {
  Bytes data(4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 31 + 7);
  const uint64_t sum = frame_checksum(data);
  EXPECT_EQ(frame_checksum(data), sum);
  data[4000] ^= std::byte{1};
  EXPECT_NE(frame_checksum(data), sum);
}

// ---------------------------------------------------------------------------------------
// FrameVerifier

proto::FrameWritten info_for(uint64_t sequence, std::span<const std::byte> data, bool checksum) {
  proto::FrameWritten info;
  info.sequence = sequence;
  info.bytes = static_cast<uint32_t>(data.size());
  if (checksum) {
    info.flags = proto::kFrameHasChecksum;
    info.checksum = frame_checksum(data);
  }
  return info;
}

TEST(FrameVerifier, AcceptsGoodPatternFrame) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::nv12, 64, 36);
  TestPattern sender(stream);
  const FrameVerifier verifier(stream);
  EXPECT_TRUE(verifier.checks_pattern());
  for (uint64_t n = 0; n < 10; ++n) {
    const auto frame = sender.frame(n);
    const auto problem = verifier.verify(info_for(n, frame, true), frame);
    EXPECT_FALSE(problem.has_value()) << *problem;
  }
}

TEST(FrameVerifier, NamesChecksumMismatch) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::nv12, 64, 36);
  TestPattern sender(stream);
  const FrameVerifier verifier(stream);
  const auto frame = sender.frame(12);
  proto::FrameWritten info = info_for(12, frame, true);
  info.checksum ^= 0x10;
  const auto problem = verifier.verify(info, frame);
  ASSERT_TRUE(problem.has_value());
  EXPECT_TRUE(contains(*problem, "frame 12"));
  EXPECT_TRUE(contains(*problem, "FrameWritten.checksum"));
  EXPECT_TRUE(contains(*problem, fmt::format("0x{:016x}", info.checksum)));
  EXPECT_TRUE(contains(*problem, fmt::format("0x{:016x}", frame_checksum(frame))));
}

TEST(FrameVerifier, NamesPatternMismatchWhenChecksumIsRight) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::i420, 64, 36);
  TestPattern sender(stream);
  const FrameVerifier verifier(stream);
  Bytes frame = copy_of(sender.frame(4));
  const size_t at = stream.layout.planes[2].offset + 10;
  frame[at] ^= std::byte{0x01};
  // The sender checksummed the damaged bytes (damage before the send): only the pattern sees it.
  const auto problem = verifier.verify(info_for(4, frame, true), frame);
  ASSERT_TRUE(problem.has_value());
  EXPECT_TRUE(contains(*problem, "frame 4 plane 2 byte 10"));
}

TEST(FrameVerifier, WithoutPatternFlagChecksOnlyTheChecksum) {
  proto::StreamStart stream = pattern_stream(PixelFormat::nv12, 64, 36);
  stream.flags = proto::kStreamChecksums;
  const FrameVerifier verifier(stream);
  EXPECT_FALSE(verifier.checks_pattern());

  Bytes data(stream.layout.frame_bytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 13 + 1);  // not the pattern
  EXPECT_FALSE(verifier.verify(info_for(9, data, true), data).has_value());
  EXPECT_FALSE(verifier.verify(info_for(9, data, false), data).has_value());

  proto::FrameWritten info = info_for(9, data, true);
  data[100] ^= std::byte{0x80};
  const auto problem = verifier.verify(info, data);
  ASSERT_TRUE(problem.has_value());
  EXPECT_TRUE(contains(*problem, "frame 9"));
  EXPECT_TRUE(contains(*problem, "checksum"));
}

TEST(FrameVerifier, WithoutChecksumFlagChecksOnlyThePattern) {
  const proto::StreamStart stream = pattern_stream(PixelFormat::bgra, 33, 17);
  TestPattern sender(stream);
  const FrameVerifier verifier(stream);
  const Bytes frame = copy_of(sender.frame(77));
  proto::FrameWritten info = info_for(77, frame, false);
  info.checksum = 0x1234;  // ignored without kFrameHasChecksum
  EXPECT_FALSE(verifier.verify(info, frame).has_value());
  info.sequence = 78;
  const auto problem = verifier.verify(info, frame);
  ASSERT_TRUE(problem.has_value());
  EXPECT_TRUE(contains(*problem, "frame 78 plane 0 byte 8"));
}

}  // namespace
}  // namespace rdmavideo
