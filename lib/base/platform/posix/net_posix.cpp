// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "platform/net_detail.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/net.hpp"

namespace rdmavideo::platform::net {
namespace {

using detail::resolve;

int fd_of(SocketHandle socket) { return static_cast<int>(socket); }

Transfer outcome(ssize_t n) {
  Transfer t;
  if (n > 0) {
    t.bytes = static_cast<size_t>(n);
  } else if (n == 0) {
    t.closed = true;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    t.waited = true;
  } else {
    t.error = errno;
  }
  return t;
}

}  // namespace

void close_socket(SocketHandle socket) noexcept { close_fd(fd_of(socket)); }

int last_error() { return errno; }

Transfer receive(SocketHandle socket, std::span<std::byte> buffer, std::chrono::milliseconds) {
  // MSG_WAITALL: one call for a whole frame; SO_RCVTIMEO (configure) wakes it every tick.
  return outcome(recv(fd_of(socket), buffer.data(), buffer.size(), MSG_WAITALL));
}

Transfer receive_now(SocketHandle socket, std::span<std::byte> buffer) {
  Transfer t = outcome(recv(fd_of(socket), buffer.data(), buffer.size(), MSG_DONTWAIT));
  if (t.error == EINTR) t = Transfer{.waited = true};
  return t;
}

Transfer send(SocketHandle socket, std::span<const Piece> pieces, std::chrono::milliseconds) {
  std::array<iovec, 16> iov;
  const size_t count = std::min(pieces.size(), iov.size());
  for (size_t i = 0; i < count; ++i) iov[i] = {const_cast<void*>(pieces[i].data), pieces[i].size};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = count;
  // SO_SNDTIMEO (configure) wakes a blocked send every tick.
  Transfer t = outcome(sendmsg(fd_of(socket), &msg, MSG_NOSIGNAL));
  t.closed = false;  // sendmsg returns 0 only for nothing to send
  return t;
}

int wait(SocketHandle socket, bool for_writing, std::chrono::milliseconds wait) {
  pollfd pfd{fd_of(socket), static_cast<short>(for_writing ? POLLOUT : POLLIN), 0};
  const int rc = poll(&pfd, 1, static_cast<int>(wait.count()));
  return rc < 0 ? -1 : (rc > 0 ? 1 : 0);
}

Result<void> configure(SocketHandle socket, std::chrono::milliseconds tick) {
  int one = 1;
  if (setsockopt(fd_of(socket), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Unexpected(system_error("setsockopt(TCP_NODELAY)", errno));
  }
  const timeval tv{static_cast<time_t>(tick.count() / 1000),
                   static_cast<suseconds_t>((tick.count() % 1000) * 1000)};
  if (setsockopt(fd_of(socket), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd_of(socket), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Unexpected(system_error("setsockopt(SO_RCVTIMEO)", errno));
  }
  return {};
}

void shutdown(SocketHandle socket, bool both) noexcept {
  ::shutdown(fd_of(socket), both ? SHUT_RDWR : SHUT_WR);
}

void reset_on_close(SocketHandle socket) noexcept {
  const linger reset{1, 0};
  setsockopt(fd_of(socket), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

Result<UniqueSocket> connect(const std::string& host, uint16_t port,
                             std::chrono::milliseconds timeout, const std::string& name) {
  auto addresses = resolve(host, port, false, name);
  if (!addresses) return Unexpected(addresses.error());
  std::string failures;
  for (addrinfo* ai = addresses->get(); ai; ai = ai->ai_next) {
    UniqueSocket s(
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!s) return Unexpected(system_error("socket", errno));
    int err = 0;
    if (::connect(fd_of(s.get()), ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const int rc = wait(s.get(), true, timeout);
        if (rc == 0) {
          err = ETIMEDOUT;
        } else if (rc < 0) {
          err = errno;
        } else {
          socklen_t len = sizeof err;
          getsockopt(fd_of(s.get()), SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err != 0) {
      if (!failures.empty()) failures += "; ";
      failures += format_address(ai->ai_addr) + ": " + std::strerror(err);
      continue;
    }
    // Back to blocking; SO_RCVTIMEO/SO_SNDTIMEO bound each wait from here on.
    const int flags = fcntl(fd_of(s.get()), F_GETFL);
    fcntl(fd_of(s.get()), F_SETFL, flags & ~O_NONBLOCK);
    return s;
  }
  return make_error(ErrorCode::peer_closed, "connect to {} failed: {}", name, failures);
}

namespace detail {

void ready() {}

std::string resolve_text(int rc) { return gai_strerror(rc); }

Result<std::optional<UniqueSocket>> listening_socket(const addrinfo& ai, int backlog, int& err) {
  // Non-blocking: accept() is called when the socket is readable, and a peer that gave up
  // in between must not block the caller.
  UniqueSocket s(
      socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai.ai_protocol));
  if (!s) return Unexpected(system_error("socket", errno));
  int one = 1;
  setsockopt(fd_of(s.get()), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd_of(s.get()), ai.ai_addr, ai.ai_addrlen) != 0 ||
      ::listen(fd_of(s.get()), backlog) != 0) {
    err = errno;
    return std::optional<UniqueSocket>();
  }
  return std::optional<UniqueSocket>(std::move(s));
}

std::string local_address(SocketHandle socket) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd_of(socket), reinterpret_cast<sockaddr*>(&bound), &len);
  return format_address(&bound);
}

Error socket_error(std::string_view what, int err) { return system_error(what, err); }

}  // namespace detail

Result<Accepted> accept(SocketHandle listening, const std::string& name) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  // The accepted socket blocks (accept4 does not pass on the listener's O_NONBLOCK).
  const int fd =
      ::accept4(fd_of(listening), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) {
      return make_error(ErrorCode::timeout, "accept on {}: no connection waiting", name);
    }
    return Unexpected(system_error(fmt::format("accept on {}", name), err));
  }
  return Accepted{UniqueSocket(fd), format_address(&peer)};
}

}  // namespace rdmavideo::platform::net
