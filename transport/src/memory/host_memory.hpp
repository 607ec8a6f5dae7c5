// SPDX-License-Identifier: Apache-2.0
// Page-aligned host memory for ring slots and frame pools, mapped up front (MAP_POPULATE) so
// the first frame does not pay for page faults. Pinning for RDMA registration is the verbs
// layer's business; this is the memory it pins.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "rdmavideo/result.hpp"

namespace rdmavideo::memory {

class HostBuffer {
 public:
  static Result<std::shared_ptr<HostBuffer>> allocate(size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  HostBuffer(std::byte* data, size_t size) : data_(data), size_(size) {}
  std::byte* data_;
  size_t size_;
};

inline constexpr size_t kPageBytes = 4096;
inline size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

}  // namespace rdmavideo::memory
