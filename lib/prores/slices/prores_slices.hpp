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
// The largest quantiser this encoder uses (the format allows up to 224, meaning more).
inline constexpr int kMaxQuantiser = 128;

// The order in which a progressive frame's coefficients are visited (RDD 36).
RDMAVIDEO_HOST_DEVICE inline int scan_position(int i) {
  constexpr uint8_t kScan[64] = {0,  1,  8,  9,  2,  3,  10, 11, 16, 17, 24, 25, 18, 19, 26, 27,
                                 4,  5,  12, 20, 13, 6,  7,  14, 21, 28, 29, 22, 15, 23, 30, 31,
                                 32, 33, 40, 48, 41, 34, 35, 42, 49, 56, 57, 50, 43, 36, 37, 44,
                                 51, 58, 59, 52, 45, 38, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};
  return kScan[i];
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

/// Bits written most significant first into a caller's buffer; past its end, nothing more is
/// written and overflowed() says so (the caller tries a coarser quantiser).
/// Writes bits, most significant first, into `out`; with no `out` it only counts the bytes
/// (the rate control's passes need sizes, not slices).
class BitWriter {
 public:
  RDMAVIDEO_HOST_DEVICE BitWriter(uint8_t* out, size_t capacity) : out_(out), capacity_(capacity) {}

  /// The low `count` (0..32) bits of `value`.
  RDMAVIDEO_HOST_DEVICE void put(uint32_t value, int count) {
    if (count == 0) return;
    acc_ = (acc_ << count) | (value & (count == 32 ? 0xffffffffu : (1u << count) - 1));
    held_ += count;
    while (held_ >= 8) {
      held_ -= 8;
      emit(static_cast<uint8_t>(acc_ >> held_));
    }
  }
  RDMAVIDEO_HOST_DEVICE void zeros(unsigned count) {
    for (; count >= 32; count -= 32) put(0, 32);
    put(0, static_cast<int>(count));
  }
  /// Pads the last byte with zeros; the bytes written.
  RDMAVIDEO_HOST_DEVICE size_t finish() {
    if (held_ > 0) {
      emit(static_cast<uint8_t>(acc_ << (8 - held_)));
      held_ = 0;
    }
    return bytes_;
  }
  RDMAVIDEO_HOST_DEVICE bool overflowed() const { return overflow_; }

 private:
  RDMAVIDEO_HOST_DEVICE void emit(uint8_t byte) {
    if (bytes_ < capacity_) {
      if (out_) out_[bytes_] = byte;
      ++bytes_;
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

/// `value` (>= 0) in the code book `book`.
RDMAVIDEO_HOST_DEVICE inline void put_code(BitWriter& w, uint32_t value, uint8_t book) {
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
/// low 6 bits), so that a plane's 64 take 256 bytes of a GPU thread's memory.
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

/// A slice's coefficients: number i is at[i * stride]. The CPU keeps each slice's together
/// (stride 1); the GPU interleaves the slices (stride: their count), so that the threads of a
/// warp, a slice each, read and write neighbouring words.
template <typename T>
struct Strided {
  T* at;
  size_t stride;
  RDMAVIDEO_HOST_DEVICE T& operator[](size_t i) const { return at[i * stride]; }
  RDMAVIDEO_HOST_DEVICE Strided operator+(size_t i) const { return {at + i * stride, stride}; }
};
using Coefficients = Strided<int32_t>;
using ConstCoefficients = Strided<const int32_t>;

/// Codes one plane of a slice: `count` blocks (a power of two) of coefficients, each 64 in
/// raster order, quantised by `matrix` x `q` as they are read. Returns the bytes written (or
/// counted, with no `out`), or 0 when they did not fit in `capacity`.
RDMAVIDEO_HOST_DEVICE inline size_t code_plane(ConstCoefficients coefficients,
                                               const uint8_t* matrix, int q, int count,
                                               uint8_t* out, size_t capacity) {
  // Each coefficient's step, and what divides by 8 times it, once for all the plane's blocks.
  Divisor eight_steps[kBlockSamples];
  for (int at = 0; at < kBlockSamples; ++at) {
    eight_steps[at] = Divisor(8u * matrix[at] * static_cast<uint32_t>(q));
  }
  const auto level_at = [&](int block, int at) {
    return quantise(coefficients[static_cast<size_t>(block) * kBlockSamples + at],
                    static_cast<int32_t>(matrix[at]) * q, eight_steps[at]);
  };
  BitWriter w(out, capacity);
  // DC: the first as a signed code, then each difference, its sign given relative to the
  // last difference's (an odd code turns it over).
  int32_t last_dc = level_at(0, 0);
  put_code(w, static_cast<uint32_t>(last_dc >= 0 ? last_dc * 2 : -last_dc * 2 - 1), kFirstDcBook);
  unsigned last_code = 5;
  bool negative = false;
  for (int b = 1; b < count; ++b) {
    const int32_t dc = level_at(b, 0);
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
      const int32_t v = level_at(b, at);
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

RDMAVIDEO_HOST_DEVICE inline size_t slice_cap(uint32_t mb_count) {
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
RDMAVIDEO_HOST_DEVICE inline void block_dct(const uint16_t* plane, size_t pitch, uint32_t width,
                                            uint32_t height, uint32_t x0, uint32_t y0,
                                            Coefficients out) {
  int32_t samples[64];
  for (uint32_t r = 0; r < 8; ++r) {
    const uint32_t y = y0 + r < height ? y0 + r : height - 1;
    const uint16_t* row = plane + y * pitch;
    for (uint32_t c = 0; c < 8; ++c) {
      const uint32_t x = x0 + c < width ? x0 + c : width - 1;
      samples[r * 8 + c] = static_cast<int32_t>(row[x] & 0x3ff) - 512;
    }
  }
  int32_t transformed[64];
  forward_dct(samples, transformed);
  for (int i = 0; i < 64; ++i) out[i] = transformed[i];
}

/// Block `t` (0 to 8 x mb_count - 1) of the slice of `mb_count` macroblocks at (mb_x, mb_y):
/// macroblock t / 8, its block t % 8 (0-3 Y: top left, top right, bottom left, bottom right;
/// 4-5 Cb and 6-7 Cr: top, bottom), transformed into its place in `coefficients`
/// (kSliceCoefficients): every Y block of the slice, then every Cb block, then every Cr
/// block, each plane's in macroblock order. A GPU thread does one.
RDMAVIDEO_HOST_DEVICE inline void slice_block_dct(const PlanesRef& p, uint32_t mb_x, uint32_t mb_y,
                                                  uint32_t mb_count, uint32_t t,
                                                  Coefficients coefficients) {
  const uint32_t m = t / 8, b = t % 8;
  const uint32_t x = (mb_x + m) * 16, y = mb_y * 16;
  if (b < 4) {
    block_dct(p.y, p.y_pitch, p.width, p.height, x + (b & 1) * 8, y + (b >> 1) * 8,
              coefficients + (m * 4 + b) * kBlockSamples);
    return;
  }
  const uint32_t cw = (p.width + 1) / 2;
  const bool cr = b >= 6;
  const uint32_t half = (b - 4) % 2;
  const Coefficients plane_blocks = coefficients + mb_count * (cr ? 6 : 4) * kBlockSamples;
  block_dct(cr ? p.cr : p.cb, p.c_pitch, cw, p.height, x / 2, y + half * 8,
            plane_blocks + (m * 2 + half) * kBlockSamples);
}

/// Every block of the slice (slice_block_dct), one after another.
RDMAVIDEO_HOST_DEVICE inline void slice_dct(const PlanesRef& p, uint32_t mb_x, uint32_t mb_y,
                                            uint32_t mb_count, Coefficients coefficients) {
  for (uint32_t t = 0; t < mb_count * 8; ++t) {
    slice_block_dct(p, mb_x, mb_y, mb_count, t, coefficients);
  }
}

/// The slice's `coefficients` at quantiser `q` into `out` (its 6-byte header first): its
/// size, or 0 where it does not fit in `cap`. With no `out`, only its size.
RDMAVIDEO_HOST_DEVICE inline size_t code_slice(ConstCoefficients coefficients, uint32_t mb_count,
                                               const uint8_t* matrix, int q, uint8_t* out,
                                               size_t cap) {
  if (cap <= kSliceHeaderBytes) return 0;
  const int blocks[3] = {static_cast<int>(mb_count * 4), static_cast<int>(mb_count * 2),
                         static_cast<int>(mb_count * 2)};
  size_t sizes[3] = {0, 0, 0};
  size_t used = kSliceHeaderBytes;
  for (int plane = 0; plane < 3; ++plane) {
    sizes[plane] =
        code_plane(coefficients, matrix, q, blocks[plane], out ? out + used : nullptr, cap - used);
    if (sizes[plane] == 0 || sizes[plane] > 0xffff) return 0;
    coefficients = coefficients + static_cast<size_t>(blocks[plane]) * kBlockSamples;
    used += sizes[plane];
  }
  if (!out) return used;
  out[0] = kSliceHeaderBytes << 3;
  out[1] = static_cast<uint8_t>(q);
  put16(out + 2, static_cast<uint32_t>(sizes[0]));
  put16(out + 4, static_cast<uint32_t>(sizes[1]));
  return used;
}

// ---- The rate control, written once too: the CPU twin runs it over the slices' sizes with
// loops, a GPU as kernels of one thread block whose phases (each for thread t of
// kRateThreads, a barrier between them) are these functions, so the stand-in driver runs the
// very phases too, thread after thread.

inline constexpr int kRateThreads = 256;
/// Steps of the search for the frame's quantiser: enough to narrow 1..kMaxQuantiser to one.
inline constexpr int kRateSteps = 7;
static_assert((1 << kRateSteps) >= kMaxQuantiser);
inline constexpr uint32_t kNoSlice = 0xffffffffu;

/// Where the rate control stands for a frame: a binary search for the finest quantiser whose
/// slices, all at it, fit `budget` bytes (lo == hi once found; q: the one to try next), and
/// once the slices are coded, where they end after the table and the first over its cap.
struct RateState {
  int32_t lo, hi, q;
  uint32_t bad;
  uint64_t budget;
  uint64_t end;
};

RDMAVIDEO_HOST_DEVICE inline RateState rate_start(uint64_t budget) {
  return {1, kMaxQuantiser, (1 + kMaxQuantiser) / 2, kNoSlice, budget, 0};
}

/// A slice's bytes as the search adds them up: one over its cap (size 0) counts so much that
/// no sum with it fits any budget, yet the sum of every slice cannot wrap.
RDMAVIDEO_HOST_DEVICE inline uint64_t rate_bytes(uint64_t size, uint32_t count) {
  return size == 0 ? ~uint64_t{0} / (4 * uint64_t{count} + 4) : size;
}

/// One step of the search, given the slices' total at s.q.
RDMAVIDEO_HOST_DEVICE inline void rate_step(RateState& s, uint64_t total) {
  if (s.lo >= s.hi) return;
  if (total <= s.budget) {
    s.hi = s.q;
  } else {
    s.lo = s.q + 1;
  }
  s.q = (s.lo + s.hi) / 2;
}

/// Thread t's slices: [first, end).
struct Chunk {
  uint32_t first, end;
};
RDMAVIDEO_HOST_DEVICE inline Chunk rate_chunk(uint32_t t, uint32_t count) {
  const uint32_t per = (count + kRateThreads - 1) / kRateThreads;
  const uint32_t first = t * per < count ? t * per : count;
  return {first, first + per < count ? first + per : count};
}

/// What the phases share (a thread block's shared memory on a GPU).
struct RateShared {
  uint64_t part[kRateThreads];  // each thread's sum over its chunk
  uint64_t extra[kRateThreads];
  uint32_t stop;
};

/// `*at` = min(*at, v): atomically on a GPU.
RDMAVIDEO_HOST_DEVICE inline void min_into(uint32_t* at, uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicMin(at, v);
#else
  if (v < *at) *at = v;
#endif
}

/// The search's step. Phase 1: thread t's sum. Phase 2 (thread 0): the total, and the step.
RDMAVIDEO_HOST_DEVICE inline void search_sum(uint32_t t, const uint64_t* sizes, uint32_t count,
                                             RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  uint64_t sum = 0;
  for (uint32_t i = c.first; i < c.end; ++i) sum += rate_bytes(sizes[i], count);
  sh.part[t] = sum;
}
RDMAVIDEO_HOST_DEVICE inline void search_step(RateShared& sh, RateState& s) {
  uint64_t total = 0;
  for (int t = 0; t < kRateThreads; ++t) total += sh.part[t];
  rate_step(s, total);
}

/// Each slice's quantiser once the search ends at lo: lo - 1 for the first slices, in order,
/// whose extra bytes at lo - 1 the budget still pays for (and none after a slice that does not
/// fit its cap at lo - 1); lo for the rest. `sizes` at lo, `finer` at lo - 1.
/// Phase 1: thread t's sums at lo and of the extra bytes. Phase 2 (thread 0): each chunk's
/// spending before it. Phase 3: the first slice not paid for. Phase 4: the quantisers.
RDMAVIDEO_HOST_DEVICE inline uint64_t finer_extra(uint64_t size, uint64_t finer) {
  return finer > size ? finer - size : 0;
}
RDMAVIDEO_HOST_DEVICE inline void finer_sums(uint32_t t, const uint64_t* sizes,
                                             const uint64_t* finer, uint32_t count,
                                             RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  uint64_t sum = 0, extra = 0;
  for (uint32_t i = c.first; i < c.end; ++i) {
    sum += rate_bytes(sizes[i], count);
    extra += finer_extra(sizes[i], finer[i]);
  }
  sh.part[t] = sum;
  sh.extra[t] = extra;
}
RDMAVIDEO_HOST_DEVICE inline void finer_scan(RateShared& sh) {
  uint64_t total = 0;
  for (int t = 0; t < kRateThreads; ++t) total += sh.part[t];
  uint64_t spent = total;  // each chunk's spending before it, all before it taken
  for (int t = 0; t < kRateThreads; ++t) {
    const uint64_t extra = sh.extra[t];
    sh.extra[t] = spent;
    spent += extra;
  }
  sh.stop = kNoSlice;
}
RDMAVIDEO_HOST_DEVICE inline void finer_stop(uint32_t t, const uint64_t* sizes,
                                             const uint64_t* finer, uint32_t count,
                                             const RateState& s, RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  uint64_t spent = sh.extra[t];
  for (uint32_t i = c.first; i < c.end; ++i) {
    const uint64_t extra = finer_extra(sizes[i], finer[i]);
    if (finer[i] == 0 || spent + extra > s.budget) {
      min_into(&sh.stop, i);
      return;
    }
    spent += extra;
  }
}
RDMAVIDEO_HOST_DEVICE inline void finer_quantisers(uint32_t t, uint32_t count, const RateState& s,
                                                   const RateShared& sh, int32_t* quantisers) {
  const Chunk c = rate_chunk(t, count);
  for (uint32_t i = c.first; i < c.end; ++i) {
    quantisers[i] = s.lo > 1 && i < sh.stop ? s.lo - 1 : s.lo;
  }
}

/// Where each coded slice goes behind the table (2 bytes a slice), where they end, and the
/// first slice over its cap. Phase 1: thread t's sum. Phase 2 (thread 0): each chunk's start,
/// the end. Phase 3: the offsets and the first slice over its cap.
RDMAVIDEO_HOST_DEVICE inline void offsets_sum(uint32_t t, const uint64_t* sizes, uint32_t count,
                                              RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  uint64_t sum = 0;
  for (uint32_t i = c.first; i < c.end; ++i) sum += sizes[i];
  sh.part[t] = sum;
}
RDMAVIDEO_HOST_DEVICE inline void offsets_scan(uint32_t count, RateShared& sh, RateState& s) {
  uint64_t at = 2 * uint64_t{count};
  for (int t = 0; t < kRateThreads; ++t) {
    const uint64_t sum = sh.part[t];
    sh.part[t] = at;
    at += sum;
  }
  s.end = at;
  s.bad = kNoSlice;
}
RDMAVIDEO_HOST_DEVICE inline void offsets_place(uint32_t t, const uint64_t* sizes, uint32_t count,
                                                const RateShared& sh, RateState& s,
                                                uint64_t* offsets) {
  const Chunk c = rate_chunk(t, count);
  uint64_t at = sh.part[t];
  for (uint32_t i = c.first; i < c.end; ++i) {
    if (sizes[i] == 0) min_into(&s.bad, i);
    offsets[i] = at;
    at += sizes[i];
  }
}

/// The quantiser a coding pass uses where it is told by the rate control: the one the search
/// tries next (nothing to code once it has ended: returns 0), the one it found, or the next
/// finer (0 where there is none).
enum QuantiserFrom : int { kSearchQuantiser = -1, kFoundQuantiser = -2, kFinerQuantiser = -3 };
RDMAVIDEO_HOST_DEVICE inline int quantiser_from(int from, const RateState& s) {
  switch (from) {
    case kSearchQuantiser: return s.lo < s.hi ? s.q : 0;
    case kFoundQuantiser: return s.lo;
    case kFinerQuantiser: return s.lo > 1 ? s.lo - 1 : 0;
    default: return from;
  }
}

/// A coded slice from its slot into the frame, and its size into the slice table.
RDMAVIDEO_HOST_DEVICE inline void gather_slice(const uint8_t* slot, uint64_t size,
                                               uint8_t* table_entry, uint8_t* to) {
  for (uint64_t b = 0; b < size; ++b) to[b] = slot[b];
  put16(table_entry, static_cast<uint32_t>(size));
}

}  // namespace rdmavideo::prores
