// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the conversions into what NVENC takes from GPU memory, written once for
// the GPU and the CPU: the kernels (nvenc_convert.cu) call it for each block of pixels, the
// stand-in driver runs it on the CPU, and the tests compare the two:
//   uyvy422, yuyv422 -> nv12   (4:2:2 to 4:2:0: the two rows' chroma averaged, rounded)
//   yuv422p10le      -> p010le (the same, at 10 bits; samples masked to 10 bits first)
//   rgb24            -> rgb0   (a fourth byte, 255)
// Pitches are in bytes. A block is a pair of pixels in a pair of rows (x = 2*pair, rows
// 2*row2 and 2*row2+1; an odd last row stands alone), or one pixel for rgb24.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmavideo/host_device.hpp"

namespace rdmavideo::av::nvenc {

/// Where the samples of a packed 4:2:2 pixel pair are (uyvy: U Y0 V Y1; yuy2: Y0 U Y1 V).
enum PackedOrder : int { kUyvy = 0, kYuy2 = 1 };

RDMAVIDEO_HOST_DEVICE inline void packed422_to_nv12(const uint8_t* src, size_t src_pitch,
                                                    uint8_t* y, size_t y_pitch, uint8_t* uv,
                                                    size_t uv_pitch, unsigned width,
                                                    unsigned height, unsigned pair, unsigned row2,
                                                    int order) {
  const unsigned x = pair * 2;
  const unsigned r0 = row2 * 2;
  const unsigned r1 = r0 + 1 < height ? r0 + 1 : r0;
  const uint8_t* a = src + r0 * src_pitch + pair * 4;
  const uint8_t* b = src + r1 * src_pitch + pair * 4;
  const int y0 = order == kUyvy ? 1 : 0;
  const int u = order == kUyvy ? 0 : 1;
  y[r0 * y_pitch + x] = a[y0];
  if (x + 1 < width) y[r0 * y_pitch + x + 1] = a[y0 + 2];
  if (r1 != r0) {
    y[r1 * y_pitch + x] = b[y0];
    if (x + 1 < width) y[r1 * y_pitch + x + 1] = b[y0 + 2];
  }
  uv[row2 * uv_pitch + x] = static_cast<uint8_t>((a[u] + b[u] + 1) / 2);
  uv[row2 * uv_pitch + x + 1] = static_cast<uint8_t>((a[u + 2] + b[u + 2] + 1) / 2);
}

RDMAVIDEO_HOST_DEVICE inline uint16_t sample10(const uint8_t* row, unsigned index) {
  const uint16_t* samples = reinterpret_cast<const uint16_t*>(row);
  return static_cast<uint16_t>(samples[index] & 0x3ff);
}

RDMAVIDEO_HOST_DEVICE inline void yuv422p10_to_p010(const uint8_t* y_in, size_t y_in_pitch,
                                                    const uint8_t* cb, size_t cb_pitch,
                                                    const uint8_t* cr, size_t cr_pitch, uint8_t* y,
                                                    size_t y_pitch, uint8_t* uv, size_t uv_pitch,
                                                    unsigned width, unsigned height, unsigned pair,
                                                    unsigned row2) {
  const unsigned x = pair * 2;
  const unsigned r0 = row2 * 2;
  const unsigned r1 = r0 + 1 < height ? r0 + 1 : r0;
  auto put = [](uint8_t* row, unsigned index, unsigned value) {
    reinterpret_cast<uint16_t*>(row)[index] = static_cast<uint16_t>(value << 6);
  };
  for (unsigned r = r0; r <= r1; ++r) {
    put(y + r * y_pitch, x, sample10(y_in + r * y_in_pitch, x));
    if (x + 1 < width) put(y + r * y_pitch, x + 1, sample10(y_in + r * y_in_pitch, x + 1));
  }
  put(uv + row2 * uv_pitch, x,
      (sample10(cb + r0 * cb_pitch, pair) + sample10(cb + r1 * cb_pitch, pair) + 1u) / 2);
  put(uv + row2 * uv_pitch, x + 1,
      (sample10(cr + r0 * cr_pitch, pair) + sample10(cr + r1 * cr_pitch, pair) + 1u) / 2);
}

RDMAVIDEO_HOST_DEVICE inline void rgb24_to_rgb0(const uint8_t* src, size_t src_pitch, uint8_t* dst,
                                                size_t dst_pitch, unsigned x, unsigned row) {
  const uint8_t* s = src + row * src_pitch + x * 3;
  uint8_t* d = dst + row * dst_pitch + x * 4;
  d[0] = s[0];
  d[1] = s[1];
  d[2] = s[2];
  d[3] = 255;
}

}  // namespace rdmavideo::av::nvenc
