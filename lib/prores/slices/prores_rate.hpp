// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's rate control, written once for the GPU and the CPU twin: the CPU runs
// it over the slices' sizes with loops, a GPU as kernels of one thread block whose phases (each
// for thread t of kRateThreads, a barrier between them) are these functions, so the CUDA
// stand-in runs the very phases too, thread after thread.
//
// The frame's quantiser is the finest whose slices, all at it, fit the frame's budget (the
// coarsest, where none does), found in three passes that each count every slice at several
// quantisers at once: every 16th (16 to 128), then every other one in the 15 below the finest
// of those that fit, then the one left between. Sizes fall as the quantiser grows, so this is
// what a binary search finds, in three passes of counting instead of seven, each wide enough
// to fill a GPU. Then the next finer quantiser for the first slices, in order, whose extra
// bytes the budget still pays for; the sizes both need were counted by the search.
#pragma once

#include <cstdint>

#include "rdmavideo/host_device.hpp"

namespace rdmavideo::prores {

// The largest quantiser this encoder uses (the format allows up to 224, meaning more).
inline constexpr int kMaxQuantiser = 128;
inline constexpr int kRateThreads = 256;
inline constexpr uint32_t kNoSlice = 0xffffffffu;

/// The search's passes: pass p counts rows [pass_row(p), pass_row(p + 1)) of the sizes (a
/// row: every slice at one quantiser), candidates pass_stride(p) apart.
inline constexpr int kSearchPasses = 3;
inline constexpr int kSizeRows = 16;
inline constexpr int kMostCandidates = 8;
RDMAVIDEO_HOST_DEVICE constexpr int pass_row(int pass) {
  return pass == 0 ? 0 : pass == 1 ? 8 : pass == 2 ? 15 : kSizeRows;
}
RDMAVIDEO_HOST_DEVICE constexpr int pass_stride(int pass) {
  return pass == 0 ? 16 : pass == 1 ? 2 : 1;
}
static_assert(pass_stride(0) * kMostCandidates == kMaxQuantiser);

/// Where the rate control stands for a frame: the quantiser sought is in [lo, hi] (hi fits,
/// or is the coarsest), the pass counted next, the quantiser each row of sizes is counted at
/// (0: none), and once the slices are placed, where they end after the table and the first
/// over its cap.
struct RateState {
  int32_t lo, hi, pass;
  int32_t q[kSizeRows];
  uint32_t bad;
  uint64_t budget;
  uint64_t end;
};

/// The quantisers pass s.pass counts: below hi (at it too before any pass has tried it), from
/// lo on, pass_stride apart.
RDMAVIDEO_HOST_DEVICE inline void rate_candidates(RateState& s) {
  const int stride = pass_stride(s.pass);
  const int most = s.pass == 0 ? s.hi : s.hi - 1;
  for (int r = pass_row(s.pass), j = 1; r < pass_row(s.pass + 1); ++r, ++j) {
    const int q = s.lo + stride * j - 1;
    s.q[r] = q <= most ? q : 0;
  }
}

RDMAVIDEO_HOST_DEVICE inline RateState rate_start(uint64_t budget) {
  RateState s{};
  s.lo = 1;
  s.hi = kMaxQuantiser;
  s.bad = kNoSlice;
  s.budget = budget;
  rate_candidates(s);
  return s;
}

/// A slice's bytes as the search adds them up: one over its cap (size 0) counts so much that
/// no sum with it fits any budget, yet the sum of every slice cannot wrap.
RDMAVIDEO_HOST_DEVICE inline uint64_t rate_bytes(uint64_t size, uint32_t count) {
  return size == 0 ? ~uint64_t{0} / (4 * uint64_t{count} + 4) : size;
}

/// A pass's end, from the slices' total at each of its rows (in order; those of no quantiser
/// are not read): hi becomes the finest candidate that fits, lo the one after the candidate
/// below it, and the next pass's candidates are set.
RDMAVIDEO_HOST_DEVICE inline void rate_pass(RateState& s, const uint64_t* totals) {
  for (int r = pass_row(s.pass); r < pass_row(s.pass + 1); ++r) {
    if (s.q[r] != 0 && totals[r - pass_row(s.pass)] <= s.budget) {
      s.hi = s.q[r];
      break;
    }
  }
  const int below = s.hi - pass_stride(s.pass) + 1;
  s.lo = below > s.lo ? below : s.lo;
  if (++s.pass < kSearchPasses) rate_candidates(s);
}

/// The row counted at `q`, or -1.
RDMAVIDEO_HOST_DEVICE inline int rate_row(const RateState& s, int q) {
  for (int r = 0; r < kSizeRows; ++r) {
    if (q > 0 && s.q[r] == q) return r;
  }
  return -1;
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
  uint64_t part[kMostCandidates][kRateThreads];  // each thread's sums over its chunk
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

/// A pass of the search, from `sizes` (kSizeRows rows of `count`). Phase 1: thread t's sums
/// at each of the pass's rows. Phase 2 (thread 0): the totals, and the pass's end.
RDMAVIDEO_HOST_DEVICE inline void search_sums(uint32_t t, const uint64_t* sizes, uint32_t count,
                                              const RateState& s, RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  for (int r = pass_row(s.pass); r < pass_row(s.pass + 1); ++r) {
    uint64_t sum = 0;
    if (s.q[r] != 0) {
      const uint64_t* row = sizes + static_cast<uint64_t>(r) * count;
      for (uint32_t i = c.first; i < c.end; ++i) sum += rate_bytes(row[i], count);
    }
    sh.part[r - pass_row(s.pass)][t] = sum;
  }
}
RDMAVIDEO_HOST_DEVICE inline void search_pass(RateShared& sh, RateState& s) {
  uint64_t totals[kMostCandidates];
  for (int j = 0; j < pass_row(s.pass + 1) - pass_row(s.pass); ++j) {
    totals[j] = 0;
    for (int t = 0; t < kRateThreads; ++t) totals[j] += sh.part[j][t];
  }
  rate_pass(s, totals);
}

/// Once the search has ended: each slice's quantiser (hi - 1 for the first slices, in order,
/// whose extra bytes at hi - 1 the budget still pays for, and none after a slice that does not
/// fit its cap at hi - 1; hi for the rest), its size at it, its place behind the table (2
/// bytes a slice), where they end, and the first over its cap. `found`: the sizes at hi;
/// `finer`: at hi - 1 (none where hi is 1). Phase 1: thread t's sums at hi and of the extra
/// bytes. Phase 2 (thread 0): each chunk's spending before it. Phase 3: the first slice not
/// paid for. Phase 4: the quantisers and sizes. Phase 5 (thread 0): each chunk's start, the
/// end. Phase 6: the places and the first slice over its cap.
RDMAVIDEO_HOST_DEVICE inline uint64_t finer_extra(uint64_t size, uint64_t finer) {
  return finer > size ? finer - size : 0;
}
RDMAVIDEO_HOST_DEVICE inline void finer_sums(uint32_t t, const uint64_t* found,
                                             const uint64_t* finer, uint32_t count,
                                             RateShared& sh) {
  const Chunk c = rate_chunk(t, count);
  uint64_t sum = 0, extra = 0;
  for (uint32_t i = c.first; i < c.end; ++i) {
    sum += rate_bytes(found[i], count);
    if (finer) extra += finer_extra(found[i], finer[i]);
  }
  sh.part[0][t] = sum;
  sh.extra[t] = extra;
}
RDMAVIDEO_HOST_DEVICE inline void finer_scan(const uint64_t* finer, RateShared& sh) {
  uint64_t total = 0;
  for (int t = 0; t < kRateThreads; ++t) total += sh.part[0][t];
  uint64_t spent = total;  // each chunk's spending before it, all before it taken
  for (int t = 0; t < kRateThreads; ++t) {
    const uint64_t extra = sh.extra[t];
    sh.extra[t] = spent;
    spent += extra;
  }
  sh.stop = finer ? kNoSlice : 0;
}
RDMAVIDEO_HOST_DEVICE inline void finer_stop(uint32_t t, const uint64_t* found,
                                             const uint64_t* finer, uint32_t count,
                                             const RateState& s, RateShared& sh) {
  if (!finer) return;
  const Chunk c = rate_chunk(t, count);
  uint64_t spent = sh.extra[t];
  for (uint32_t i = c.first; i < c.end; ++i) {
    const uint64_t extra = finer_extra(found[i], finer[i]);
    if (finer[i] == 0 || spent + extra > s.budget) {
      min_into(&sh.stop, i);
      return;
    }
    spent += extra;
  }
}
RDMAVIDEO_HOST_DEVICE inline void place_sums(uint32_t t, const uint64_t* found,
                                             const uint64_t* finer, uint32_t count,
                                             const RateState& s, RateShared& sh,
                                             int32_t* quantisers, uint64_t* sizes) {
  const Chunk c = rate_chunk(t, count);
  uint64_t sum = 0;
  for (uint32_t i = c.first; i < c.end; ++i) {
    const bool finer_here = i < sh.stop;
    quantisers[i] = finer_here ? s.hi - 1 : s.hi;
    sizes[i] = finer_here ? finer[i] : found[i];
    sum += sizes[i];
  }
  sh.part[0][t] = sum;
}
RDMAVIDEO_HOST_DEVICE inline void offsets_scan(uint32_t count, RateShared& sh, RateState& s) {
  uint64_t at = 2 * uint64_t{count};
  for (int t = 0; t < kRateThreads; ++t) {
    const uint64_t sum = sh.part[0][t];
    sh.part[0][t] = at;
    at += sum;
  }
  s.end = at;
  s.bad = kNoSlice;
}
RDMAVIDEO_HOST_DEVICE inline void offsets_place(uint32_t t, const uint64_t* sizes, uint32_t count,
                                                const RateShared& sh, RateState& s,
                                                uint64_t* offsets) {
  const Chunk c = rate_chunk(t, count);
  uint64_t at = sh.part[0][t];
  for (uint32_t i = c.first; i < c.end; ++i) {
    if (sizes[i] == 0) min_into(&s.bad, i);
    offsets[i] = at;
    at += sizes[i];
  }
}

}  // namespace rdmavideo::prores
