// SPDX-License-Identifier: Apache-2.0
// The RDMA verbs transport: frames land in the receiver's ring by one-sided RDMA WRITE, and
// the protocol's messages travel as SENDs on the same RC QP (docs/protocol.md, section 9).
#pragma once

#include <memory>
#include <string>

#include "receiver/channel.hpp"
#include "sender/connection.hpp"

namespace rdmavideo::verbs {

/// Whether this machine has an RDMA device at all (for `auto` and error messages).
bool have_devices();

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options);
Result<std::unique_ptr<sender::SenderConnection>> connect(const ConnectOptions& options);

}  // namespace rdmavideo::verbs
