// SPDX-License-Identifier: Apache-2.0
// RDMAVIDEO_HOST_DEVICE marks the arithmetic a room's kernels share with its CPU twin or its
// tests: compiled for both where nvcc compiles it, plain C++ everywhere else.
#pragma once

#if defined(__CUDACC__)
#define RDMAVIDEO_HOST_DEVICE __host__ __device__
#else
#define RDMAVIDEO_HOST_DEVICE
#endif
