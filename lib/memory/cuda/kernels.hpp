// SPDX-License-Identifier: Apache-2.0
// The fat binary of kernels.cu as nvcc built it, embedded at build time; empty in a build
// configured without the CUDA toolkit (kernels_none.cpp).
#pragma once

#include <cstddef>

namespace rdmavideo::cuda::detail {

extern const unsigned char kKernelImage[];
extern const size_t kKernelImageBytes;

}  // namespace rdmavideo::cuda::detail
