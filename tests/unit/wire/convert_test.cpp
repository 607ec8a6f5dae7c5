// SPDX-License-Identifier: Apache-2.0
// The shared v210 unpack: frames packed here by hand from known samples, at widths that fill
// their last group (48, 66), leave part of it as padding (64, 70) or end mid-pair (5, 71), with
// rows padded past the least v210 stride, must unpack to exactly those samples and write
// nothing past the planes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rdmavideo/convert.hpp"
#include "rdmavideo/format.hpp"

namespace rdmavideo {
namespace {

// A distinct 10-bit value for every sample of a frame, using all ten bits.
uint16_t y_sample(uint32_t x, uint32_t row) {
  return static_cast<uint16_t>((x * 7 + row * 131 + 1) % 1024);
}
uint16_t cb_sample(uint32_t i, uint32_t row) {
  return static_cast<uint16_t>((i * 13 + row * 57 + 512) % 1024);
}
uint16_t cr_sample(uint32_t i, uint32_t row) {
  return static_cast<uint16_t>(1023 - (i * 11 + row * 29) % 1024);
}

constexpr uint16_t kPadding = 0x2aa;  // what the packer puts in a group's samples past the row

void store_le32(std::byte* p, uint32_t word) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<std::byte>(word >> (8 * b));
}

// Packs a frame the way docs and capture cards describe v210, independently of convert.cpp:
// samples in wire order Cb0 Y0 Cr0 Y1 Cb1 Y2 Cr1 Y3 Cb2 Y4 Cr2 Y5, three to a word, and the
// two spare top bits of every word set so an unpacker that forgets to mask shows it.
std::vector<std::byte> pack_v210(uint32_t width, uint32_t height, uint32_t stride) {
  std::vector<std::byte> frame(size_t{stride} * height, std::byte{0x5a});
  const uint32_t chroma_width = (width + 1) / 2;
  for (uint32_t row = 0; row < height; ++row) {
    std::byte* out = frame.data() + size_t{row} * stride;
    for (uint32_t x = 0; x < width; x += 6, out += 16) {
      uint16_t wire[12];
      for (uint32_t k = 0; k < 12; ++k) {
        if (k % 2 == 1) {  // odd positions are Y
          const uint32_t px = x + k / 2;
          wire[k] = px < width ? y_sample(px, row) : kPadding;
        } else {  // even positions alternate Cb, Cr
          const uint32_t ci = x / 2 + k / 4;
          const bool cb = k % 4 == 0;
          wire[k] = ci < chroma_width ? (cb ? cb_sample(ci, row) : cr_sample(ci, row)) : kPadding;
        }
      }
      for (int w = 0; w < 4; ++w) {
        store_le32(out + 4 * w, 0xc0000000u | uint32_t{wire[3 * w]} |
                                    uint32_t{wire[3 * w + 1]} << 10 |
                                    uint32_t{wire[3 * w + 2]} << 20);
      }
    }
  }
  return frame;
}

struct Size {
  uint32_t width;
  uint32_t height;
};

class UnpackV210 : public ::testing::TestWithParam<Size> {};

TEST_P(UnpackV210, GivesTheSamplesPackedAtAPaddedStride) {
  const auto [width, height] = GetParam();
  // 64 bytes past the least stride, and an odd offset into the buffer: rows and words are
  // read wherever a peer put them.
  const uint32_t stride = min_row_bytes(PixelFormat::v210, width, 0) + 64;
  const std::vector<std::byte> packed = pack_v210(width, height, stride);
  std::vector<std::byte> shifted(packed.size() + 1);
  std::copy(packed.begin(), packed.end(), shifted.begin() + 1);

  const uint32_t chroma_width = (width + 1) / 2;
  constexpr uint16_t kUntouched = 0xffff;
  // One spare sample past each plane: nothing may be written there.
  std::vector<uint16_t> y(size_t{width} * height + 1, kUntouched);
  std::vector<uint16_t> cb(size_t{chroma_width} * height + 1, kUntouched);
  std::vector<uint16_t> cr(size_t{chroma_width} * height + 1, kUntouched);
  unpack_v210(shifted.data() + 1, stride, width, height, y.data(), cb.data(), cr.data());

  for (uint32_t row = 0; row < height; ++row) {
    for (uint32_t x = 0; x < width; ++x) {
      ASSERT_EQ(y[size_t{row} * width + x], y_sample(x, row)) << "Y row " << row << " x " << x;
    }
    for (uint32_t i = 0; i < chroma_width; ++i) {
      ASSERT_EQ(cb[size_t{row} * chroma_width + i], cb_sample(i, row))
          << "Cb row " << row << " i " << i;
      ASSERT_EQ(cr[size_t{row} * chroma_width + i], cr_sample(i, row))
          << "Cr row " << row << " i " << i;
    }
  }
  EXPECT_EQ(y.back(), kUntouched);
  EXPECT_EQ(cb.back(), kUntouched);
  EXPECT_EQ(cr.back(), kUntouched);
}

INSTANTIATE_TEST_SUITE_P(Widths, UnpackV210,
                         ::testing::Values(Size{48, 3}, Size{64, 4}, Size{66, 2}, Size{70, 5},
                                           Size{5, 3}, Size{71, 2}, Size{1, 1}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.width) + "x" +
                                  std::to_string(param_info.param.height);
                         });

// A row unpacked to its width rounded up to even takes the last group's padding sample as
// its last Y (the display's whole YUY2 pairs rely on it) and writes nothing more.
TEST(UnpackV210Row, AnEvenWidthPastAnOddRowReadsThePaddingY) {
  const uint32_t width = 7;
  const std::vector<std::byte> packed = pack_v210(width, 1, 32);
  uint16_t y[9], cb[5], cr[5];
  std::fill(std::begin(y), std::end(y), uint16_t{0xffff});
  std::fill(std::begin(cb), std::end(cb), uint16_t{0xffff});
  std::fill(std::begin(cr), std::end(cr), uint16_t{0xffff});
  unpack_v210_row(packed.data(), width + 1, y, cb, cr);
  for (uint32_t x = 0; x < width; ++x) EXPECT_EQ(y[x], y_sample(x, 0)) << "x " << x;
  EXPECT_EQ(y[7], kPadding);
  EXPECT_EQ(y[8], 0xffff);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cb[i], cb_sample(i, 0)) << "i " << i;
    EXPECT_EQ(cr[i], cr_sample(i, 0)) << "i " << i;
  }
  EXPECT_EQ(cb[4], 0xffff);
  EXPECT_EQ(cr[4], 0xffff);
}

// The layout spelled out for one group: a reader of convert.hpp can check it by eye.
TEST(UnpackV210Row, OneGroupInWireOrder) {
  std::byte group[16];
  // Cb0=1 Y0=2 Cr0=3 | Y1=4 Cb1=5 Y2=6 | Cr1=7 Y3=8 Cb2=9 | Y4=10 Cr2=11 Y5=1023
  store_le32(group + 0, 1u | 2u << 10 | 3u << 20);
  store_le32(group + 4, 4u | 5u << 10 | 6u << 20);
  store_le32(group + 8, 7u | 8u << 10 | 9u << 20);
  store_le32(group + 12, 10u | 11u << 10 | 1023u << 20);
  uint16_t y[6], cb[3], cr[3];
  unpack_v210_row(group, 6, y, cb, cr);
  EXPECT_EQ(std::vector<uint16_t>(y, y + 6), (std::vector<uint16_t>{2, 4, 6, 8, 10, 1023}));
  EXPECT_EQ(std::vector<uint16_t>(cb, cb + 3), (std::vector<uint16_t>{1, 5, 9}));
  EXPECT_EQ(std::vector<uint16_t>(cr, cr + 3), (std::vector<uint16_t>{3, 7, 11}));
}

}  // namespace
}  // namespace rdmavideo
