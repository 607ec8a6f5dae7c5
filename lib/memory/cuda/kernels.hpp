// SPDX-License-Identifier: Apache-2.0
// The fat binary of kernels.cu as nvcc built it, embedded at build time; empty in a build
// configured without the CUDA toolkit (kernels_none.cpp).
#pragma once

#include <cstddef>

namespace rdmavideo::cuda::detail {

extern const unsigned char kKernelImage[];
extern const size_t kKernelImageBytes;
extern const char* const kKernelToolkit;  // the nvcc that built it: "13.0"
extern const char* const kKernelSass;     // the architectures it has SASS for: "75,80,86,..."
extern const char* const kKernelPtx;      // and PTX for: "75,120"

}  // namespace rdmavideo::cuda::detail
