// SPDX-License-Identifier: Apache-2.0
// The sender's staged rung of the GPU ladder: pinned host slots between GPU memory and a
// transport that cannot read the GPU (TCP; verbs without dma-buf or peer memory). (A
// receiver stages through its page-locked host ring instead.)
//
// The slots are one page-locked allocation (cuMemHostAlloc), registered with the connection
// once, so a transfer reads or writes them as it would a host ring. Copies run on the
// stager's own CUDA stream. Double buffering comes from the slots: while one slot's frame
// is on the wire (an RDMA WRITE in flight), the next frame is copied into the other, so a
// copy overlaps a transfer; the caller keeps a slot out of use while a transfer reads it.
//
// One thread uses a Stager at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "rdmavideo/cuda.hpp"

namespace rdmavideo::gpu {

class Stager {
 public:
  static Result<std::unique_ptr<Stager>> create(std::shared_ptr<cuda::Device> device,
                                                size_t slot_bytes, uint32_t slots = 2);

  uint32_t slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  std::span<std::byte> slot(uint32_t index) const {
    return {memory_.get() + index * stride_, slot_bytes_};
  }
  /// Every slot, for registering them at once; `keep()` owns the memory.
  std::span<std::byte> all() const { return {memory_.get(), stride_ * slots_}; }
  std::shared_ptr<const void> keep() const { return memory_; }
  /// The slot to use next, round robin.
  uint32_t next() { return next_++ % slots_; }

  /// Copies `bytes` at device address `from` into slot `index`, and waits for the copy.
  Result<std::span<const std::byte>> download(uint32_t index, cuda::DevicePtr from, size_t bytes);

 private:
  Stager(std::shared_ptr<cuda::Device> device, std::unique_ptr<cuda::Stream> stream,
         std::shared_ptr<std::byte> memory, size_t slot_bytes, size_t stride, uint32_t slots)
      : device_(std::move(device)),
        stream_(std::move(stream)),
        memory_(std::move(memory)),
        slot_bytes_(slot_bytes),
        stride_(stride),
        slots_(slots) {}
  std::shared_ptr<cuda::Device> device_;
  std::unique_ptr<cuda::Stream> stream_;
  std::shared_ptr<std::byte> memory_;
  size_t slot_bytes_;
  size_t stride_;
  uint32_t slots_;
  uint32_t next_ = 0;
};

}  // namespace rdmavideo::gpu
