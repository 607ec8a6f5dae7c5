// SPDX-License-Identifier: Apache-2.0
// What each platform's sockets (posix/net_posix.cpp, win32/net_win32.cpp) give the parts of
// rdmavideo/platform/net.hpp written once over either (net_address.cpp): resolving a name and
// the listen loop over its addresses.
#pragma once

#ifdef _WIN32
#include <winsock2.h>
// winsock2.h before ws2tcpip.h.
#include <ws2tcpip.h>
#else
#include <netdb.h>
#endif

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rdmavideo/platform/net.hpp"

namespace rdmavideo::platform::net::detail {

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const noexcept { freeaddrinfo(ai); }
};
using UniqueAddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

/// The addresses of `host`:`port` (passive: to listen on), errors naming `name`. Written once.
Result<UniqueAddrInfo> resolve(const std::string& host, uint16_t port, bool passive,
                               const std::string& name);

// Each platform's:
/// Sockets may be used from here on (Winsock's start, once; nothing on POSIX).
void ready();
/// The platform's text for getaddrinfo's error `rc`.
std::string resolve_text(int rc);
/// A non-blocking socket bound to `ai` and listening, not inherited by child processes;
/// nullopt, with the platform's error in `err`, where that address cannot be listened on;
/// an error where no socket can be made at all.
Result<std::optional<UniqueSocket>> listening_socket(const addrinfo& ai, int backlog, int& err);
/// The address `socket` is bound to, as format_address() writes it.
std::string local_address(SocketHandle socket);
/// "<what>: <the platform's text for err>", with its errno.
Error socket_error(std::string_view what, int err);

}  // namespace rdmavideo::platform::net::detail
