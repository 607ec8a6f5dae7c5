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

// The encoder's passes (slices/prores_slices.hpp). The slices' coefficients are made once a frame,
// a thread block a slice and a thread an 8x8 block, interleaved (coefficient k of slice i at
// k x count + i) so that the coding threads of a warp read neighbouring words. Then each slice is
// coded at a quantiser (a thread a slice) into a slot of its own: while the rate control searches,
// at the one it tries next, which a one-block kernel then moves on from the slices' total, all on
// the GPU, the host waiting for none of it; then at the quantiser each slice is given. The coded
// slices are gathered behind the picture's slice table at offsets a one-block prefix sum gives.

namespace prores = rdmavideo::prores;

extern "C" __global__ void rdmavideo_prores_dct(prores::PlanesRef picture,
                                                const prores::SliceAt* slices, unsigned count,
                                                int* coefficients) {
  const unsigned i = blockIdx.x;
  if (i >= count) return;
  const prores::SliceAt s = slices[i];
  if (threadIdx.x >= s.mb_count * 8) return;
  prores::slice_block_dct(picture, s.mb_x, s.mb_y, s.mb_count, threadIdx.x,
                          prores::Coefficients{coefficients + i, count});
}

// Slice i at quantisers[i] where `quantiser` is 0, at `quantiser` where it is above 0, or at
// the one the rate control says (prores::QuantiserFrom; nothing where it says none), into its
// slot (slot_bytes apart; no slots: counted only); its size (0: over its cap) into sizes[i].
extern "C" __global__ void rdmavideo_prores_code(
    const int* coefficients, const prores::SliceAt* slices, unsigned count,
    const unsigned char* matrix, const int* quantisers, int quantiser, unsigned char* slots,
    unsigned long long slot_bytes, unsigned long long* sizes, const prores::RateState* rate) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int q = quantiser == 0  ? quantisers[i]
                : quantiser > 0 ? quantiser
                                : prores::quantiser_from(quantiser, *rate);
  if (q == 0) return;
  const prores::SliceAt s = slices[i];
  sizes[i] =
      prores::code_slice(prores::ConstCoefficients{coefficients + i, count}, s.mb_count, matrix, q,
                         slots ? slots + i * slot_bytes : nullptr, prores::slice_cap(s.mb_count));
}

// One step of the search for the frame's quantiser, from the slices' sizes at the one tried.
// One block of prores::kRateThreads threads.
extern "C" __global__ void rdmavideo_prores_search(const uint64_t* sizes, unsigned count,
                                                   prores::RateState* rate) {
  __shared__ prores::RateShared shared;
  if (rate->lo >= rate->hi) return;  // found: every thread reads the same
  prores::search_sum(threadIdx.x, sizes, count, shared);
  __syncthreads();
  if (threadIdx.x == 0) prores::search_step(shared, *rate);
}

// Each slice's quantiser once the search has ended, from the sizes at it and at the next finer.
extern "C" __global__ void rdmavideo_prores_finer(const uint64_t* sizes, const uint64_t* finer,
                                                  unsigned count, const prores::RateState* rate,
                                                  int* quantisers) {
  __shared__ prores::RateShared shared;
  const unsigned t = threadIdx.x;
  prores::finer_sums(t, sizes, finer, count, shared);
  __syncthreads();
  if (t == 0) prores::finer_scan(shared);
  __syncthreads();
  prores::finer_stop(t, sizes, finer, count, *rate, shared);
  __syncthreads();
  prores::finer_quantisers(t, count, *rate, shared, quantisers);
}

// Each coded slice's offset behind the table, where they end, and the first over its cap.
extern "C" __global__ void rdmavideo_prores_offsets(const uint64_t* sizes, unsigned count,
                                                    prores::RateState* rate, uint64_t* offsets) {
  __shared__ prores::RateShared shared;
  const unsigned t = threadIdx.x;
  prores::offsets_sum(t, sizes, count, shared);
  __syncthreads();
  if (t == 0) prores::offsets_scan(count, shared, *rate);
  __syncthreads();
  prores::offsets_place(t, sizes, count, shared, *rate, offsets);
}

// Slice i's bytes from its slot to offsets[i] after `frame_slices`, and its size into the
// slice table (big-endian 16 bits).
extern "C" __global__ void rdmavideo_prores_gather(const unsigned char* slots,
                                                   unsigned long long slot_bytes,
                                                   const unsigned long long* sizes,
                                                   const unsigned long long* offsets,
                                                   unsigned count, unsigned char* table,
                                                   unsigned char* frame_slices) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  prores::gather_slice(slots + i * slot_bytes, sizes[i], table + 2 * i, frame_slices + offsets[i]);
}
