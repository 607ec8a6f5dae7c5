// SPDX-License-Identifier: Apache-2.0
// rdma_cm as rdmavideo uses it: the connection parameters of every connect and accept, the
// connect request's private data (checked before anything is allocated), and its events.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"
#include "verbs/handles.hpp"

namespace rdmavideo::verbs {

/// The RC connection parameters every rdmavideo connect and accept uses: one outstanding
/// RDMA READ each way (we issue none), transport retries 7, and RNR retries forever, which is
/// safe because every receive we can cause is pre-posted and the keepalive watchdog
/// (Timeouts.peer) ends a connection that stalls anyway. `private_data` must outlive the call
/// that takes the parameters.
rdma_conn_param connection_params(std::span<const std::byte> private_data = {});

/// The rdma_cm private data of a connect request: checked before anything is allocated.
struct ConnectRequest {
  uint32_t magic = proto::kMagic;
  uint16_t min_version = proto::kMinVersion;
  uint16_t max_version = proto::kVersion;
  uint32_t credits_requested = 0;
};
inline constexpr size_t kConnectRequestBytes = 16;
std::vector<std::byte> encode(const ConnectRequest& request);
/// The error names the field ("ConnectRequest.magic ...") and is sent back as the reject reason.
Result<ConnectRequest> decode_connect_request(std::span<const std::byte> private_data);

/// rdma_cm waits: the next event on `channel` within `timeout`. The event is acked; what is
/// needed from it is copied out.
struct CmEvent {
  rdma_cm_event_type type;
  int status;
  rdma_cm_id* id;  // for CONNECT_REQUEST: the new id, now owned by the caller
  std::vector<std::byte> private_data;
};
Result<CmEvent> next_cm_event(rdma_event_channel* channel, std::chrono::milliseconds timeout);

/// "10.99.0.2:45012" for a cm id's peer address.
std::string peer_of(rdma_cm_id* id);

/// The reason a receiver gave for rejecting a connect (its private data, as text), printable.
std::string reject_reason(const CmEvent& event);

}  // namespace rdmavideo::verbs
