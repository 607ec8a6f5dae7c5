// SPDX-License-Identifier: Apache-2.0
// The RDMA verbs transport: frames land in the receiver's ring by one-sided RDMA WRITE, and
// the protocol's messages travel as SENDs on the same RC QP (docs/protocol.md, section 9).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "rdmavideo/gpu_path.hpp"
#include "receiver/channel.hpp"
#include "sender/connection.hpp"

namespace rdmavideo::verbs {

/// Whether this machine has an RDMA device at all (for `auto` and error messages).
bool have_devices();

/// Whether the device of `pd` imports dma-bufs (the GPU ladder's first rung).
gpu::DmabufProbe probe_dmabuf(ibv_pd* pd);

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options);
Result<std::unique_ptr<sender::SenderConnection>> connect(const ConnectOptions& options);

}  // namespace rdmavideo::verbs
