// SPDX-License-Identifier: Apache-2.0
// The RDMA verbs transport: frames land in the receiver's ring by one-sided RDMA WRITE, and
// the protocol's messages travel as SENDs on the same RC QP (docs/protocol.md, section 9).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "channel/receiver_channel.hpp"
#include "channel/sender_channel.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "verbs/handles.hpp"

namespace rdmavideo::verbs {

/// Whether this machine has an RDMA device at all (for `auto` and error messages).
bool have_devices();

class Link;

/// Whether the device of `pd` imports dma-bufs (the GPU ladder's first rung).
gpu::DmabufProbe probe_dmabuf(ibv_pd* pd);
/// What a connection tells the GPU ladder: its device's dma-buf import, nvidia-peermem.
gpu::PathFacts gpu_facts(const Link& link);
/// Registers GPU memory in the link's PD by a direct rung (dmabuf or peermem); the MR's
/// addr is the device address.
Result<UniqueMr> register_gpu(const Link& link, std::span<const std::byte> memory, gpu::Path path,
                              const cuda::Device& device, int access);

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options);
Result<std::unique_ptr<sender::SenderChannel>> connect(const ConnectOptions& options);

}  // namespace rdmavideo::verbs
