// SPDX-License-Identifier: Apache-2.0
// Winsock. Connected sockets are non-blocking: Windows has no per-call MSG_DONTWAIT, and a
// blocking receive or send that times out leaves the socket indeterminate, so every wait is a
// WSAPoll for at most the tick, followed by a call that takes or gives what it can.
#include <winsock2.h>
// winsock2.h before windows.h (through ws2tcpip.h and the error header).
#include <ws2tcpip.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <mutex>

#include "platform/net_detail.hpp"
#include "platform/win32/win32_error.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/net.hpp"

namespace rdmavideo::platform::net {
namespace {

SOCKET sock_of(SocketHandle socket) { return static_cast<SOCKET>(socket); }

void start() {
  static std::once_flag once;
  std::call_once(once, [] {
    WSADATA data{};
    if (const int rc = WSAStartup(MAKEWORD(2, 2), &data); rc != 0) {
      log().error("WSAStartup failed: {}", win32::error_text(static_cast<DWORD>(rc)));
    }
  });
}

int to_errno(int wsa) {
  switch (wsa) {
    case 0: return 0;
    case WSAEWOULDBLOCK: return EAGAIN;
    case WSAEINTR: return EINTR;
    case WSAEINPROGRESS: return EINPROGRESS;
    case WSAECONNRESET: return ECONNRESET;
    case WSAECONNABORTED: return ECONNABORTED;
    case WSAESHUTDOWN: return EPIPE;
    case WSAENOTCONN: return ENOTCONN;
    case WSAETIMEDOUT: return ETIMEDOUT;
    case WSAECONNREFUSED: return ECONNREFUSED;
    case WSAEADDRINUSE: return EADDRINUSE;
    case WSAEADDRNOTAVAIL: return EADDRNOTAVAIL;
    case WSAENETUNREACH: return ENETUNREACH;
    case WSAEHOSTUNREACH: return EHOSTUNREACH;
    case WSAENOBUFS: return ENOBUFS;
    case WSAEMFILE: return EMFILE;
    default: return EIO;
  }
}

// Winsock's own words for its last error.
std::string wsa_text(int wsa) { return win32::error_text(static_cast<DWORD>(wsa)); }

Error wsa_error(std::string_view what, int wsa) {
  return Error(ErrorCode::system, fmt::format("{}: {}", what, wsa_text(wsa)), to_errno(wsa));
}

bool set_nonblocking(SOCKET s) {
  u_long on = 1;
  return ioctlsocket(s, FIONBIO, &on) == 0;
}

// 1 ready, 0 not within `wait`, -1 an error (WSAGetLastError).
int poll_one(SOCKET s, short events, std::chrono::milliseconds wait) {
  WSAPOLLFD pfd{s, events, 0};
  const int rc = WSAPoll(&pfd, 1, static_cast<INT>(wait.count()));
  if (rc == SOCKET_ERROR) return -1;
  return rc > 0 ? 1 : 0;
}

Transfer outcome(int n) {
  Transfer t;
  if (n > 0) {
    t.bytes = static_cast<size_t>(n);
  } else if (n == 0) {
    t.closed = true;
  } else {
    const int err = WSAGetLastError();
    if (err == WSAEWOULDBLOCK) {
      t.waited = true;
    } else {
      t.error = to_errno(err);
    }
  }
  return t;
}

using detail::resolve;

// A socket for `ai`'s family, not inherited by child processes.
Result<UniqueSocket> open_socket(const addrinfo& ai) {
  const SOCKET s = WSASocketW(ai.ai_family, ai.ai_socktype, ai.ai_protocol, nullptr, 0,
                              WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
  if (s == INVALID_SOCKET) return Unexpected(wsa_error("socket", WSAGetLastError()));
  return UniqueSocket(static_cast<SocketHandle>(s));
}

constexpr size_t kMostPerCall = size_t{1} << 30;  // WSARecv/WSASend count in ULONG

}  // namespace

void close_socket(SocketHandle socket) noexcept {
  if (closesocket(sock_of(socket)) != 0) {
    try {
      log().warn("closesocket failed: {}", wsa_text(WSAGetLastError()));
    } catch (...) {
    }
  }
}

int last_error() { return to_errno(WSAGetLastError()); }

Transfer receive(SocketHandle socket, std::span<std::byte> buffer, std::chrono::milliseconds tick) {
  const int ready = poll_one(sock_of(socket), POLLRDNORM, tick);
  if (ready < 0) return Transfer{.error = last_error()};
  if (ready == 0) return Transfer{.waited = true};
  const int len = static_cast<int>(std::min(buffer.size(), kMostPerCall));
  return outcome(recv(sock_of(socket), reinterpret_cast<char*>(buffer.data()), len, 0));
}

Transfer receive_now(SocketHandle socket, std::span<std::byte> buffer) {
  const int len = static_cast<int>(std::min(buffer.size(), kMostPerCall));
  return outcome(recv(sock_of(socket), reinterpret_cast<char*>(buffer.data()), len, 0));
}

Transfer send(SocketHandle socket, std::span<const Piece> pieces, std::chrono::milliseconds tick) {
  const int ready = poll_one(sock_of(socket), POLLWRNORM, tick);
  if (ready < 0) return Transfer{.error = last_error()};
  if (ready == 0) return Transfer{.waited = true};
  std::array<WSABUF, 16> bufs;
  const size_t count = std::min(pieces.size(), bufs.size());
  for (size_t i = 0; i < count; ++i) {
    bufs[i].buf = static_cast<char*>(const_cast<void*>(pieces[i].data));
    bufs[i].len = static_cast<ULONG>(std::min(pieces[i].size, kMostPerCall));
  }
  DWORD sent = 0;
  if (WSASend(sock_of(socket), bufs.data(), static_cast<DWORD>(count), &sent, 0, nullptr,
              nullptr) == SOCKET_ERROR) {
    Transfer t = outcome(-1);
    return t;
  }
  return Transfer{.bytes = sent};
}

int wait(SocketHandle socket, bool for_writing, std::chrono::milliseconds wait) {
  return poll_one(sock_of(socket), for_writing ? POLLWRNORM : POLLRDNORM, wait);
}

Result<void> configure(SocketHandle socket, std::chrono::milliseconds) {
  // No receive or send timeouts: every wait here is a WSAPoll for the tick (see above).
  BOOL one = TRUE;
  if (setsockopt(sock_of(socket), IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char*>(&one),
                 sizeof one) != 0) {
    return Unexpected(wsa_error("setsockopt(TCP_NODELAY)", WSAGetLastError()));
  }
  return {};
}

void shutdown(SocketHandle socket, bool both) noexcept {
  ::shutdown(sock_of(socket), both ? SD_BOTH : SD_SEND);
}

void reset_on_close(SocketHandle socket) noexcept {
  const linger reset{1, 0};
  setsockopt(sock_of(socket), SOL_SOCKET, SO_LINGER, reinterpret_cast<const char*>(&reset),
             sizeof reset);
}

Result<UniqueSocket> connect(const std::string& host, uint16_t port,
                             std::chrono::milliseconds timeout, const std::string& name) {
  auto addresses = resolve(host, port, false, name);
  if (!addresses) return Unexpected(addresses.error());
  std::string failures;
  for (addrinfo* ai = addresses->get(); ai; ai = ai->ai_next) {
    auto opened = open_socket(*ai);
    if (!opened) return Unexpected(opened.error());
    UniqueSocket s = std::move(*opened);
    if (!set_nonblocking(sock_of(s.get()))) {
      return Unexpected(wsa_error("ioctlsocket(FIONBIO)", WSAGetLastError()));
    }
    int err = 0;
    if (::connect(sock_of(s.get()), ai->ai_addr, static_cast<int>(ai->ai_addrlen)) != 0) {
      err = WSAGetLastError();
      if (err == WSAEWOULDBLOCK) {
        // select, not WSAPoll: WSAPoll does not report a refused connect on every Windows.
        fd_set writable, failed;
        FD_ZERO(&writable);
        FD_ZERO(&failed);
        FD_SET(sock_of(s.get()), &writable);
        FD_SET(sock_of(s.get()), &failed);
        timeval tv{static_cast<long>(timeout.count() / 1000),
                   static_cast<long>((timeout.count() % 1000) * 1000)};
        const int rc = select(0, nullptr, &writable, &failed, &tv);
        if (rc == 0) {
          err = WSAETIMEDOUT;
        } else if (rc == SOCKET_ERROR) {
          err = WSAGetLastError();
        } else {
          int so_error = 0;
          int len = sizeof so_error;
          getsockopt(sock_of(s.get()), SOL_SOCKET, SO_ERROR, reinterpret_cast<char*>(&so_error),
                     &len);
          err = FD_ISSET(sock_of(s.get()), &failed) && so_error == 0 ? WSAECONNREFUSED : so_error;
        }
      }
    }
    if (err != 0) {
      if (!failures.empty()) failures += "; ";
      failures += format_address(ai->ai_addr) + ": " + wsa_text(err);
      continue;
    }
    return s;  // non-blocking, as every connected socket here
  }
  return make_error(ErrorCode::peer_closed, "connect to {} failed: {}", name, failures);
}

namespace detail {

void ready() { start(); }

std::string resolve_text(int rc) { return wsa_text(rc); }

Result<std::optional<UniqueSocket>> listening_socket(const addrinfo& ai, int backlog, int& err) {
  auto opened = open_socket(ai);
  if (!opened) return Unexpected(opened.error());
  UniqueSocket s = std::move(*opened);
  // Exclusive: on Windows SO_REUSEADDR would let another program take the port from us.
  BOOL one = TRUE;
  setsockopt(sock_of(s.get()), SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char*>(&one),
             sizeof one);
  if (!set_nonblocking(sock_of(s.get())) ||
      bind(sock_of(s.get()), ai.ai_addr, static_cast<int>(ai.ai_addrlen)) != 0 ||
      ::listen(sock_of(s.get()), backlog) != 0) {
    err = WSAGetLastError();
    return std::optional<UniqueSocket>();
  }
  return std::optional<UniqueSocket>(std::move(s));
}

std::string local_address(SocketHandle socket) {
  sockaddr_storage bound{};
  int len = sizeof bound;
  getsockname(sock_of(socket), reinterpret_cast<sockaddr*>(&bound), &len);
  return format_address(&bound);
}

Error socket_error(std::string_view what, int err) { return wsa_error(what, err); }

}  // namespace detail

Result<Accepted> accept(SocketHandle listening, const std::string& name) {
  sockaddr_storage peer{};
  int len = sizeof peer;
  // The accepted socket inherits the listener's non-blocking mode, as connected sockets here
  // want.
  const SOCKET s = ::accept(sock_of(listening), reinterpret_cast<sockaddr*>(&peer), &len);
  if (s == INVALID_SOCKET) {
    const int err = WSAGetLastError();
    if (err == WSAEWOULDBLOCK || err == WSAEINTR || err == WSAECONNRESET) {
      return make_error(ErrorCode::timeout, "accept on {}: no connection waiting", name);
    }
    return Unexpected(wsa_error(fmt::format("accept on {}", name), err));
  }
  return Accepted{UniqueSocket(static_cast<SocketHandle>(s)), format_address(&peer)};
}

}  // namespace rdmavideo::platform::net
