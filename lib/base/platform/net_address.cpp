// SPDX-License-Identifier: Apache-2.0
// The text of a socket address, written once: BSD sockets and Winsock share inet_ntop and the
// sockaddr layouts, and differ only in the headers that declare them.
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

}  // namespace rdmavideo::platform::net
