// SPDX-License-Identifier: Apache-2.0
#include "gpu/stager.hpp"

#include "rdmavideo/memory.hpp"

namespace rdmavideo::gpu {

Result<std::unique_ptr<Stager>> Stager::create(std::shared_ptr<cuda::Device> device,
                                               size_t slot_bytes, uint32_t slots) {
  const size_t stride = memory::round_up(std::max<size_t>(slot_bytes, 1), memory::kGpuPageBytes);
  auto memory = device->allocate_pinned(stride * slots);
  if (!memory) return Unexpected(memory.error());
  auto stream = device->create_stream();
  if (!stream) return Unexpected(stream.error());
  return std::unique_ptr<Stager>(new Stager(std::move(device), std::move(*stream),
                                            std::move(*memory), slot_bytes, stride, slots));
}

Result<std::span<const std::byte>> Stager::download(uint32_t index, cuda::DevicePtr from,
                                                    size_t bytes) {
  const auto to = slot(index).first(bytes);
  if (auto ok = stream_->download_async(to, from); !ok) return Unexpected(ok.error());
  auto ticket = stream_->mark();
  if (!ticket) return Unexpected(ticket.error());
  if (auto ok = stream_->wait(*ticket); !ok) return Unexpected(ok.error());
  return std::span<const std::byte>(to);
}

}  // namespace rdmavideo::gpu
