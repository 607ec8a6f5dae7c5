// SPDX-License-Identifier: Apache-2.0
#include "memory/host_memory.hpp"

#include <sys/mman.h>

#include <cerrno>

#include "rdmavideo/log.hpp"

namespace rdmavideo::memory {

Result<std::shared_ptr<HostBuffer>> HostBuffer::allocate(size_t bytes) {
  bytes = round_up(bytes, kPageBytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return Unexpected(system_error(fmt::format("mmap of {} MiB for frame buffers", bytes >> 20),
                                   errno)
                          .context("memory"));
  }
  return std::shared_ptr<HostBuffer>(new HostBuffer(static_cast<std::byte*>(p), bytes));
}

HostBuffer::~HostBuffer() {
  if (munmap(data_, size_) != 0) {
    log().warn("munmap of {} bytes at {} failed: errno {}", size_, static_cast<void*>(data_), errno);
  }
}

}  // namespace rdmavideo::memory
