// SPDX-License-Identifier: Apache-2.0
// The library's CUDA kernels. Built with nvcc into a fat binary (SASS for each GPU generation
// the toolkit supports, PTX for later ones) that is embedded in the library and loaded
// through the driver API (cuModuleLoadData), so nothing links the CUDA runtime and one
// binary still runs where there is no GPU. Entry points are extern "C" to keep their names
// plain for cuModuleGetFunction.

#include "composite_pixels.hpp"
#include "convert_pixels.hpp"
#include "prores_slices.hpp"

// The first byte at or after `from` where `a` and `b` differ, in [0, bytes), folded into
// `*first` with atomicMin; `*first` is left as it was when they are equal. Both buffers
// start 16-byte aligned (slots and device allocations are 64 KiB aligned); the words are
// compared 16 bytes at a time, the last partial word byte by byte.
extern "C" __global__ void rdmavideo_first_difference(const unsigned char* a,
                                                      const unsigned char* b,
                                                      unsigned long long from,
                                                      unsigned long long bytes,
                                                      unsigned long long* first) {
  const unsigned long long words = bytes / 16;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const uint4* wa = reinterpret_cast<const uint4*>(a);
  const uint4* wb = reinterpret_cast<const uint4*>(b);
  for (unsigned long long w =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       w < words; w += stride) {
    if ((w + 1) * 16 <= from) continue;
    const uint4 x = wa[w];
    const uint4 y = wb[w];
    if (x.x == y.x && x.y == y.y && x.z == y.z && x.w == y.w) continue;
    for (unsigned long long at = w * 16; at < (w + 1) * 16; ++at) {
      if (at >= from && a[at] != b[at]) {
        atomicMin(first, at);
        break;
      }
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (unsigned long long at = words * 16; at < bytes; ++at) {
      if (at >= from && a[at] != b[at]) {
        atomicMin(first, at);
        break;
      }
    }
  }
}

// ---- Format conversions for encoders (NVENC) that do not take the stream's format. One
// thread a block (convert_pixels.hpp); a 2D grid over pixel pairs and row pairs.

namespace pixels = rdmavideo::cuda::pixels;

extern "C" __global__ void rdmavideo_packed422_to_nv12(const unsigned char* src,
                                                       unsigned long long src_pitch,
                                                       unsigned char* y, unsigned long long y_pitch,
                                                       unsigned char* uv,
                                                       unsigned long long uv_pitch, unsigned width,
                                                       unsigned height, int order) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row2 = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= width || row2 * 2 >= height) return;
  pixels::packed422_to_nv12(src, src_pitch, y, y_pitch, uv, uv_pitch, width, height, pair, row2,
                            order);
}

extern "C" __global__ void rdmavideo_yuv422p10_to_p010(
    const unsigned char* y_in, unsigned long long y_in_pitch, const unsigned char* cb,
    unsigned long long cb_pitch, const unsigned char* cr, unsigned long long cr_pitch,
    unsigned char* y, unsigned long long y_pitch, unsigned char* uv, unsigned long long uv_pitch,
    unsigned width, unsigned height) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row2 = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= width || row2 * 2 >= height) return;
  pixels::yuv422p10_to_p010(y_in, y_in_pitch, cb, cb_pitch, cr, cr_pitch, y, y_pitch, uv, uv_pitch,
                            width, height, pair, row2);
}

extern "C" __global__ void rdmavideo_rgb24_to_rgb0(const unsigned char* src,
                                                   unsigned long long src_pitch, unsigned char* dst,
                                                   unsigned long long dst_pitch, unsigned width,
                                                   unsigned height) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || row >= height) return;
  pixels::rgb24_to_rgb0(src, src_pitch, dst, dst_pitch, x, row);
}

// The ProRes encoder's 10-bit 4:2:2 picture from what a stream carries: a thread a pixel pair
// of a row.
extern "C" __global__ void rdmavideo_to_yuv422p10(int input, pixels::Planes3 planes, unsigned width,
                                                  unsigned height) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= width || row >= height) return;
  pixels::to_yuv422p10(input, planes, width, height, pair, row);
}

// ---- The receiver's canvas in GPU memory (composite_pixels.hpp): a thread a block of two
// canvas pixels in two rows of the area; a 2D grid over the area's pixel pairs and row pairs.

extern "C" __global__ void rdmavideo_place_nv12(pixels::Source src, pixels::Target dst,
                                                pixels::Area area) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row2 = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= static_cast<unsigned>(area.width) ||
      row2 * 2 >= static_cast<unsigned>(area.height))
    return;
  pixels::place_nv12(src, dst, area, pair, row2);
}

extern "C" __global__ void rdmavideo_fill_nv12(pixels::Target dst, pixels::Area area,
                                               pixels::Yuv colour) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row2 = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= static_cast<unsigned>(area.width) ||
      row2 * 2 >= static_cast<unsigned>(area.height))
    return;
  pixels::fill_nv12(dst, area, colour, pair, row2);
}

extern "C" __global__ void rdmavideo_gray_nv12(const unsigned char* luma, unsigned long long pitch,
                                               pixels::Target dst, pixels::Area area) {
  const unsigned pair = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned row2 = blockIdx.y * blockDim.y + threadIdx.y;
  if (pair * 2 >= static_cast<unsigned>(area.width) ||
      row2 * 2 >= static_cast<unsigned>(area.height))
    return;
  pixels::gray_nv12(luma, pitch, dst, area, pair, row2);
}

// ---- The ProRes encoder (prores_slices.hpp). The slices' coefficients are made once a frame,
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
