// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the composite kernels (the receiver's canvas in GPU memory), written once
// for the GPU and the CPU: canvas_kernels.cu calls it for each block of
// canvas pixels, the stand-in driver runs it on the CPU, and the tests compare the two.
//
// The canvas is NV12 (8-bit 4:2:0). A block is a pair of canvas pixels in a pair of rows of a
// rectangle (an Area; its corners and sizes are even, so a block has one chroma sample).
//   place: a picture in any layout below scaled into the area, in fixed point (the same
//          bytes on every GPU and on the CPU). Up to 2:1 down, and up, bilinear: each canvas
//          pixel's centre is mapped to the picture and the four samples around it weighted
//          by 1/256ths, a block's chroma sampled at its centre. Beyond 2:1 down, an area
//          average: every sample a canvas pixel (a block, for chroma) covers, weighted by how
//          much of it is covered. 4:2:0 and 4:2:2 chroma is taken from the chroma sample
//          covering a pixel; 10- to 16-bit samples are cut to 8 bits; RGB is made YUV with
//          the canvas's matrix (BT.709 or BT.601, limited range). YUV is taken as it is
//          (its matrix and range are not converted).
//   fill:  the area one colour.
//   gray:  a picture of gray levels of the area's size (the labels' bands, drawn on the
//          CPU) as limited-range luma, its chroma neutral.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmavideo/host_device.hpp"

namespace rdmavideo::media::canvas {

/// The layouts place() reads (GpuCanvasKernels::Layout has the same values).
namespace layout {
enum : int {
  kNv12 = 0,        // Y; CbCr interleaved, 4:2:0
  kI420 = 1,        // Y, Cb, Cr planes, 4:2:0
  kP010 = 2,        // as nv12 with 16-bit samples, the value in the high 10 bits
  kUyvy = 3,        // packed 4:2:2, U Y V Y
  kYuy2 = 4,        // packed 4:2:2, Y U Y V
  kRgba = 5,        // R G B A
  kBgra = 6,        // B G R A
  kRgb24 = 7,       // R G B
  kYuv422p16 = 8,   // Y, Cb, Cr planes, 4:2:2, 16-bit samples, the value in the low `bits`
  kYuv444p = 9,     // Y, Cb, Cr planes, 4:4:4
  kYuv444p16 = 10,  // Y, Cb, Cr planes, 4:4:4, 16-bit samples, the value in the low `bits`
  kLayouts = 11,
};
}  // namespace layout

/// A picture the kernels read: its planes (device addresses), their pitches in bytes.
struct Source {
  const uint8_t* plane[3];
  uint64_t pitch[3];
  unsigned width, height;
  int layout;
  int bits;  // layout::kYuv422p16, layout::kYuv444p16: 10, 12 or 16
};

/// An NV12 canvas.
struct Target {
  uint8_t* y;
  uint8_t* uv;
  uint64_t y_pitch, uv_pitch;
  unsigned width, height;
  int bt709;  // the matrix RGB is made YUV with: 1 BT.709, 0 BT.601
};

/// A rectangle of the target; x, y, width and height even.
struct Area {
  int x, y, width, height;
};

struct Yuv {
  int y, cb, cr;
};

RDMAVIDEO_HOST_DEVICE inline int plane_count(int kind) {
  switch (kind) {
    case layout::kNv12:
    case layout::kP010: return 2;
    case layout::kUyvy:
    case layout::kYuy2:
    case layout::kRgba:
    case layout::kBgra:
    case layout::kRgb24: return 1;
    default: return 3;
  }
}

/// Rows of plane `p` of a picture in layout `kind` `height` rows high.
RDMAVIDEO_HOST_DEVICE inline unsigned plane_rows(int kind, int p, unsigned height) {
  const bool half =
      (kind == layout::kNv12 || kind == layout::kI420 || kind == layout::kP010) && p > 0;
  return half ? (height + 1) / 2 : height;
}

/// Bytes of a row of plane `p` of a picture `width` pixels wide that the kernels read.
RDMAVIDEO_HOST_DEVICE inline uint64_t plane_row_bytes(int kind, int p, unsigned width) {
  const uint64_t w = width, half = (width + 1) / 2;
  switch (kind) {
    case layout::kNv12: return p == 0 ? w : half * 2;
    case layout::kI420: return p == 0 ? w : half;
    case layout::kP010: return p == 0 ? w * 2 : half * 4;
    case layout::kUyvy:
    case layout::kYuy2: return half * 4;
    case layout::kRgba:
    case layout::kBgra: return w * 4;
    case layout::kRgb24: return w * 3;
    case layout::kYuv422p16: return p == 0 ? w * 2 : half * 2;
    case layout::kYuv444p: return w;
    default: return w * 2;  // layout::kYuv444p16
  }
}

/// Full-range RGB as limited-range YUV, rounded.
RDMAVIDEO_HOST_DEVICE inline Yuv rgb_to_yuv(int r, int g, int b, int bt709) {
  // The matrices' coefficients scaled by 219/255 (luma) and 224/255 (chroma), in 1/65536ths.
  if (bt709) {
    return {16 + ((11966 * r + 40254 * g + 4064 * b + 32768) >> 16),
            128 + ((-6596 * r - 22189 * g + 28785 * b + 32768) >> 16),
            128 + ((28785 * r - 26145 * g - 2640 * b + 32768) >> 16)};
  }
  return {16 + ((16829 * r + 33039 * g + 6416 * b + 32768) >> 16),
          128 + ((-9714 * r - 19070 * g + 28784 * b + 32768) >> 16),
          128 + ((28784 * r - 24103 * g - 4681 * b + 32768) >> 16)};
}

RDMAVIDEO_HOST_DEVICE inline int sample16(const uint8_t* row, unsigned index) {
  return row[2 * index] | (row[2 * index + 1] << 8);
}

// A 16-bit sample whose value is in its low `bits`, as 8 bits.
RDMAVIDEO_HOST_DEVICE inline int low_bits_to_8(int sample, int bits) {
  return (sample & ((1 << bits) - 1)) >> (bits - 8);
}

/// The Y, Cb and Cr of pixel (x, y) of `s`.
RDMAVIDEO_HOST_DEVICE inline Yuv fetch(const Source& s, unsigned x, unsigned y, int bt709) {
  const uint8_t* r0 = s.plane[0] + y * s.pitch[0];
  const unsigned cx = x / 2, cy = y / 2;
  switch (s.layout) {
    case layout::kNv12: {
      const uint8_t* c = s.plane[1] + cy * s.pitch[1] + cx * 2;
      return {r0[x], c[0], c[1]};
    }
    case layout::kI420:
      return {r0[x], s.plane[1][cy * s.pitch[1] + cx], s.plane[2][cy * s.pitch[2] + cx]};
    case layout::kP010: {
      const uint8_t* c = s.plane[1] + cy * s.pitch[1];
      return {sample16(r0, x) >> 8, sample16(c, cx * 2) >> 8, sample16(c, cx * 2 + 1) >> 8};
    }
    case layout::kUyvy: {
      const uint8_t* p = r0 + cx * 4;
      return {p[1 + (x & 1) * 2], p[0], p[2]};
    }
    case layout::kYuy2: {
      const uint8_t* p = r0 + cx * 4;
      return {p[(x & 1) * 2], p[1], p[3]};
    }
    case layout::kRgba: return rgb_to_yuv(r0[x * 4], r0[x * 4 + 1], r0[x * 4 + 2], bt709);
    case layout::kBgra: return rgb_to_yuv(r0[x * 4 + 2], r0[x * 4 + 1], r0[x * 4], bt709);
    case layout::kRgb24: return rgb_to_yuv(r0[x * 3], r0[x * 3 + 1], r0[x * 3 + 2], bt709);
    case layout::kYuv422p16:
      return {low_bits_to_8(sample16(r0, x), s.bits),
              low_bits_to_8(sample16(s.plane[1] + y * s.pitch[1], cx), s.bits),
              low_bits_to_8(sample16(s.plane[2] + y * s.pitch[2], cx), s.bits)};
    case layout::kYuv444p:
      return {r0[x], s.plane[1][y * s.pitch[1] + x], s.plane[2][y * s.pitch[2] + x]};
    default:  // layout::kYuv444p16
      return {low_bits_to_8(sample16(r0, x), s.bits),
              low_bits_to_8(sample16(s.plane[1] + y * s.pitch[1], x), s.bits),
              low_bits_to_8(sample16(s.plane[2] + y * s.pitch[2], x), s.bits)};
  }
}

/// Where a point of the area falls in the picture along one axis. The point is `at2` half
/// pixels from the area's edge (2i+1: pixel i's centre; 2i: the edge before it); the picture
/// has `size` pixels across what the area has `extent`. Gives the picture's pixel before the
/// point, the one after, and the after one's weight in 1/256ths.
struct Tap {
  unsigned before, after;
  int weight;
};
RDMAVIDEO_HOST_DEVICE inline Tap tap(unsigned at2, unsigned size, int extent) {
  // (at2 / 2) * size / extent pixels from the picture's edge, less half a pixel (centres).
  long long s = static_cast<long long>(static_cast<unsigned long long>(at2) * size * 128 /
                                       static_cast<unsigned long long>(extent)) -
                128;
  const long long last = static_cast<long long>(size - 1) * 256;
  if (s < 0) s = 0;
  if (s > last) s = last;
  const unsigned before = static_cast<unsigned>(s >> 8);
  return {before, before + 1 < size ? before + 1 : before, static_cast<int>(s & 255)};
}

/// The picture's pixels that a span of the area takes its value from along one axis, and
/// their weights: `first` weighs `w_first`, `last` `w_last`, each pixel between 256; the
/// weights add up to `total`. The span runs from `lo2` to `hi2` half pixels from the area's
/// edge (a canvas pixel, or a block's two for its chroma).
///   Up to 2:1 down, and up: the two pixels around the span's centre, bilinear (tap()).
///   Beyond 2:1 down: every pixel the span covers, weighted by how much of it is covered in
///   1/256ths of a pixel (an area average): bilinear there would skip pixels, and fine
///   detail (a 4K stream in a quarter-HD tile) would alias.
struct Span {
  unsigned first, last;
  int w_first, w_last;
  long long total;
};
RDMAVIDEO_HOST_DEVICE inline Span span(unsigned lo2, unsigned hi2, unsigned size, int extent) {
  if (size <= 2ull * static_cast<unsigned>(extent)) {
    // tap() gives before == after only at the picture's last pixel, weight 0: w_first 256.
    const Tap t = tap((lo2 + hi2) / 2, size, extent);
    return {t.before, t.after, 256 - t.weight, t.weight, 256};
  }
  // In 1/256ths of a picture pixel; hi <= size * 256, as hi2 <= 2 * extent.
  const unsigned long long lo =
      static_cast<unsigned long long>(lo2) * size * 128 / static_cast<unsigned>(extent);
  const unsigned long long hi =
      static_cast<unsigned long long>(hi2) * size * 128 / static_cast<unsigned>(extent);
  const auto first = static_cast<unsigned>(lo >> 8), last = static_cast<unsigned>((hi - 1) >> 8);
  // A span is a canvas pixel or more, so more than two picture pixels here: first < last.
  return {first, last, static_cast<int>((first + 1) * 256ull - lo),
          static_cast<int>(hi - last * 256ull), static_cast<long long>(hi - lo)};
}

RDMAVIDEO_HOST_DEVICE inline int weight(const Span& s, unsigned i) {
  return i == s.first ? s.w_first : i == s.last ? s.w_last : 256;
}

/// The picture's Y, Cb and Cr over the spans across and down, each rounded to a whole sample.
RDMAVIDEO_HOST_DEVICE inline Yuv average(const Source& s, const Span& across, const Span& down,
                                         int bt709) {
  long long y = 0, cb = 0, cr = 0;
  for (unsigned j = down.first; j <= down.last; ++j) {
    long long ry = 0, rcb = 0, rcr = 0;
    for (unsigned i = across.first; i <= across.last; ++i) {
      const Yuv v = fetch(s, i, j, bt709);
      const int w = weight(across, i);
      ry += static_cast<long long>(w) * v.y;
      rcb += static_cast<long long>(w) * v.cb;
      rcr += static_cast<long long>(w) * v.cr;
    }
    const int w = weight(down, j);
    y += ry * w;
    cb += rcb * w;
    cr += rcr * w;
  }
  const long long total = across.total * down.total, half = total / 2;
  return {static_cast<int>((y + half) / total), static_cast<int>((cb + half) / total),
          static_cast<int>((cr + half) / total)};
}

/// The block (pair, row2) of `area`: `s` scaled into the area.
RDMAVIDEO_HOST_DEVICE inline void place_nv12(const Source& s, const Target& t, const Area& area,
                                             unsigned pair, unsigned row2) {
  const int bt = t.bt709;
  for (unsigned dy = 0; dy < 2; ++dy) {
    const unsigned py = 2 * row2 + dy;
    const Span down = span(2 * py, 2 * py + 2, s.height, area.height);
    uint8_t* row = t.y + static_cast<uint64_t>(area.y + py) * t.y_pitch + area.x;
    for (unsigned dx = 0; dx < 2; ++dx) {
      const unsigned px = 2 * pair + dx;
      row[px] = static_cast<uint8_t>(
          average(s, span(2 * px, 2 * px + 2, s.width, area.width), down, bt).y);
    }
  }
  // The block's chroma: over its two pixels across and down (bilinear: at its centre).
  const Yuv c = average(s, span(4 * pair, 4 * pair + 4, s.width, area.width),
                        span(4 * row2, 4 * row2 + 4, s.height, area.height), bt);
  uint8_t* uv = t.uv + static_cast<uint64_t>(area.y / 2 + row2) * t.uv_pitch + area.x + 2 * pair;
  uv[0] = static_cast<uint8_t>(c.cb);
  uv[1] = static_cast<uint8_t>(c.cr);
}

/// The block (pair, row2) of `area` in one colour.
RDMAVIDEO_HOST_DEVICE inline void fill_nv12(const Target& t, const Area& area, Yuv colour,
                                            unsigned pair, unsigned row2) {
  for (unsigned dy = 0; dy < 2; ++dy) {
    uint8_t* row =
        t.y + static_cast<uint64_t>(area.y + 2 * row2 + dy) * t.y_pitch + area.x + 2 * pair;
    row[0] = row[1] = static_cast<uint8_t>(colour.y);
  }
  uint8_t* uv = t.uv + static_cast<uint64_t>(area.y / 2 + row2) * t.uv_pitch + area.x + 2 * pair;
  uv[0] = static_cast<uint8_t>(colour.cb);
  uv[1] = static_cast<uint8_t>(colour.cr);
}

/// A gray level (0 black, 255 white) as limited-range luma: rgb_to_yuv(v, v, v)'s.
RDMAVIDEO_HOST_DEVICE inline int gray_to_luma(int v) { return 16 + ((v * 56284 + 32768) >> 16); }

/// The block (pair, row2) of `area` from the gray levels `luma` (the area's size, rows
/// `pitch` bytes apart), chroma neutral.
RDMAVIDEO_HOST_DEVICE inline void gray_nv12(const uint8_t* luma, uint64_t pitch, const Target& t,
                                            const Area& area, unsigned pair, unsigned row2) {
  for (unsigned dy = 0; dy < 2; ++dy) {
    const uint8_t* from = luma + (2 * row2 + dy) * pitch + 2 * pair;
    uint8_t* row =
        t.y + static_cast<uint64_t>(area.y + 2 * row2 + dy) * t.y_pitch + area.x + 2 * pair;
    row[0] = static_cast<uint8_t>(gray_to_luma(from[0]));
    row[1] = static_cast<uint8_t>(gray_to_luma(from[1]));
  }
  uint8_t* uv = t.uv + static_cast<uint64_t>(area.y / 2 + row2) * t.uv_pitch + area.x + 2 * pair;
  uv[0] = uv[1] = 128;
}

}  // namespace rdmavideo::media::canvas
