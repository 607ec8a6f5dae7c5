// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's kernels, built by nvcc into a fat binary (cmake/CudaKernels.cmake) that is
// embedded in the prores layer and loaded through the driver API (cuda::Module), so nothing links
// the CUDA runtime and one binary still runs where there is no GPU. Entry points are extern "C" to
// keep their names plain for cuModuleGetFunction.

#include "gpu/picture422.hpp"
#include "slices/prores_slices.hpp"

namespace input = rdmavideo::prores::input;

// The ProRes encoder's 10-bit 4:2:2 picture from what a stream carries: a thread a pixel pair
// of a row.
extern "C" __global__ void rdmavideo_to_yuv422p10(int input, input::Planes3 planes, unsigned width,
                                                  unsigned height) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= width || row >= height) return;
  input::to_yuv422p10(input, planes, width, height, pair, row);
}

// The encoder's passes (slices/prores_slices.hpp, slices/prores_rate.hpp). The slices'
// coefficients are made once a frame, a thread block a slice and a thread an 8x8 block, 16 bits
// each in coding order. Then the rate control's three passes each count every slice at up to
// eight quantisers at once (a thread block a slice and quantiser, a thread 32 coefficients,
// their codes' lengths combined by a fold over the chunks' summaries), a one-block kernel
// ending each pass from the slices' totals; a one-block kernel gives each slice its quantiser
// and its place; and every slice is coded at its quantiser by a block of threads, each writing
// its chunk's codes at the place the fold gave it, and copied to its final place behind the
// slice table. All on one stream, the host waiting for none of it.

namespace prores = rdmavideo::prores;

extern "C" __global__ void rdmavideo_prores_dct(prores::PlanesRef picture,
                                                const prores::SliceAt* slices, unsigned count,
                                                short* coefficients) {
  const unsigned i = blockIdx.x;
  if (i >= count) return;
  const prores::SliceAt s = slices[i];
  if (threadIdx.x >= s.mb_count * 8) return;
  prores::slice_block_dct(picture, s.mb_x, s.mb_y, s.mb_count, threadIdx.x,
                          coefficients + size_t{i} * prores::kSliceCoefficients);
}

// A slice's phases up to its fold (slices/prores_slices.hpp) at quantiser `q`, by thread t of
// the block, a barrier after each: then its size and every chunk's place are known.
__device__ void fold_slice(unsigned t, const short* at, unsigned mb_count,
                           const unsigned char* matrix, int q, prores::SliceShared& shared) {
  prores::slice_steps(t, matrix, q, shared);
  __syncthreads();
  prores::slice_summarise(t, at, mb_count, shared);
  __syncthreads();
  prores::slice_fold(t, mb_count, shared);
  __syncthreads();
}

// Slice blockIdx.x's size at the quantiser of row first_row + blockIdx.y of the rate
// control's state (none where it has none) into that row of `sizes` (0: over its cap).
// prores::kSliceThreads threads.
extern "C" __global__ void rdmavideo_prores_count(const short* coefficients,
                                                  const prores::SliceAt* slices, unsigned count,
                                                  const unsigned char* matrix,
                                                  const prores::RateState* rate, int first_row,
                                                  unsigned long long* sizes) {
  __shared__ prores::SliceShared shared;
  const unsigned i = blockIdx.x, t = threadIdx.x;
  const int row = first_row + static_cast<int>(blockIdx.y);
  const int q = rate->q[row];  // the same for every thread of the block
  if (i >= count || q == 0) return;
  const unsigned mb_count = slices[i].mb_count;
  fold_slice(t, coefficients + size_t{i} * prores::kSliceCoefficients, mb_count, matrix, q, shared);
  if (t == 0)
    sizes[size_t{static_cast<unsigned>(row)} * count + i] = prores::slice_size(mb_count, shared);
}

// A pass of the search for the frame's quantiser ended from the slices' totals at its rows.
// One block of prores::kRateThreads threads.
extern "C" __global__ void rdmavideo_prores_search(const uint64_t* sizes, unsigned count,
                                                   prores::RateState* rate) {
  __shared__ prores::RateShared shared;
  if (rate->pass >= prores::kSearchPasses) return;  // every thread reads the same
  prores::search_sums(threadIdx.x, sizes, count, *rate, shared);
  __syncthreads();
  if (threadIdx.x == 0) prores::search_pass(shared, *rate);
}

// Once the search has ended: each slice's quantiser, its size at it and its place behind the
// table, where the slices end, and the first over its cap. One block of kRateThreads threads.
extern "C" __global__ void rdmavideo_prores_place(const uint64_t* sizes, unsigned count,
                                                  prores::RateState* rate, int* quantisers,
                                                  uint64_t* chosen, uint64_t* offsets) {
  __shared__ prores::RateShared shared;
  const unsigned t = threadIdx.x;
  const prores::RateState s = *rate;
  const int found_row = prores::rate_row(s, s.hi), finer_row = prores::rate_row(s, s.hi - 1);
  const uint64_t* found = sizes + size_t{static_cast<unsigned>(found_row)} * count;
  const uint64_t* finer =
      finer_row < 0 ? nullptr : sizes + size_t{static_cast<unsigned>(finer_row)} * count;
  prores::finer_sums(t, found, finer, count, shared);
  __syncthreads();
  if (t == 0) prores::finer_scan(finer, shared);
  __syncthreads();
  prores::finer_stop(t, found, finer, count, s, shared);
  __syncthreads();
  prores::place_sums(t, found, finer, count, s, shared, quantisers, chosen);
  __syncthreads();
  if (t == 0) prores::offsets_scan(count, shared, *rate);
  __syncthreads();
  prores::offsets_place(t, chosen, count, shared, *rate, offsets);
}

// Slice blockIdx.x coded at its quantiser into `frame_slices` + offsets[i], and its size into
// the slice table (big-endian 16 bits). prores::kSliceThreads threads.
extern "C" __global__ void rdmavideo_prores_write(const short* coefficients,
                                                  const prores::SliceAt* slices, unsigned count,
                                                  const unsigned char* matrix,
                                                  const int* quantisers, const uint64_t* chosen,
                                                  const uint64_t* offsets, unsigned char* table,
                                                  unsigned char* frame_slices) {
  __shared__ prores::SliceShared shared;
  __shared__ uint32_t words[prores::kSliceWords];
  const unsigned i = blockIdx.x, t = threadIdx.x;
  if (i >= count) return;
  const uint64_t size = chosen[i];
  if (size == 0) return;  // over its cap: the host says so
  const unsigned mb_count = slices[i].mb_count;
  const int q = quantisers[i];
  const short* at = coefficients + size_t{i} * prores::kSliceCoefficients;
  for (uint32_t w = t; w < (size + 3) / 4; w += blockDim.x) words[w] = 0;
  fold_slice(t, at, mb_count, matrix, q, shared);  // its barriers order the zeros too
  prores::slice_codes(t, at, mb_count, q, shared, words);
  __syncthreads();
  unsigned char* to = frame_slices + offsets[i];
  for (uint32_t b = t; b < size; b += blockDim.x) to[b] = prores::placed_byte(words, b);
  if (t == 0) prores::put16(table + 2 * i, static_cast<uint32_t>(size));
}
