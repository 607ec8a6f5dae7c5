// SPDX-License-Identifier: Apache-2.0
// A build configured without the CUDA toolkit has no kernels: Kernels::shared() says so.
#include "cuda/kernels.hpp"

namespace rdmavideo::cuda::detail {

const unsigned char kKernelImage[] = {0};
const size_t kKernelImageBytes = 0;
const char* const kKernelToolkit = "";
const char* const kKernelSass = "";
const char* const kKernelPtx = "";

}  // namespace rdmavideo::cuda::detail
