// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/frame_lease.hpp"

#include <algorithm>
#include <vector>

namespace rdmavideo {
namespace {

// A host copy holds no slot: the GPU slot it was downloaded from went back at once.
class NoSlot final : public detail::SlotOwner {
 public:
  void release_slot(uint32_t, uint32_t) noexcept override {}
};

const std::shared_ptr<NoSlot>& no_slot() {
  static const auto none = std::make_shared<NoSlot>();
  return none;
}

}  // namespace

Result<FrameLease> FrameLease::to_host() && {
  if (kind_ != memory::MemoryKind::cuda) return std::move(*this);
  return std::move(*this).copied();
}

Result<FrameLease> FrameLease::copied() && {
  auto copy = std::make_shared<std::vector<std::byte>>(data_.size());
  if (kind_ == memory::MemoryKind::cuda) {
    const size_t offset = static_cast<size_t>(data_.data() - gpu_region_->bytes().data());
    if (auto ok = memory::read(*gpu_region_, offset, *copy); !ok) return Unexpected(ok.error());
  } else {
    std::copy(data_.begin(), data_.end(), copy->begin());
  }
  FrameLease host(no_slot(), copy, format_, memory::MemoryKind::host, *copy, info_, latency_ns_);
  release();
  return host;
}

bool FrameLease::holds_slot() const { return owner_ && owner_ != no_slot(); }

std::shared_ptr<cuda::Device> FrameLease::cuda_device() const {
  return gpu_region_ ? gpu_region_->cuda_device() : nullptr;
}

}  // namespace rdmavideo
