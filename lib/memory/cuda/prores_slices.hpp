// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the ProRes encoder (SMPTE RDD 36), written once for the GPU and the CPU,
// as the conversions are (convert_pixels.hpp): the CUDA kernels and the CPU encoder
// (prores/prores_encoder.cpp) both call it, so they make the same bytes. Integer arithmetic
// only: a GPU's floating point (fused multiply-adds) would not round as a CPU does.
//
// A picture is cut into slices of 1, 2, 4 or 8 macroblocks (16x16) along a row. Each slice's
// planes (Y; Cb and Cr, 8 samples wide per macroblock in 4:2:2) are coded apart: an 8x8 DCT of
// every block, each coefficient divided by the quantisation matrix's entry times the slice's
// quantiser, then the DC coefficients (the first as a signed code, the rest as differences
// whose code book adapts to the last difference) and the AC coefficients, visited in the scan
// order across all of the slice's blocks at once (coefficient 1 of every block, then 2, ...)
// as runs of zeros and levels, with code books that adapt to the last run and level. Each
// code is Rice below a threshold and exponential Golomb above it, as its code book byte says.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define RDMAVIDEO_PRORES_HD __host__ __device__
#else
#define RDMAVIDEO_PRORES_HD
#endif

namespace rdmavideo::prores {

inline constexpr int kMaxSliceMacroblocks = 8;
inline constexpr int kBlockSamples = 64;
// The largest quantiser this encoder uses (the format allows up to 224, meaning more).
inline constexpr int kMaxQuantiser = 128;

// The order in which a progressive frame's coefficients are visited (RDD 36).
RDMAVIDEO_PRORES_HD inline int scan_position(int i) {
  constexpr uint8_t kScan[64] = {0,  1,  8,  9,  2,  3,  10, 11, 16, 17, 24, 25, 18, 19, 26, 27,
                                 4,  5,  12, 20, 13, 6,  7,  14, 21, 28, 29, 22, 15, 23, 30, 31,
                                 32, 33, 40, 48, 41, 34, 35, 42, 49, 56, 57, 50, 43, 36, 37, 44,
                                 51, 58, 59, 52, 45, 38, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};
  return kScan[i];
}

// Code book bytes (bits 7-5: Rice order; 4-2: exponential Golomb order; 1-0: the switch).
inline constexpr uint8_t kFirstDcBook = 0xb8;
RDMAVIDEO_PRORES_HD inline uint8_t dc_book(unsigned last_code) {
  constexpr uint8_t kBooks[7] = {0x04, 0x28, 0x28, 0x4d, 0x4d, 0x70, 0x70};
  return kBooks[last_code < 6 ? last_code : 6];
}
RDMAVIDEO_PRORES_HD inline uint8_t run_book(unsigned last_run) {
  constexpr uint8_t kBooks[16] = {0x06, 0x06, 0x05, 0x05, 0x04, 0x29, 0x29, 0x29,
                                  0x29, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x4c};
  return kBooks[last_run < 15 ? last_run : 15];
}
RDMAVIDEO_PRORES_HD inline uint8_t level_book(unsigned last_level) {
  constexpr uint8_t kBooks[10] = {0x04, 0x0a, 0x05, 0x06, 0x04, 0x28, 0x28, 0x28, 0x28, 0x4c};
  return kBooks[last_level < 9 ? last_level : 9];
}

/// Bits written most significant first into a caller's buffer; past its end, nothing more is
/// written and overflowed() says so (the caller tries a coarser quantiser).
class BitWriter {
 public:
  RDMAVIDEO_PRORES_HD BitWriter(uint8_t* out, size_t capacity) : out_(out), capacity_(capacity) {}

  /// The low `count` (0..32) bits of `value`.
  RDMAVIDEO_PRORES_HD void put(uint32_t value, int count) {
    if (count == 0) return;
    acc_ = (acc_ << count) | (value & (count == 32 ? 0xffffffffu : (1u << count) - 1));
    held_ += count;
    while (held_ >= 8) {
      held_ -= 8;
      emit(static_cast<uint8_t>(acc_ >> held_));
    }
  }
  RDMAVIDEO_PRORES_HD void zeros(unsigned count) {
    for (; count >= 32; count -= 32) put(0, 32);
    put(0, static_cast<int>(count));
  }
  /// Pads the last byte with zeros; the bytes written.
  RDMAVIDEO_PRORES_HD size_t finish() {
    if (held_ > 0) {
      emit(static_cast<uint8_t>(acc_ << (8 - held_)));
      held_ = 0;
    }
    return bytes_;
  }
  RDMAVIDEO_PRORES_HD bool overflowed() const { return overflow_; }

 private:
  RDMAVIDEO_PRORES_HD void emit(uint8_t byte) {
    if (bytes_ < capacity_) {
      out_[bytes_++] = byte;
    } else {
      overflow_ = true;
    }
  }

  uint8_t* out_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t acc_ = 0;
  int held_ = 0;
  bool overflow_ = false;
};

RDMAVIDEO_PRORES_HD inline int log2_floor(uint32_t v) {
  int n = 0;
  while (v >>= 1) ++n;
  return n;
}

/// `value` (>= 0) in the code book `book`.
RDMAVIDEO_PRORES_HD inline void put_code(BitWriter& w, uint32_t value, uint8_t book) {
  const int switch_bits = book & 3;
  const int exp_order = (book >> 2) & 7;
  const int rice_order = book >> 5;
  const uint32_t first_exp = static_cast<uint32_t>(switch_bits + 1) << rice_order;
  if (value >= first_exp) {  // exponential Golomb, after switch_bits + 1 leading zeros
    const uint32_t v = value - first_exp + (1u << exp_order);
    const int exp = log2_floor(v);
    w.zeros(static_cast<unsigned>(exp - exp_order + switch_bits + 1));
    w.put(v, exp + 1);
  } else {  // Rice: the quotient in unary, then the remainder
    w.zeros(value >> rice_order);
    w.put(1, 1);
    w.put(value, rice_order);
  }
}

/// The forward 8x8 DCT of `in` (samples less their midpoint, row by row), scaled as ProRes
/// decoders expect: four times the orthonormal transform, rounded. Fixed point: cosines in
/// 15 bits, four bits kept between the passes (the sums stay within 31 bits: |rows| <= 16 x
/// 512 x sqrt(8), and the largest row of cosines sums to 83,980).
RDMAVIDEO_PRORES_HD inline void forward_dct(const int32_t in[64], int32_t out[64]) {
  // round(32768 * c(k) * cos((2n + 1) k pi / 16)), c(0) = sqrt(1/8), c(k) = 1/2.
  constexpr int32_t kCos[8][8] = {{11585, 11585, 11585, 11585, 11585, 11585, 11585, 11585},
                                  {16069, 13623, 9102, 3196, -3196, -9102, -13623, -16069},
                                  {15137, 6270, -6270, -15137, -15137, -6270, 6270, 15137},
                                  {13623, -3196, -16069, -9102, 9102, 16069, 3196, -13623},
                                  {11585, -11585, -11585, 11585, 11585, -11585, -11585, 11585},
                                  {9102, -16069, 3196, 13623, -13623, -3196, 16069, -9102},
                                  {6270, -15137, 15137, -6270, -6270, 15137, -15137, 6270},
                                  {3196, -9102, 13623, -16069, 16069, -13623, 9102, -3196}};
  int32_t rows[64];
  for (int y = 0; y < 8; ++y) {
    for (int k = 0; k < 8; ++k) {
      int32_t sum = 0;
      for (int n = 0; n < 8; ++n) sum += in[y * 8 + n] * kCos[k][n];
      rows[y * 8 + k] = (sum + (1 << 10)) >> 11;  // x16: 4 fractional bits
    }
  }
  for (int x = 0; x < 8; ++x) {
    for (int k = 0; k < 8; ++k) {
      int32_t sum = 0;
      for (int n = 0; n < 8; ++n) sum += rows[n * 8 + x] * kCos[k][n];
      out[k * 8 + x] = (sum + (1 << 16)) >> 17;  // x4
    }
  }
}

/// `coefficient` / `step`, rounded up from 5/8 of a step rather than a half: the small
/// coefficients that noise makes cost more bits than the error they save (the dead zone's
/// width was chosen by PSNR at equal size, prores_conformance_test).
RDMAVIDEO_PRORES_HD inline int32_t quantise(int32_t coefficient, int32_t step) {
  const int32_t magnitude = coefficient < 0 ? -coefficient : coefficient;
  const int32_t level = (magnitude * 8 + step * 3) / (step * 8);
  return coefficient < 0 ? -level : level;
}

/// Codes one plane of a slice: `count` blocks (a power of two) of quantised levels, each 64 in
/// raster order. Returns the bytes written, or 0 when they did not fit in `capacity`.
RDMAVIDEO_PRORES_HD inline size_t code_plane(const int16_t* levels, int count, uint8_t* out,
                                             size_t capacity) {
  BitWriter w(out, capacity);
  // DC: the first as a signed code, then each difference, its sign given relative to the
  // last difference's (an odd code turns it over).
  int32_t last_dc = levels[0];
  put_code(w, static_cast<uint32_t>(last_dc >= 0 ? last_dc * 2 : -last_dc * 2 - 1), kFirstDcBook);
  unsigned last_code = 5;
  bool negative = false;
  for (int b = 1; b < count; ++b) {
    const int32_t dc = levels[b * kBlockSamples];
    const int32_t delta = dc - last_dc;
    const uint32_t magnitude = static_cast<uint32_t>(delta < 0 ? -delta : delta);
    unsigned code = 0;
    if (delta != 0) code = magnitude * 2 - ((delta < 0) != negative ? 1 : 0);
    put_code(w, code, dc_book(last_code));
    last_code = code;
    negative = delta < 0;
    last_dc = dc;
  }
  // AC: coefficient i of every block in turn, as (run of zeros, level, sign).
  unsigned run = 0, last_run = 4, last_level = 2;
  for (int i = 1; i < kBlockSamples; ++i) {
    const int at = scan_position(i);
    for (int b = 0; b < count; ++b) {
      const int32_t v = levels[b * kBlockSamples + at];
      if (v == 0) {
        ++run;
        continue;
      }
      const unsigned level = static_cast<unsigned>(v < 0 ? -v : v);
      put_code(w, run, run_book(last_run));
      put_code(w, level - 1, level_book(last_level));
      w.put(v < 0 ? 1 : 0, 1);
      last_run = run;
      last_level = level;
      run = 0;
    }
  }
  const size_t bytes = w.finish();
  return w.overflowed() ? 0 : bytes;
}

// ---- A whole slice: what the CPU encoder does for each slice, and a GPU thread for one.

inline constexpr size_t kSliceHeaderBytes = 6;
// The most a slice may take: its size is a 16-bit field, and a macroblock's worst case (every
// coefficient coded at the finest quantiser) is well under 2 KiB.
inline constexpr size_t kSliceCapPerMacroblock = 2048;
// Coefficients of one slice: 8 blocks a macroblock (4 Y, 2 Cb, 2 Cr), 64 each.
inline constexpr size_t kSliceCoefficients = kMaxSliceMacroblocks * 8 * kBlockSamples;

RDMAVIDEO_PRORES_HD inline size_t slice_cap(uint32_t mb_count) {
  const size_t cap = mb_count * kSliceCapPerMacroblock;
  return cap < 0xffff ? cap : 0xffff;
}

/// A slice: where it starts (in macroblocks) and how many it has.
struct SliceAt {
  uint32_t mb_x, mb_y, mb_count;
};

/// A 10-bit 4:2:2 picture in planes (pitches in samples), as the slices read it.
struct PlanesRef {
  const uint16_t* y;
  const uint16_t* cb;
  const uint16_t* cr;
  size_t y_pitch, c_pitch;
  uint32_t width, height;
};

/// The 8x8 block at (x0, y0) of a plane `width` x `height` (its edge samples repeated), less
/// the midpoint, transformed into `out`.
RDMAVIDEO_PRORES_HD inline void block_dct(const uint16_t* plane, size_t pitch, uint32_t width,
                                          uint32_t height, uint32_t x0, uint32_t y0, int32_t* out) {
  int32_t samples[64];
  for (uint32_t r = 0; r < 8; ++r) {
    const uint32_t y = y0 + r < height ? y0 + r : height - 1;
    const uint16_t* row = plane + y * pitch;
    for (uint32_t c = 0; c < 8; ++c) {
      const uint32_t x = x0 + c < width ? x0 + c : width - 1;
      samples[r * 8 + c] = static_cast<int32_t>(row[x] & 0x3ff) - 512;
    }
  }
  forward_dct(samples, out);
}

/// The DCT of every block of the slice of `mb_count` macroblocks at (mb_x, mb_y), into
/// `coefficients` (kSliceCoefficients): its Y blocks (each macroblock's top left, top right,
/// bottom left, bottom right), then Cb's and Cr's (each macroblock's top, then bottom).
RDMAVIDEO_PRORES_HD inline void slice_dct(const PlanesRef& p, uint32_t mb_x, uint32_t mb_y,
                                          uint32_t mb_count, int32_t* coefficients) {
  const uint32_t cw = (p.width + 1) / 2;
  int32_t* y_blocks = coefficients;
  int32_t* cb_blocks = coefficients + mb_count * 4 * kBlockSamples;
  int32_t* cr_blocks = cb_blocks + mb_count * 2 * kBlockSamples;
  for (uint32_t m = 0; m < mb_count; ++m) {
    const uint32_t x = (mb_x + m) * 16, y = mb_y * 16;
    for (uint32_t b = 0; b < 4; ++b) {
      block_dct(p.y, p.y_pitch, p.width, p.height, x + (b & 1) * 8, y + (b >> 1) * 8,
                y_blocks + (m * 4 + b) * kBlockSamples);
    }
    for (uint32_t b = 0; b < 2; ++b) {
      block_dct(p.cb, p.c_pitch, cw, p.height, x / 2, y + b * 8,
                cb_blocks + (m * 2 + b) * kBlockSamples);
      block_dct(p.cr, p.c_pitch, cw, p.height, x / 2, y + b * 8,
                cr_blocks + (m * 2 + b) * kBlockSamples);
    }
  }
}

/// The slice's `coefficients` at quantiser `q` into `out` (its 6-byte header first): its
/// size, or 0 where it does not fit in `cap`. `levels` holds kSliceCoefficients.
RDMAVIDEO_PRORES_HD inline size_t code_slice(const int32_t* coefficients, uint32_t mb_count,
                                             const uint8_t* matrix, int q, uint8_t* out, size_t cap,
                                             int16_t* levels) {
  if (cap <= kSliceHeaderBytes) return 0;
  const int blocks[3] = {static_cast<int>(mb_count * 4), static_cast<int>(mb_count * 2),
                         static_cast<int>(mb_count * 2)};
  size_t sizes[3] = {0, 0, 0};
  size_t used = kSliceHeaderBytes;
  for (int plane = 0; plane < 3; ++plane) {
    const int count = blocks[plane] * kBlockSamples;
    for (int i = 0; i < count; ++i) {
      levels[i] = static_cast<int16_t>(
          quantise(coefficients[i], static_cast<int32_t>(matrix[i % kBlockSamples]) * q));
    }
    coefficients += count;
    sizes[plane] = code_plane(levels, blocks[plane], out + used, cap - used);
    if (sizes[plane] == 0 || sizes[plane] > 0xffff) return 0;
    used += sizes[plane];
  }
  out[0] = kSliceHeaderBytes << 3;
  out[1] = static_cast<uint8_t>(q);
  out[2] = static_cast<uint8_t>(sizes[0] >> 8);
  out[3] = static_cast<uint8_t>(sizes[0]);
  out[4] = static_cast<uint8_t>(sizes[1] >> 8);
  out[5] = static_cast<uint8_t>(sizes[1]);
  return used;
}

/// A coded slice from its slot into the frame, and its size into the slice table.
RDMAVIDEO_PRORES_HD inline void gather_slice(const uint8_t* slot, uint64_t size,
                                             uint8_t* table_entry, uint8_t* to) {
  for (uint64_t b = 0; b < size; ++b) to[b] = slot[b];
  table_entry[0] = static_cast<uint8_t>(size >> 8);
  table_entry[1] = static_cast<uint8_t>(size);
}

}  // namespace rdmavideo::prores
