// SPDX-License-Identifier: Apache-2.0
// What BSD sockets and Winsock share, written once: an address's text (inet_ntop and the
// sockaddr layouts), resolving a name (getaddrinfo), and the listen loop over its addresses;
// they differ only in the headers and in the calls net_detail.hpp names.
#ifdef _WIN32
#include <winsock2.h>
// winsock2.h before ws2tcpip.h.
#include <ws2tcpip.h>
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

#include <fmt/format.h>

#include "platform/net_detail.hpp"
#include "rdmavideo/platform/net.hpp"

namespace rdmavideo::platform::net {

std::string format_address(const void* address) {
  const auto* addr = static_cast<const sockaddr*>(address);
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return fmt::format("{}:{}", host, ntohs(in->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return fmt::format("[{}]:{}", host, ntohs(in6->sin6_port));
  }
  return "unknown";
}

namespace detail {

Result<UniqueAddrInfo> resolve(const std::string& host, uint16_t port, bool passive,
                               const std::string& name) {
  ready();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
      rc != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", name,
                      resolve_text(rc));
  }
  return UniqueAddrInfo(result);
}

}  // namespace detail

Result<Listening> listen(const std::string& host, uint16_t port, int backlog,
                         const std::string& name) {
  auto addresses = detail::resolve(host, port, true, name);
  if (!addresses) return Unexpected(addresses.error());
  int last_err = 0;
  for (addrinfo* ai = addresses->get(); ai; ai = ai->ai_next) {
    auto s = detail::listening_socket(*ai, backlog, last_err);
    if (!s) return Unexpected(s.error());
    if (!*s) continue;  // the next address
    std::string bound = detail::local_address((*s)->get());
    return Listening{std::move(**s), std::move(bound)};
  }
  return Unexpected(detail::socket_error(fmt::format("listen on {}", name), last_err));
}

}  // namespace rdmavideo::platform::net
