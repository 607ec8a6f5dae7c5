// SPDX-License-Identifier: Apache-2.0
// What the stand-in CUDA driver (fake_cuda.cpp) did, for tests that load it in-process:
// fake_cuda_counters(), looked up with dlsym.
#pragma once

#include <cstdint>

struct FakeCudaCounters {
  uint64_t uploads;       // copies to device memory
  uint64_t downloads;     // copies from device memory
  uint64_t async_copies;  // of them, queued on a stream
  uint64_t bytes_copied;
  uint64_t allocations_live;  // device allocations not yet freed
  uint64_t pinned_live;       // pinned host allocations not yet freed
  uint64_t flushes;           // cuFlushGPUDirectRDMAWrites calls
  uint64_t dmabuf_exports;
  uint64_t kernel_launches;
};
