// SPDX-License-Identifier: Apache-2.0
// The TCP transport: the protocol's messages on one socket, each frame's payload following
// its FrameWritten. The receiver reads payload bytes straight into the ring slot and the
// sender writes them straight from its frame buffer (one kernel copy each way).
#pragma once

#include <memory>

#include "auth/handshake.hpp"
#include "channel/receiver_channel.hpp"
#include "channel/sender_channel.hpp"
#include "tcp/socket.hpp"

namespace rdmavideo::tcp {

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options);
Result<std::unique_ptr<sender::SenderChannel>> connect(const ConnectOptions& options);

/// Reads one message (header, body and, with `mac`, its tag) from a socket.
Result<proto::Message> read_message(Socket& socket, const IoPolicy& policy,
                                    auth::ControlMac* mac = nullptr);
/// Writes one message, sealed with `mac` when given.
Result<void> write_message(Socket& socket, const proto::Message& message, const IoPolicy& policy,
                           auth::ControlMac* mac = nullptr, uint16_t version = proto::kVersion);

}  // namespace rdmavideo::tcp
