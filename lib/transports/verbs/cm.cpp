// SPDX-License-Identifier: Apache-2.0
#include "verbs/cm.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "proto/wire.hpp"
#include "rdmavideo/text.hpp"
#include "tcp/socket.hpp"

namespace rdmavideo::verbs {

using std::chrono::milliseconds;

rdma_conn_param connection_params(std::span<const std::byte> private_data) {
  rdma_conn_param param{};
  param.private_data = private_data.empty() ? nullptr : private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.retry_count = 7;
  param.rnr_retry_count = 7;  // 7 = retry forever
  return param;
}

std::vector<std::byte> encode(const ConnectRequest& request) {
  std::vector<std::byte> out;
  proto::WireWriter w(out);
  w.put(request.magic);
  w.put(request.min_version);
  w.put(request.max_version);
  w.put(request.credits_requested);
  w.put(uint32_t{0});
  return out;
}

Result<ConnectRequest> decode_connect_request(std::span<const std::byte> private_data) {
  if (private_data.size() < kConnectRequestBytes) {
    return make_error(ErrorCode::protocol,
                      "ConnectRequest truncated: {} bytes of private data (needs {})",
                      private_data.size(), kConnectRequestBytes);
  }
  // IB and RoCE pad private data with zeros, so a peer that sent none shows up as zeros.
  if (std::all_of(private_data.begin(), private_data.end(),
                  [](std::byte b) { return b == std::byte{0}; })) {
    return make_error(ErrorCode::protocol,
                      "ConnectRequest missing: the connect request's private data is empty (not an "
                      "rdmavideo sender?)");
  }
  proto::WireReader in(private_data.first(kConnectRequestBytes));
  ConnectRequest r;
  r.magic = in.get<uint32_t>();
  r.min_version = in.get<uint16_t>();
  r.max_version = in.get<uint16_t>();
  r.credits_requested = in.get<uint32_t>();
  if (r.magic != proto::kMagic) {
    return make_error(ErrorCode::protocol, "ConnectRequest.magic 0x{:08x} is not RDVF (0x{:08x})",
                      r.magic, proto::kMagic);
  }
  if (r.min_version > r.max_version || r.max_version < proto::kMinVersion ||
      r.min_version > proto::kVersion) {
    return Unexpected(
        Error(ErrorCode::unsupported,
              fmt::format("ConnectRequest versions {}..{} do not overlap this "
                          "receiver's {}..{}",
                          r.min_version, r.max_version, proto::kMinVersion, proto::kVersion)));
  }
  return r;
}

std::string peer_of(rdma_cm_id* id) { return tcp::format_address(rdma_get_peer_addr(id)); }

Result<CmEvent> next_cm_event(rdma_event_channel* channel, milliseconds timeout) {
  pollfd pfd{channel->fd, POLLIN, 0};
  const int rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (rc < 0) {
    if (errno == EINTR) return Unexpected(Error(ErrorCode::system, "interrupted", EINTR));
    return Unexpected(system_error("poll(rdma_cm channel)", errno));
  }
  if (rc == 0) {
    return make_error(ErrorCode::timeout, "no rdma_cm event within {} ms", timeout.count());
  }
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel, &event) != 0) {
    if (errno == EAGAIN) return make_error(ErrorCode::timeout, "no rdma_cm event");
    return Unexpected(system_error("rdma_get_cm_event", errno));
  }
  CmEvent out{event->event, event->status, event->id, {}};
  const auto& conn = event->param.conn;
  if (conn.private_data && conn.private_data_len > 0) {
    const auto* p = static_cast<const std::byte*>(conn.private_data);
    out.private_data.assign(p, p + conn.private_data_len);
  }
  rdma_ack_cm_event(event);
  return out;
}

std::string reject_reason(const CmEvent& event) {
  std::string text;
  for (std::byte b : event.private_data) {
    if (b == std::byte{0}) break;
    text += static_cast<char>(b);
  }
  return printable(text);
}

}  // namespace rdmavideo::verbs
