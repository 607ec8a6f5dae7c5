// SPDX-License-Identifier: Apache-2.0
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {

Result<proto::Message> read_message(Socket& socket, const IoPolicy& policy) {
  std::array<std::byte, proto::kHeaderBytes> header_bytes;
  if (auto ok = socket.read_exact(header_bytes, policy, "message header"); !ok) {
    return Unexpected(ok.error());
  }
  auto header = proto::decode_header(header_bytes);
  if (!header) return Unexpected(header.error());
  std::vector<std::byte> body(header->length);
  if (auto ok = socket.read_exact(body, policy, proto::to_string(header->type)); !ok) {
    return Unexpected(ok.error());
  }
  return proto::decode(*header, body);
}

Result<void> write_message(Socket& socket, const proto::Message& message, const IoPolicy& policy) {
  const auto bytes = proto::encode(message);
  return socket.write_all(bytes, policy, proto::to_string(proto::type_of(message)));
}

}  // namespace rdmavideo::tcp
