// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's arithmetic and its CPU twin, without a decoder (prores_conformance_test
// decodes with FFmpeg's): the slice layout, the codes bit for bit, the DCT against the
// transform's definition, and the encoder's contract (its header fields, the size it aims
// at and never passes, the same bytes for the same picture, a size it refuses).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "cuda/prores_slices.hpp"
#include "rdmavideo/prores.hpp"

namespace rdmavideo::prores {
namespace {

std::string bits_of(uint32_t value, uint8_t book) {
  uint8_t out[16] = {};
  BitWriter w(out, sizeof(out));
  put_code(w, value, book);
  // Written bits, then the padding: a marker 1 bit shows where the code ended.
  w.put(1, 1);
  const size_t bytes = w.finish();
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    for (int b = 7; b >= 0; --b) text += ((out[i] >> b) & 1) ? '1' : '0';
  }
  return text.substr(0, text.find_last_of('1'));  // up to the marker
}

TEST(ProresCodes, RiceBelowTheSwitchAndExponentialGolombAbove) {
  // 0x04: Rice order 0, exponential Golomb order 1, switch 0: 0 is "1"; from 1 on, one zero
  // then value + 1 in exp+1 bits.
  EXPECT_EQ(bits_of(0, 0x04), "1");
  EXPECT_EQ(bits_of(1, 0x04), "010");
  EXPECT_EQ(bits_of(2, 0x04), "011");
  EXPECT_EQ(bits_of(3, 0x04), "00100");
  // 0x28: Rice order 1, switch 0: below 2, "1" and one bit; above, Golomb of order 2.
  EXPECT_EQ(bits_of(0, 0x28), "10");
  EXPECT_EQ(bits_of(1, 0x28), "11");
  EXPECT_EQ(bits_of(2, 0x28), "0100");  // 2 - 2 + 4 = 4 = "100" after one zero
  // 0x06: Rice order 0, switch 2: 0..2 in unary.
  EXPECT_EQ(bits_of(2, 0x06), "001");
}

TEST(ProresCodes, AWriterPastItsEndSaysSo) {
  uint8_t out[2] = {};
  BitWriter w(out, sizeof(out));
  w.put(0xffff, 16);
  EXPECT_FALSE(w.overflowed());
  w.put(1, 1);
  w.finish();
  EXPECT_TRUE(w.overflowed());
}

TEST(ProresDct, IsFourTimesTheOrthonormalTransformWithinOne) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> sample(-512, 511);
  for (int trial = 0; trial < 50; ++trial) {
    int32_t in[64], out[64];
    for (auto& v : in) v = trial == 0 ? 511 : trial == 1 ? -512 : sample(rng);
    forward_dct(in, out);
    for (int u = 0; u < 8; ++u) {
      for (int v = 0; v < 8; ++v) {
        double sum = 0;
        for (int y = 0; y < 8; ++y) {
          for (int x = 0; x < 8; ++x) {
            sum += in[y * 8 + x] * std::cos((2 * x + 1) * v * std::numbers::pi / 16) *
                   std::cos((2 * y + 1) * u * std::numbers::pi / 16);
          }
        }
        const double cu = u ? 0.5 : std::sqrt(0.125), cv = v ? 0.5 : std::sqrt(0.125);
        EXPECT_NEAR(out[u * 8 + v], 4 * cu * cv * sum, 1.001) << "trial " << trial;
      }
    }
  }
}

TEST(ProresSlices, RowsAreCutIntoEightFourTwoAndOneMacroblocks) {
  // 1000 pixels: 63 macroblocks, 7 of 8, then 4, 2 and 1.
  const auto slices = slice_layout(1000, 20);
  ASSERT_EQ(slices.size(), 2u * 10);
  EXPECT_EQ(slices[6].mb_count, 8u);
  EXPECT_EQ(slices[7].mb_count, 4u);
  EXPECT_EQ(slices[7].mb_x, 56u);
  EXPECT_EQ(slices[8].mb_count, 2u);
  EXPECT_EQ(slices[9].mb_count, 1u);
  EXPECT_EQ(slices[9].mb_x, 62u);
  EXPECT_EQ(slices[10].mb_y, 1u);
  EXPECT_EQ(slice_layout(1920, 1080).size(), 15u * 68);
}

struct Picture {
  uint32_t width, height;
  std::vector<uint16_t> y, cb, cr;
  Planes422 planes() const { return {y.data(), cb.data(), cr.data(), width, (width + 1) / 2}; }
};

Picture noise(uint32_t width, uint32_t height, int seed) {
  Picture p{width, height, {}, {}, {}};
  std::mt19937 rng(seed);
  const uint32_t cw = (width + 1) / 2;
  p.y.resize(size_t{width} * height);
  p.cb.resize(size_t{cw} * height);
  p.cr.resize(size_t{cw} * height);
  for (uint32_t r = 0; r < height; ++r) {
    for (uint32_t c = 0; c < width; ++c) p.y[r * width + c] = 64 + (c * 700) / width + rng() % 96;
    for (uint32_t c = 0; c < cw; ++c) {
      p.cb[r * cw + c] = 300 + rng() % 64;
      p.cr[r * cw + c] = 700 - (r * 300) / height;
    }
  }
  return p;
}

TEST(ProresEncoder, TheHeaderSaysTheSizeProfileAndColour) {
  const Picture p = noise(250, 36, 1);
  auto encoder = Encoder::create({250, 36, Profile::hq, 9, 16, 9});
  ASSERT_TRUE(encoder) << encoder.error().message();
  std::vector<uint8_t> out(encoder->max_frame_bytes());
  auto size = encoder->encode(p.planes(), out);
  ASSERT_TRUE(size) << size.error().message();
  const auto be16 = [&](size_t at) { return out[at] << 8 | out[at + 1]; };
  EXPECT_EQ(size_t(be16(0) << 16 | be16(2)), *size);
  EXPECT_EQ(std::string(out.begin() + 4, out.begin() + 8), "icpf");
  EXPECT_EQ(be16(8), 148);     // the frame header's size, matrices included
  EXPECT_EQ(be16(16), 250);    // width
  EXPECT_EQ(be16(18), 36);     // height
  EXPECT_EQ(out[20] >> 6, 2);  // 4:2:2
  EXPECT_EQ(out[22], 9);       // Rec. 2020 primaries
  EXPECT_EQ(out[23], 16);      // PQ
  EXPECT_EQ(out[24], 9);       // Rec. 2020 matrix
  // The picture: 16 macroblocks a row (8, 4, 2, 1, 1 does not happen: 16 = 8 + 8), 3 rows.
  EXPECT_EQ(be16(156 + 5), 3 * 2);
  EXPECT_EQ(fourcc(Profile::hq), "apch");
  EXPECT_EQ(fourcc(Profile::standard), "apcn");
}

TEST(ProresEncoder, AimsAtTheProfilesSizeAndNeverPassesItsLimit) {
  for (auto profile : {Profile::proxy, Profile::lt, Profile::standard, Profile::hq}) {
    const Picture p = noise(640, 360, 2);
    auto encoder = Encoder::create({640, 360, profile});
    ASSERT_TRUE(encoder);
    std::vector<uint8_t> out(encoder->max_frame_bytes());
    auto size = encoder->encode(p.planes(), out);
    ASSERT_TRUE(size) << size.error().message();
    EXPECT_LE(*size, encoder->max_frame_bytes());
    // Noise needs every bit it is given: within 10% under the target, and over it by no more
    // than the headers and the table.
    EXPECT_GE(*size, encoder->target_frame_bytes() * 9 / 10) << to_string(profile);
    const size_t headers = 8 + 148 + 8 + 2 * slice_layout(640, 360).size();
    EXPECT_LE(*size, encoder->target_frame_bytes() + headers) << to_string(profile);
  }
}

TEST(ProresEncoder, TheSamePictureMakesTheSameBytes) {
  const Picture p = noise(333, 77, 3);
  auto encoder = Encoder::create({333, 77, Profile::standard});
  ASSERT_TRUE(encoder);
  std::vector<uint8_t> a(encoder->max_frame_bytes()), b(encoder->max_frame_bytes());
  auto sa = encoder->encode(p.planes(), a);
  auto sb = encoder->encode(p.planes(), b);
  ASSERT_TRUE(sa && sb);
  ASSERT_EQ(*sa, *sb);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<long>(*sa), b.begin()));
}

TEST(ProresEncoder, RefusesWhatItCannotCarry) {
  EXPECT_FALSE(Encoder::create({0, 10, Profile::hq}));
  EXPECT_FALSE(Encoder::create({70000, 10, Profile::hq}));
  auto encoder = Encoder::create({64, 64, Profile::hq});
  ASSERT_TRUE(encoder);
  const Picture p = noise(64, 64, 4);
  std::vector<uint8_t> small(100);
  auto size = encoder->encode(p.planes(), small);
  ASSERT_FALSE(size);
  EXPECT_NE(size.error().message().find("100 bytes"), std::string::npos);
}

}  // namespace
}  // namespace rdmavideo::prores
