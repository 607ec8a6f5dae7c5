// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/frame_lease.hpp"

#include <vector>

namespace rdmavideo {
namespace {

// A host copy holds no slot: the GPU slot it was downloaded from went back at once.
class NoSlot final : public detail::SlotOwner {
 public:
  void release_slot(uint32_t, uint32_t) noexcept override {}
};

}  // namespace

Result<FrameLease> FrameLease::to_host() && {
  if (kind_ != memory::MemoryKind::cuda) return std::move(*this);
  auto copy = std::make_shared<std::vector<std::byte>>(data_.size());
  const size_t offset = static_cast<size_t>(data_.data() - gpu_region_->bytes().data());
  if (auto ok = memory::read(*gpu_region_, offset, *copy); !ok) return Unexpected(ok.error());
  static const auto no_slot = std::make_shared<NoSlot>();
  FrameLease host(no_slot, copy, format_, memory::MemoryKind::host, *copy, info_, latency_ns_);
  release();
  return host;
}

std::shared_ptr<cuda::Device> FrameLease::cuda_device() const {
  return gpu_region_ ? gpu_region_->cuda_device() : nullptr;
}

}  // namespace rdmavideo
