// SPDX-License-Identifier: Apache-2.0
// Bytes that end where a page no one may read begins: a read past their end faults at once,
// wherever an allocator would have put them, as it does past a frame that ends where its
// memory does (a page-sized frame in a ring's last slot). For tests of code that hands frames
// to libraries which read in whole vectors (libswscale).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <new>
#include <span>

namespace rdmavideo::testing {

class Guarded {
 public:
  explicit Guarded(size_t bytes)
      : bytes_(bytes), page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    mapped_ = (bytes + page_ - 1) / page_ * page_ + page_;
    void* at = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<std::byte*>(at);
    if (mprotect(base_ + mapped_ - page_, page_, PROT_NONE) != 0) throw std::bad_alloc();
  }
  ~Guarded() { munmap(base_, mapped_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  /// The bytes, their last one just before the guard page.
  std::span<std::byte> bytes() const { return {base_ + mapped_ - page_ - bytes_, bytes_}; }

 private:
  size_t bytes_;
  size_t page_;
  size_t mapped_ = 0;
  std::byte* base_ = nullptr;
};

}  // namespace rdmavideo::testing
