// SPDX-License-Identifier: Apache-2.0
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {

Result<proto::Message> read_message(Socket& socket, const IoPolicy& policy, auth::ControlMac* mac) {
  std::array<std::byte, proto::kHeaderBytes> header_bytes;
  if (auto ok = socket.read_exact(header_bytes, policy, "message header"); !ok) {
    return Unexpected(ok.error());
  }
  auto header = proto::decode_header(header_bytes);
  if (!header) return Unexpected(header.error());
  // The body and, on an authenticated connection, the tag after it.
  std::vector<std::byte> rest(header->length + auth::tag_bytes(mac));
  if (auto ok = socket.read_exact(rest, policy, proto::to_string(header->type)); !ok) {
    return Unexpected(ok.error());
  }
  if (!mac) return proto::decode(*header, rest);
  std::vector<std::byte> whole(header_bytes.begin(), header_bytes.end());
  whole.insert(whole.end(), rest.begin(), rest.end());
  return auth::decode_sealed(whole, mac);
}

Result<void> write_message(Socket& socket, const proto::Message& message, const IoPolicy& policy,
                           auth::ControlMac* mac, uint16_t version) {
  std::vector<std::byte> bytes;
  auth::encode_sealed(message, bytes, mac, version);
  return socket.write_all(bytes, policy, proto::to_string(proto::type_of(message)));
}

}  // namespace rdmavideo::tcp
