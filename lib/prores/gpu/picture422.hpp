// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the ProRes encoder's input on a GPU, written once for the GPU and the CPU
// as the slices' is (slices/prores_slices.hpp): prores.cu calls it for each pixel pair of a
// row, the stand-in driver runs it on the CPU, and the tests compare the two. What a stream
// carries is made the encoder's 10-bit 4:2:2 (Y, Cb, Cr planes, samples in the low 10 bits
// of 16). Pitches are in bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmavideo/host_device.hpp"

namespace rdmavideo::prores::input {

/// A 10-bit sample of a row of 16-bit samples, from their low 10 bits.
RDMAVIDEO_HOST_DEVICE inline uint16_t sample10(const uint8_t* row, unsigned index) {
  const uint16_t* samples = reinterpret_cast<const uint16_t*>(row);
  return static_cast<uint16_t>(samples[index] & 0x3ff);
}

/// What to_yuv422p10 reads: packed 8-bit 4:2:2, 8-bit 4:2:0 (chroma interleaved or in two
/// planes), 10-bit 4:2:0 in the high bits of 16 (p010), 10-bit planar 4:2:2 in the low bits
/// of 16, and v210 (six pixels in four little-endian 32-bit words).
enum Input422 : int { kInUyvy, kInYuy2, kInNv12, kInI420, kInP010, kInYuv422p10, kInV210 };

/// Input planes and pitches (bytes), and the 10-bit 4:2:2 planes written (Y, Cb, Cr; chroma
/// (width + 1) / 2 wide; samples in the low 10 bits of 16).
struct Planes3 {
  const uint8_t* in[3];
  size_t in_pitch[3];
  uint8_t* out[3];
  size_t out_pitch[3];
};

// A 10-bit chroma sample of row `row` from 4:2:0 chroma rows a quarter and three quarters
// of a chroma row away (MPEG-2 siting: each chroma row lies halfway between its two luma
// rows): three parts the nearer, one part the farther, the edges repeated (not `near` and `far`,
// which Windows's headers define as macros). `nearer` and `farther` are
// at `bits` (8 or 10); the result at 10.
RDMAVIDEO_HOST_DEVICE inline unsigned chroma420_row(unsigned nearer, unsigned farther, int bits) {
  return bits == 8 ? 3 * nearer + farther : (3 * nearer + farther + 2) >> 2;
}

RDMAVIDEO_HOST_DEVICE inline unsigned v210_sample(const uint8_t* row, unsigned word,
                                                  unsigned index) {
  const uint8_t* w = row + 4 * word;
  const uint32_t value =
      w[0] | (uint32_t{w[1]} << 8) | (uint32_t{w[2]} << 16) | (uint32_t{w[3]} << 24);
  return (value >> (10 * index)) & 0x3ff;
}

/// Pixel pair `pair` (x = 2 * pair) of row `row` into the encoder's 10-bit 4:2:2: 8-bit
/// samples shifted up two bits (x 4, exact), 4:2:0 chroma made 4:2:2 by interpolating between
/// chroma rows, v210 unpacked, and 10-bit planar samples masked to their low 10 bits.
RDMAVIDEO_HOST_DEVICE inline void to_yuv422p10(int input, const Planes3& p, unsigned width,
                                               unsigned height, unsigned pair, unsigned row) {
  const unsigned x = pair * 2;
  const bool second = x + 1 < width;
  unsigned y0 = 0, y1 = 0, cb = 0, cr = 0;
  const uint8_t* r0 = p.in[0] + row * p.in_pitch[0];
  switch (input) {
    case kInUyvy:
    case kInYuy2: {
      const uint8_t* px = r0 + pair * 4;
      const int y = input == kInUyvy ? 1 : 0, u = input == kInUyvy ? 0 : 1;
      y0 = px[y] << 2, y1 = px[y + 2] << 2, cb = px[u] << 2, cr = px[u + 2] << 2;
      break;
    }
    case kInNv12:
    case kInI420:
    case kInP010: {
      const unsigned chroma_rows = (height + 1) / 2;
      const unsigned nearer = row / 2;
      const unsigned farther = row % 2 == 0 ? (nearer > 0 ? nearer - 1 : 0)
                                            : (nearer + 1 < chroma_rows ? nearer + 1 : nearer);
      if (input == kInP010) {
        auto at = [](const uint8_t* r, unsigned i) {
          return static_cast<unsigned>(reinterpret_cast<const uint16_t*>(r)[i] >> 6);
        };
        y0 = at(r0, x), y1 = second ? at(r0, x + 1) : y0;
        const uint8_t* n = p.in[1] + nearer * p.in_pitch[1];
        const uint8_t* f = p.in[1] + farther * p.in_pitch[1];
        cb = chroma420_row(at(n, x), at(f, x), 10);
        cr = chroma420_row(at(n, x + 1), at(f, x + 1), 10);
      } else {
        y0 = r0[x] << 2, y1 = second ? r0[x + 1] << 2 : y0;
        if (input == kInNv12) {
          const uint8_t* n = p.in[1] + nearer * p.in_pitch[1];
          const uint8_t* f = p.in[1] + farther * p.in_pitch[1];
          cb = chroma420_row(n[x], f[x], 8);
          cr = chroma420_row(n[x + 1], f[x + 1], 8);
        } else {
          cb = chroma420_row(p.in[1][nearer * p.in_pitch[1] + pair],
                             p.in[1][farther * p.in_pitch[1] + pair], 8);
          cr = chroma420_row(p.in[2][nearer * p.in_pitch[2] + pair],
                             p.in[2][farther * p.in_pitch[2] + pair], 8);
        }
      }
      break;
    }
    case kInYuv422p10:
      y0 = sample10(r0, x), y1 = second ? sample10(r0, x + 1) : y0;
      cb = sample10(p.in[1] + row * p.in_pitch[1], pair);
      cr = sample10(p.in[2] + row * p.in_pitch[2], pair);
      break;
    case kInV210: {
      // Words of a group of six: Cb0 Y0 Cr0 | Y1 Cb1 Y2 | Cr1 Y3 Cb2 | Y4 Cr2 Y5.
      const unsigned w = pair / 3 * 4;
      switch (pair % 3) {
        case 0:
          cb = v210_sample(r0, w, 0), y0 = v210_sample(r0, w, 1), cr = v210_sample(r0, w, 2);
          y1 = v210_sample(r0, w + 1, 0);
          break;
        case 1:
          cb = v210_sample(r0, w + 1, 1), y0 = v210_sample(r0, w + 1, 2);
          cr = v210_sample(r0, w + 2, 0), y1 = v210_sample(r0, w + 2, 1);
          break;
        default:
          cb = v210_sample(r0, w + 2, 2), y0 = v210_sample(r0, w + 3, 0);
          cr = v210_sample(r0, w + 3, 1), y1 = v210_sample(r0, w + 3, 2);
          break;
      }
      break;
    }
    default: break;
  }
  auto put = [](uint8_t* plane, size_t pitch, unsigned r, unsigned i, unsigned v) {
    reinterpret_cast<uint16_t*>(plane + r * pitch)[i] = static_cast<uint16_t>(v);
  };
  put(p.out[0], p.out_pitch[0], row, x, y0);
  if (second) put(p.out[0], p.out_pitch[0], row, x + 1, y1);
  put(p.out[1], p.out_pitch[1], row, pair, cb);
  put(p.out[2], p.out_pitch[2], row, pair, cr);
}

}  // namespace rdmavideo::prores::input
