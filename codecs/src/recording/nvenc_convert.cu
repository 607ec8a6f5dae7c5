// SPDX-License-Identifier: Apache-2.0
// The conversions into what NVENC takes from GPU memory, built by nvcc into a fat binary
// (cmake/CudaKernels.cmake) that is embedded in the codecs library and loaded through the driver
// API (cuda::Module), so nothing links the CUDA runtime and one binary still runs where there is no
// GPU. Entry points are extern "C" to keep their names plain for cuModuleGetFunction.

#include "nvenc_pixels.hpp"

// Format conversions for NVENC where it does not take the stream's format. One thread a
// block (nvenc_pixels.hpp); a 2D grid over pixel pairs and row pairs.

namespace pixels = rdmavideo::av::nvenc;

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
