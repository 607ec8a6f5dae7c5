// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the ProRes encoder (SMPTE RDD 36), written once for the GPU and the CPU,
// as its input's conversion is (gpu/picture422.hpp): the CUDA kernels (gpu/prores.cu) and
// the CPU encoder (encoder/prores_encoder.cpp) both call it, so they make the same bytes. Integer
// arithmetic only: a GPU's floating point (fused multiply-adds) would not round as a CPU does.
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

#include "rdmavideo/host_device.hpp"

namespace rdmavideo::prores {

inline constexpr int kMaxSliceMacroblocks = 8;
inline constexpr int kBlockSamples = 64;

// The order in which a progressive frame's coefficients are visited (RDD 36): the raster
// position of each step of the scan, and the step of each raster position, derived from it so
// that the two cannot disagree.
struct ScanTable {
  uint8_t at[64];
};
RDMAVIDEO_HOST_DEVICE constexpr ScanTable scan_positions() {
  return {{0,  1,  8,  9,  2,  3,  10, 11, 16, 17, 24, 25, 18, 19, 26, 27, 4,  5,  12, 20, 13, 6,
           7,  14, 21, 28, 29, 22, 15, 23, 30, 31, 32, 33, 40, 48, 41, 34, 35, 42, 49, 56, 57, 50,
           43, 36, 37, 44, 51, 58, 59, 52, 45, 38, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}};
}
RDMAVIDEO_HOST_DEVICE constexpr ScanTable scan_indices() {
  const ScanTable positions = scan_positions();
  ScanTable indices{};
  for (int i = 0; i < 64; ++i) indices.at[positions.at[i]] = static_cast<uint8_t>(i);
  return indices;
}
RDMAVIDEO_HOST_DEVICE inline int scan_position(int i) {
  static constexpr ScanTable kPositions = scan_positions();
  return kPositions.at[i];
}
/// Where each raster position is in the scan.
RDMAVIDEO_HOST_DEVICE inline int scan_index(int raster) {
  static constexpr ScanTable kIndices = scan_indices();
  return kIndices.at[raster];
}

// Code book bytes (bits 7-5: Rice order; 4-2: exponential Golomb order; 1-0: the switch).
inline constexpr uint8_t kFirstDcBook = 0xb8;
RDMAVIDEO_HOST_DEVICE inline uint8_t dc_book(unsigned last_code) {
  constexpr uint8_t kBooks[7] = {0x04, 0x28, 0x28, 0x4d, 0x4d, 0x70, 0x70};
  return kBooks[last_code < 6 ? last_code : 6];
}
RDMAVIDEO_HOST_DEVICE inline uint8_t run_book(unsigned last_run) {
  constexpr uint8_t kBooks[16] = {0x06, 0x06, 0x05, 0x05, 0x04, 0x29, 0x29, 0x29,
                                  0x29, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x4c};
  return kBooks[last_run < 15 ? last_run : 15];
}
RDMAVIDEO_HOST_DEVICE inline uint8_t level_book(unsigned last_level) {
  constexpr uint8_t kBooks[10] = {0x04, 0x0a, 0x05, 0x06, 0x04, 0x28, 0x28, 0x28, 0x28, 0x4c};
  return kBooks[last_level < 9 ? last_level : 9];
}

/// Counts the bits a writer would be given, writing none: how the codes' lengths are found,
/// through the very calls that write them.
struct BitCounter {
  uint32_t bits = 0;
  RDMAVIDEO_HOST_DEVICE void put(uint32_t, int count) { bits += static_cast<uint32_t>(count); }
  RDMAVIDEO_HOST_DEVICE void zeros(unsigned count) { bits += count; }
};

/// Places bits at a position in 32-bit words (bit 31 of word 0 first), which other threads
/// fill at other positions: a GPU thread writes its part of a slice where the slice's prefix
/// sum puts it, ORing the words it shares with its neighbours. The words start at zero.
class BitPlacer {
 public:
  RDMAVIDEO_HOST_DEVICE BitPlacer(uint32_t* words, uint32_t at) : words_(words), at_(at) {}

  RDMAVIDEO_HOST_DEVICE void put(uint32_t value, int count) {
    if (count == 0) return;
    value &= count == 32 ? 0xffffffffu : (1u << count) - 1;
    const uint32_t word = at_ >> 5;
    const int used = static_cast<int>(at_ & 31), room = 32 - used;
    if (count <= room) {
      set(word, value << (room - count));
    } else {
      set(word, value >> (count - room));
      set(word + 1, value << (32 - (count - room)));
    }
    at_ += static_cast<uint32_t>(count);
  }
  RDMAVIDEO_HOST_DEVICE void zeros(unsigned count) { at_ += count; }
  RDMAVIDEO_HOST_DEVICE uint32_t at() const { return at_; }

 private:
  RDMAVIDEO_HOST_DEVICE void set(uint32_t word, uint32_t bits) {
    if (bits == 0) return;
#if defined(__CUDA_ARCH__)
    atomicOr(&words_[word], bits);
#else
    words_[word] |= bits;
#endif
  }
  uint32_t* words_;
  uint32_t at_;
};

/// Byte `i` of what a BitPlacer placed.
RDMAVIDEO_HOST_DEVICE inline uint8_t placed_byte(const uint32_t* words, uint32_t i) {
  return static_cast<uint8_t>(words[i >> 2] >> (24 - 8 * (i & 3)));
}

/// `v`'s low 16 bits, big-endian, as the format's fields are.
RDMAVIDEO_HOST_DEVICE inline void put16(uint8_t* at, uint32_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}

/// floor(log2 v), v >= 1: the bits below the highest set one (the GPU's count of leading
/// zeros, or the compiler's).
RDMAVIDEO_HOST_DEVICE inline int log2_floor(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 31 - __clz(static_cast<int>(v));
#else
  return 31 - __builtin_clz(v);
#endif
}

/// `value` (>= 0) in the code book `book`, into a writer, a counter or a placer.
template <typename Bits>
RDMAVIDEO_HOST_DEVICE inline void put_code(Bits& w, uint32_t value, uint8_t book) {
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
RDMAVIDEO_HOST_DEVICE inline void forward_dct(const int32_t in[64], int32_t out[64]) {
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

/// What the quantiser divides: numerators below 2^19 (a coefficient is at most 4 x 8 x 512 in
/// magnitude, so 8 times it plus 3 steps is below 2^18) by divisors below 2^18 (8 x 255 x 128).
inline constexpr uint32_t kDividendBits = 19;
inline constexpr uint32_t kMaxDivisor = (1u << 18) - 1;

/// Division by `d` (1 <= d <= kMaxDivisor) as a multiply and a shift, exact for every numerator
/// below 2^kDividendBits: with 2^(l-1) < d <= 2^l and N = kDividendBits, m = floor(2^(N+l) / d)
/// + 1 exceeds 2^(N+l) / d by at most 1, so n x m / 2^(N+l) exceeds n / d by less than
/// 2^N / 2^(N+l) <= 1 / d, which the remainder of n / d (at most (d - 1) / d) cannot carry to
/// the next integer. A GPU divides in a loop of instructions; this is one multiply. m is at
/// most 2^(N+1) and the shift at most 37: both are kept in one word (m above, the shift in the
/// low 6 bits).
class Divisor {
 public:
  Divisor() = default;  // by 1
  RDMAVIDEO_HOST_DEVICE explicit Divisor(uint32_t d) {
    const uint32_t shift =
        kDividendBits + (d <= 1 ? 0 : static_cast<uint32_t>(log2_floor(d - 1)) + 1);
    const auto multiplier = static_cast<uint32_t>((uint64_t{1} << shift) / d + 1);
    packed_ = multiplier << 6 | shift;
  }
  RDMAVIDEO_HOST_DEVICE uint32_t divide(uint32_t n) const {
    return static_cast<uint32_t>((uint64_t{n} * (packed_ >> 6)) >> (packed_ & 63));
  }

 private:
  uint32_t packed_ = 1u << 6;  // multiplier 1, shift 0
};

/// `coefficient` / `step`, rounded up from 5/8 of a step rather than a half: the small
/// coefficients that noise makes cost more bits than the error they save (the dead zone's
/// width was chosen by PSNR at equal size, prores_conformance_test). `eight_steps` divides by
/// 8 x `step`: (8 |coefficient| + 3 step) / (8 step).
RDMAVIDEO_HOST_DEVICE inline int32_t quantise(int32_t coefficient, int32_t step,
                                              const Divisor& eight_steps) {
  const int32_t magnitude = coefficient < 0 ? -coefficient : coefficient;
  const auto level =
      static_cast<int32_t>(eight_steps.divide(static_cast<uint32_t>(magnitude * 8 + step * 3)));
  return coefficient < 0 ? -level : level;
}

// ---- A slice's coefficients, in the order they are coded.
//
// 16 bits each (a coefficient is at most 4 x 8 x 512 in magnitude), a slice's together, plane
// after plane: Y (4 blocks a macroblock, in macroblock order: top left, top right, bottom left,
// bottom right), then Cb and Cr (2 blocks a macroblock: top, bottom). Within a plane of n
// blocks, block b's coefficient at scan position i is number i x n + b: every block's DC
// first, then coefficient 1 of every block, and so on, as the plane's codes visit them. So
// the coding passes read them in order, and a GPU's threads neighbouring stretches.

using Coefficient = int16_t;
inline constexpr size_t kSliceHeaderBytes = 6;
// The most a slice may take: its size is a 16-bit field, and a macroblock's worst case (every
// coefficient coded at the finest quantiser) is well under 2 KiB.
inline constexpr size_t kSliceCapPerMacroblock = 2048;
// Coefficients of one slice: 8 blocks a macroblock (4 Y, 2 Cb, 2 Cr), 64 each.
inline constexpr size_t kSliceCoefficients = kMaxSliceMacroblocks * 8 * kBlockSamples;

RDMAVIDEO_HOST_DEVICE inline size_t slice_cap(uint32_t mb_count) {
  const size_t cap = mb_count * kSliceCapPerMacroblock;
  return cap < 0xffff ? cap : 0xffff;
}

/// A plane of a slice of `mb_count` macroblocks: its first coefficient and its blocks (a power
/// of two).
struct PlaneSpan {
  uint32_t first, blocks;
};
RDMAVIDEO_HOST_DEVICE inline PlaneSpan plane_span(int plane, uint32_t mb_count) {
  return plane == 0   ? PlaneSpan{0, 4 * mb_count}
         : plane == 1 ? PlaneSpan{4 * mb_count * kBlockSamples, 2 * mb_count}
                      : PlaneSpan{6 * mb_count * kBlockSamples, 2 * mb_count};
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
/// the midpoint, transformed into block `b` of the `blocks` whose coefficients start at
/// `plane` (in coding order).
RDMAVIDEO_HOST_DEVICE inline void block_dct(const uint16_t* samples_at, size_t pitch,
                                            uint32_t width, uint32_t height, uint32_t x0,
                                            uint32_t y0, Coefficient* plane, uint32_t blocks,
                                            uint32_t b) {
  int32_t samples[64];
  for (uint32_t r = 0; r < 8; ++r) {
    const uint32_t y = y0 + r < height ? y0 + r : height - 1;
    const uint16_t* row = samples_at + y * pitch;
    for (uint32_t c = 0; c < 8; ++c) {
      const uint32_t x = x0 + c < width ? x0 + c : width - 1;
      samples[r * 8 + c] = static_cast<int32_t>(row[x] & 0x3ff) - 512;
    }
  }
  int32_t transformed[64];
  forward_dct(samples, transformed);
  for (int at = 0; at < 64; ++at) {
    plane[static_cast<uint32_t>(scan_index(at)) * blocks + b] =
        static_cast<Coefficient>(transformed[at]);
  }
}

/// Block `t` (0 to 8 x mb_count - 1) of the slice of `mb_count` macroblocks at (mb_x, mb_y):
/// macroblock t / 8, its block t % 8 (0-3 Y: top left, top right, bottom left, bottom right;
/// 4-5 Cb and 6-7 Cr: top, bottom), transformed into its place among the slice's
/// `coefficients` (kSliceCoefficients). A GPU thread does one.
RDMAVIDEO_HOST_DEVICE inline void slice_block_dct(const PlanesRef& p, uint32_t mb_x, uint32_t mb_y,
                                                  uint32_t mb_count, uint32_t t,
                                                  Coefficient* coefficients) {
  const uint32_t m = t / 8, b = t % 8;
  const uint32_t x = (mb_x + m) * 16, y = mb_y * 16;
  if (b < 4) {
    const PlaneSpan luma = plane_span(0, mb_count);
    block_dct(p.y, p.y_pitch, p.width, p.height, x + (b & 1) * 8, y + (b >> 1) * 8,
              coefficients + luma.first, luma.blocks, m * 4 + b);
    return;
  }
  const uint32_t cw = (p.width + 1) / 2;
  const bool cr = b >= 6;
  const uint32_t half = (b - 4) % 2;
  const PlaneSpan chroma = plane_span(cr ? 2 : 1, mb_count);
  block_dct(cr ? p.cr : p.cb, p.c_pitch, cw, p.height, x / 2, y + half * 8,
            coefficients + chroma.first, chroma.blocks, m * 2 + half);
}

/// Every block of the slice (slice_block_dct), one after another.
RDMAVIDEO_HOST_DEVICE inline void slice_dct(const PlanesRef& p, uint32_t mb_x, uint32_t mb_y,
                                            uint32_t mb_count, Coefficient* coefficients) {
  for (uint32_t t = 0; t < mb_count * 8; ++t) {
    slice_block_dct(p, mb_x, mb_y, mb_count, t, coefficients);
  }
}

// ---- A plane's codes.
//
// DC: the first block's as a signed code, then each difference, its sign given relative to
// the last difference's (an odd code turns it over). AC: coefficient i of every block in turn,
// as (run of zeros, level, sign), whose code books adapt to the last run and level.

/// Each scan position's step and what divides by 8 times it, at one quantiser (the matrix is
/// the same for every plane).
struct Steps {
  int32_t step[kBlockSamples];
  Divisor eight[kBlockSamples];
};
RDMAVIDEO_HOST_DEVICE inline void make_step(const uint8_t* matrix, int q, int i, Steps& s) {
  s.step[i] = static_cast<int32_t>(matrix[scan_position(i)]) * q;
  s.eight[i] = Divisor(8u * static_cast<uint32_t>(s.step[i]));
}

/// The levels of a plane: number k of its coefficients (coding order) quantised.
struct PlaneLevels {
  const Coefficient* at;
  int shift;  // log2 of the plane's blocks: number k is at scan position k >> shift
  const Steps* steps;
  RDMAVIDEO_HOST_DEVICE int32_t operator[](uint32_t k) const {
    const uint32_t i = k >> shift;
    return quantise(at[k], steps->step[i], steps->eight[i]);
  }
};

/// The DC codes of a plane's `blocks` blocks.
template <typename Bits>
RDMAVIDEO_HOST_DEVICE inline void dc_codes(const PlaneLevels& levels, uint32_t blocks, Bits& w) {
  int32_t last_dc = levels[0];
  put_code(w, static_cast<uint32_t>(last_dc >= 0 ? last_dc * 2 : -last_dc * 2 - 1), kFirstDcBook);
  unsigned last_code = 5;
  bool negative = false;
  for (uint32_t b = 1; b < blocks; ++b) {
    const int32_t dc = levels[b];
    const int32_t delta = dc - last_dc;
    const uint32_t magnitude = static_cast<uint32_t>(delta < 0 ? -delta : delta);
    unsigned code = 0;
    if (delta != 0) code = magnitude * 2 - ((delta < 0) != negative ? 1 : 0);
    put_code(w, code, dc_book(last_code));
    last_code = code;
    negative = delta < 0;
    last_dc = dc;
  }
}

/// Where the AC codes stand: the zeros since the last level, the last run and level.
struct RunState {
  uint32_t run = 0, last_run = 4, last_level = 2;
};

/// The AC codes of coefficients [begin, end) of a plane, from `s`, which they move on.
template <typename Bits>
RDMAVIDEO_HOST_DEVICE inline void ac_codes(const PlaneLevels& levels, uint32_t begin, uint32_t end,
                                           RunState& s, Bits& w) {
  for (uint32_t k = begin; k < end; ++k) {
    const int32_t v = levels[k];
    if (v == 0) {
      ++s.run;
      continue;
    }
    const auto level = static_cast<uint32_t>(v < 0 ? -v : v);
    put_code(w, s.run, run_book(s.last_run));
    put_code(w, level - 1, level_book(s.last_level));
    w.put(v < 0 ? 1 : 0, 1);
    s.last_run = s.run;
    s.last_level = level;
    s.run = 0;
  }
}

// ---- Many threads a slice.
//
// A slice's coefficients are cut into chunks of kChunk, a GPU thread each (128 for a slice of
// 8 macroblocks; a plane of n blocks has 2n, its first holding the DC codes). A chunk's codes
// depend on what came before it only through its first level's run and code books and its
// second level's run code book (the run before it adapts that book), so each chunk is
// summarised on its own, the summaries are folded in order (a few operations each) to give
// every chunk its first bit and the state it starts from, and then every chunk writes its
// codes at its place. The CPU twin runs the same phases one thread after another.

inline constexpr uint32_t kChunk = 32;
inline constexpr uint32_t kSliceThreads = kSliceCoefficients / kChunk;  // 128
static_assert(kChunk >= 4 * kMaxSliceMacroblocks, "a plane's DC codes fit its first chunk");

/// What a chunk's AC codes are, whatever came before them.
struct ChunkSummary {
  uint32_t dc_bits;      // the plane's DC codes (its first chunk only)
  uint32_t rest_bits;    // from the second level's level code on
  uint16_t lead, trail;  // zeros before the first level and after the last (lead: all, if none)
  uint16_t first_level, second_run, last_run, last_level;
  uint32_t levels;  // 0, 1, or 2 for two or more
};

/// Chunk `c` of a slice: its plane, the plane's levels' layout, and its coefficients within
/// the plane.
struct ChunkAt {
  int plane;
  uint32_t blocks, first, begin, end;  // plane's blocks and first coefficient; [begin, end)
};
RDMAVIDEO_HOST_DEVICE inline uint32_t slice_chunks(uint32_t mb_count) { return 16 * mb_count; }
RDMAVIDEO_HOST_DEVICE inline ChunkAt chunk_at(uint32_t c, uint32_t mb_count) {
  const int plane = c < 8 * mb_count ? 0 : c < 12 * mb_count ? 1 : 2;
  const PlaneSpan span = plane_span(plane, mb_count);
  const uint32_t begin = c * kChunk - span.first;
  return {plane, span.blocks, span.first, begin, begin + kChunk};
}
/// The first chunk of plane `p`.
RDMAVIDEO_HOST_DEVICE inline uint32_t plane_chunk(int plane, uint32_t mb_count) {
  return plane_span(plane, mb_count).first / kChunk;
}

RDMAVIDEO_HOST_DEVICE inline ChunkSummary summarise_chunk(const PlaneLevels& levels,
                                                          uint32_t blocks, uint32_t begin,
                                                          uint32_t end) {
  ChunkSummary c{};
  if (begin == 0) {  // the plane's DC codes, then its AC from the first block's coefficient 1
    BitCounter dc;
    dc_codes(levels, blocks, dc);
    c.dc_bits = dc.bits;
    begin = blocks;
  }
  uint32_t k = begin;
  while (k < end && levels[k] == 0) ++k;
  c.lead = static_cast<uint16_t>(k - begin);
  if (k == end) {
    c.trail = c.lead;
    return c;
  }
  const int32_t first = levels[k];
  c.first_level = static_cast<uint16_t>(first < 0 ? -first : first);
  c.last_level = c.first_level;
  uint32_t next = k + 1;
  while (next < end && levels[next] == 0) ++next;
  if (next == end) {
    c.levels = 1;
    c.trail = static_cast<uint16_t>(end - k - 1);
    return c;
  }
  c.levels = 2;
  c.second_run = static_cast<uint16_t>(next - k - 1);
  const int32_t second = levels[next];
  const auto level = static_cast<uint32_t>(second < 0 ? -second : second);
  BitCounter rest;
  put_code(rest, level - 1, level_book(c.first_level));
  rest.put(second < 0 ? 1 : 0, 1);
  RunState s{0, c.second_run, level};
  ac_codes(levels, next + 1, end, s, rest);
  c.rest_bits = rest.bits;
  c.trail = static_cast<uint16_t>(s.run);
  c.last_run = static_cast<uint16_t>(s.last_run);
  c.last_level = static_cast<uint16_t>(s.last_level);
  return c;
}

/// The bits of a chunk whose codes start from `s`, which they move on: what ac_codes (after
/// dc_codes, for a plane's first chunk) would write from there.
RDMAVIDEO_HOST_DEVICE inline uint32_t chunk_bits(const ChunkSummary& c, RunState& s) {
  if (c.levels == 0) {
    s.run += c.lead;
    return c.dc_bits;
  }
  BitCounter n;
  const uint32_t run = s.run + c.lead;
  put_code(n, run, run_book(s.last_run));
  put_code(n, c.first_level - 1u, level_book(s.last_level));
  n.put(0, 1);
  if (c.levels == 1) {
    s.last_run = run;
  } else {
    put_code(n, c.second_run, run_book(run));
    n.bits += c.rest_bits;
    s.last_run = c.last_run;
  }
  s.last_level = c.last_level;
  s.run = c.trail;
  return c.dc_bits + n.bits;
}

/// What a slice's threads share (a thread block's shared memory on a GPU).
struct SliceShared {
  Steps steps;
  ChunkSummary chunks[kSliceThreads];
  RunState entry[kSliceThreads];  // the state each chunk's codes start from
  uint32_t start[kSliceThreads];  // each chunk's first bit, within its plane
  uint32_t plane_bits[3];
};

/// The phases of coding a slice of `mb_count` macroblocks at quantiser `q`, for thread t of
/// kSliceThreads, a barrier between each. Steps: thread t < 64, scan position t's step.
RDMAVIDEO_HOST_DEVICE inline void slice_steps(uint32_t t, const uint8_t* matrix, int q,
                                              SliceShared& sh) {
  if (t < kBlockSamples) make_step(matrix, q, static_cast<int>(t), sh.steps);
}
RDMAVIDEO_HOST_DEVICE inline PlaneLevels plane_levels(const Coefficient* coefficients,
                                                      const ChunkAt& c, const SliceShared& sh) {
  return {coefficients + c.first, log2_floor(c.blocks), &sh.steps};
}
/// Summaries: chunk t's.
RDMAVIDEO_HOST_DEVICE inline void slice_summarise(uint32_t t, const Coefficient* coefficients,
                                                  uint32_t mb_count, SliceShared& sh) {
  if (t >= slice_chunks(mb_count)) return;
  const ChunkAt c = chunk_at(t, mb_count);
  sh.chunks[t] = summarise_chunk(plane_levels(coefficients, c, sh), c.blocks, c.begin, c.end);
}
/// Fold: thread t < 3, plane t's chunks in order: where each starts, from what, and the
/// plane's bits.
RDMAVIDEO_HOST_DEVICE inline void slice_fold(uint32_t t, uint32_t mb_count, SliceShared& sh) {
  if (t >= 3) return;
  const int plane = static_cast<int>(t);
  const uint32_t first = plane_chunk(plane, mb_count);
  const uint32_t end = plane == 2 ? slice_chunks(mb_count) : plane_chunk(plane + 1, mb_count);
  RunState s;
  uint32_t bits = 0;
  for (uint32_t c = first; c < end; ++c) {
    sh.entry[c] = s;
    sh.start[c] = bits;
    bits += chunk_bits(sh.chunks[c], s);
  }
  sh.plane_bits[plane] = bits;
}
/// Size (one thread): the slice's bytes, its header's among them, or 0 over its cap.
RDMAVIDEO_HOST_DEVICE inline size_t slice_size(uint32_t mb_count, const SliceShared& sh) {
  size_t used = kSliceHeaderBytes;
  for (uint32_t bits : sh.plane_bits) used += (bits + 7) / 8;
  return used <= slice_cap(mb_count) ? used : 0;
}
/// Codes: chunk t's at its place among `words` (a BitPlacer's, zero, room for the slice), and
/// thread 0 the header.
RDMAVIDEO_HOST_DEVICE inline void slice_codes(uint32_t t, const Coefficient* coefficients,
                                              uint32_t mb_count, int q, const SliceShared& sh,
                                              uint32_t* words) {
  if (t >= slice_chunks(mb_count)) return;
  const uint32_t bytes[3] = {(sh.plane_bits[0] + 7) / 8, (sh.plane_bits[1] + 7) / 8,
                             (sh.plane_bits[2] + 7) / 8};
  if (t == 0) {
    BitPlacer header(words, 0);
    header.put(kSliceHeaderBytes << 3, 8);
    header.put(static_cast<uint32_t>(q), 8);
    header.put(bytes[0], 16);
    header.put(bytes[1], 16);
  }
  const ChunkAt c = chunk_at(t, mb_count);
  uint32_t plane_byte = kSliceHeaderBytes;
  for (int p = 0; p < c.plane; ++p) plane_byte += bytes[p];
  BitPlacer w(words, plane_byte * 8 + sh.start[t]);
  const PlaneLevels levels = plane_levels(coefficients, c, sh);
  uint32_t begin = c.begin;
  if (begin == 0) {
    dc_codes(levels, c.blocks, w);
    begin = c.blocks;
  }
  RunState s = sh.entry[t];
  ac_codes(levels, begin, c.end, s, w);
}

// The slice's phases one thread after another, as the CPU twin and the CUDA stand-in run them.

/// The slice's size at quantiser `q` (0: over its cap).
inline size_t count_slice(const Coefficient* coefficients, uint32_t mb_count, const uint8_t* matrix,
                          int q, SliceShared& sh) {
  for (uint32_t t = 0; t < kBlockSamples; ++t) slice_steps(t, matrix, q, sh);
  for (uint32_t t = 0; t < kSliceThreads; ++t) slice_summarise(t, coefficients, mb_count, sh);
  for (uint32_t t = 0; t < 3; ++t) slice_fold(t, mb_count, sh);
  return slice_size(mb_count, sh);
}

inline constexpr size_t kSliceWords = (kMaxSliceMacroblocks * kSliceCapPerMacroblock + 3) / 4;

/// The slice at quantiser `q` into `out` (`size` bytes, as count_slice gave it); `words`
/// (kSliceWords) is scratch. The bytes written: other than `size` only if the two disagree.
inline size_t write_slice(const Coefficient* coefficients, uint32_t mb_count, const uint8_t* matrix,
                          int q, uint8_t* out, size_t size, SliceShared& sh, uint32_t* words) {
  const size_t counted = count_slice(coefficients, mb_count, matrix, q, sh);
  if (counted != size) return counted;
  for (size_t w = 0; w < (size + 3) / 4; ++w) words[w] = 0;
  for (uint32_t t = 0; t < kSliceThreads; ++t) slice_codes(t, coefficients, mb_count, q, sh, words);
  for (uint32_t i = 0; i < size; ++i) out[i] = placed_byte(words, i);
  return size;
}

}  // namespace rdmavideo::prores

#include "slices/prores_rate.hpp"  // IWYU pragma: export
