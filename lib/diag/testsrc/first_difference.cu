// SPDX-License-Identifier: Apache-2.0
// The frame verifier's kernel, built by nvcc into a fat binary (cmake/CudaKernels.cmake) that is
// embedded in the diag layer and loaded through the driver API (cuda::Module), so nothing links the
// CUDA runtime and one binary still runs where there is no GPU. Entry points are extern "C" to keep
// their names plain for cuModuleGetFunction.

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
