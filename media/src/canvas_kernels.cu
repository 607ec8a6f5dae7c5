// SPDX-License-Identifier: Apache-2.0
// The GPU canvas's kernels, built by nvcc into a fat binary (cmake/CudaKernels.cmake) that is
// embedded in the media library and loaded through the driver API (cuda::Module), so nothing links
// the CUDA runtime and one binary still runs where there is no GPU. Entry points are extern "C" to
// keep their names plain for cuModuleGetFunction.

#include "canvas_pixels.hpp"

namespace pixels = rdmavideo::media::canvas;

// The receiver's canvas in GPU memory (canvas_pixels.hpp): a thread a block of two
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
