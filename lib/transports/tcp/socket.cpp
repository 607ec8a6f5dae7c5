// SPDX-License-Identifier: Apache-2.0
#include "tcp/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

namespace rdmavideo::tcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxWriteBytes = size_t{4} << 20;
// Connections the kernel completes before the accept thread takes them: the receiver takes
// each at once and talks to it on its own thread, so this only has to cover bursts.
constexpr int kListenBacklog = 128;

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const noexcept { freeaddrinfo(ai); }
};
using UniqueAddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

Result<UniqueAddrInfo> resolve(const Endpoint& endpoint, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const std::string port = std::to_string(endpoint.port);
  const char* host = endpoint.host.empty() ? nullptr : endpoint.host.c_str();
  if (int rc = getaddrinfo(host, port.c_str(), &hints, &result); rc != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", endpoint.to_string(),
                      gai_strerror(rc));
  }
  return UniqueAddrInfo(result);
}

}  // namespace

std::string format_address(const sockaddr* addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return fmt::format("{}:{}", host, port);
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return fmt::format("[{}]:{}", host, port);
  }
  return "unknown";
}

Socket::Socket(UniqueFd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}

Result<void> Socket::configure(std::chrono::milliseconds tick) {
  // Socket buffers are left to Linux's autotuning, which grows them to tcp_rmem/tcp_wmem's
  // maximum (6 MiB and 4 MiB by default) as a frame stream needs. Setting SO_RCVBUF or
  // SO_SNDBUF would turn autotuning off and cap them at net.core.rmem_max (208 KiB by
  // default): smaller, not larger. Raise tcp_rmem/tcp_wmem for long fat links.
  int one = 1;
  // Control messages are small and latency matters more than segment count.
  if (setsockopt(fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Unexpected(system_error(fmt::format("{}: setsockopt(TCP_NODELAY)", peer_), errno));
  }
  const timeval tv = to_timeval(tick);
  if (setsockopt(fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Unexpected(system_error(fmt::format("{}: setsockopt(SO_RCVTIMEO)", peer_), errno));
  }
  return {};
}

Result<void> Socket::read_exact(std::span<std::byte> buf, const IoPolicy& policy,
                                std::string_view what) {
  size_t done = 0;
  auto last_progress = Clock::now();
  while (done < buf.size()) {
    if (Clock::now() >= policy.deadline) {
      return make_error(ErrorCode::timeout,
                        "peer too slow: {} not complete in time ({} of {} bytes)", what, done,
                        buf.size());
    }
    // MSG_WAITALL: one call for a whole frame; SO_RCVTIMEO wakes it every tick.
    const ssize_t n = recv(fd(), buf.data() + done, buf.size() - done, MSG_WAITALL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      last_progress = Clock::now();
      continue;
    }
    if (n == 0) {
      return Unexpected(Error(ErrorCode::peer_closed,
                              done == 0
                                  ? fmt::format("peer closed the connection (reading {})", what)
                                  : fmt::format("peer closed the connection in the middle of "
                                                "{} ({} of {} bytes)",
                                                what, done, buf.size())));
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (Clock::now() - last_progress >= policy.peer_timeout) {
        return make_error(ErrorCode::timeout, "peer silent for {} ms (reading {}, {} of {} bytes)",
                          policy.peer_timeout.count(), what, done, buf.size());
      }
      if (policy.stop && policy.stop->load()) {
        return Unexpected(Error(ErrorCode::system, fmt::format("stopped reading {}", what), EINTR));
      }
      if (policy.on_tick) policy.on_tick();
      continue;
    }
    if (err == EINTR) {
      // With SO_RCVTIMEO set, a handled signal interrupts recv even under SA_RESTART. Where
      // the caller gave a stop flag, the flag decides; where not, an interruption is a stop
      // (the command-line tools' SIGINT).
      if (!policy.stop || policy.stop->load()) {
        return Unexpected(
            Error(ErrorCode::system, fmt::format("interrupted reading {}", what), EINTR));
      }
      continue;
    }
    return Unexpected(system_error(fmt::format("recv ({})", what), err));
  }
  return {};
}

Result<size_t> Socket::read_available(std::span<std::byte> buf) {
  const ssize_t n = recv(fd(), buf.data(), buf.size(), MSG_DONTWAIT);
  if (n > 0) return static_cast<size_t>(n);
  if (n == 0) return make_error(ErrorCode::peer_closed, "peer closed the connection");
  const int err = errno;
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) return size_t{0};
  return Unexpected(system_error("recv", err));
}

Result<bool> Socket::wait_readable(std::chrono::milliseconds wait, const std::atomic<bool>* stop) {
  pollfd pfd{fd(), POLLIN, 0};
  const int rc = poll(&pfd, 1, static_cast<int>(wait.count()));
  if (rc < 0) {
    if (errno == EINTR && stop && !stop->load()) return false;  // as in read_exact
    if (errno == EINTR) {
      return Unexpected(Error(ErrorCode::system, "interrupted while waiting", EINTR));
    }
    return Unexpected(system_error("poll", errno));
  }
  return rc > 0;
}

Result<void> Socket::write_all(std::span<iovec> iov, const IoPolicy& policy,
                               std::string_view what) {
  size_t first = 0;
  auto last_progress = Clock::now();
  while (first < iov.size()) {
    // At most kMaxWriteBytes per call: loopback TCP moves a frame about 20% faster in
    // 4 MiB slices than in one frame-sized call (less time holding the socket lock while
    // ACKs pile up behind it), and 1 MiB slices are as fast as 4 MiB.
    std::array<iovec, 8> slice;
    size_t count = 0, bytes = 0;
    for (size_t i = first; i < iov.size() && count < slice.size() && bytes < kMaxWriteBytes; ++i) {
      slice[count] = iov[i];
      slice[count].iov_len = std::min(iov[i].iov_len, kMaxWriteBytes - bytes);
      bytes += slice[count].iov_len;
      ++count;
    }
    msghdr msg{};
    msg.msg_iov = slice.data();
    msg.msg_iovlen = count;
    const ssize_t n = sendmsg(fd(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        if (Clock::now() - last_progress >= policy.peer_timeout) {
          return make_error(ErrorCode::timeout, "peer stopped reading for {} ms (writing {})",
                            policy.peer_timeout.count(), what);
        }
        if (policy.stop && policy.stop->load()) {
          return Unexpected(
              Error(ErrorCode::system, fmt::format("stopped writing {}", what), EINTR));
        }
        if (policy.on_tick) policy.on_tick();
        continue;
      }
      if (err == EINTR) continue;  // a partial write must be finished to keep framing
      if (err == EPIPE || err == ECONNRESET) {
        return make_error(ErrorCode::peer_closed, "peer closed the connection (writing {})", what);
      }
      return Unexpected(system_error(fmt::format("sendmsg ({})", what), err));
    }
    last_progress = Clock::now();
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return {};
}

Result<void> Socket::write_all(std::span<const std::byte> bytes, const IoPolicy& policy,
                               std::string_view what) {
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  return write_all(std::span(&iov, 1), policy, what);
}

Result<Socket> connect(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  auto addresses = resolve(endpoint, false);
  if (!addresses) return Unexpected(addresses.error());
  std::string failures;
  for (addrinfo* ai = addresses->get(); ai; ai = ai->ai_next) {
    UniqueFd fd(
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) return Unexpected(system_error("socket", errno));
    int err = 0;
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd pfd{fd.get(), POLLOUT, 0};
        const int rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
        if (rc == 0) {
          err = ETIMEDOUT;
        } else if (rc < 0) {
          err = errno;
        } else {
          socklen_t len = sizeof err;
          getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err != 0) {
      if (!failures.empty()) failures += "; ";
      failures += format_address(ai->ai_addr) + ": " + std::strerror(err);
      continue;
    }
    // Back to blocking; SO_RCVTIMEO/SO_SNDTIMEO bound each wait from here on.
    const int flags = fcntl(fd.get(), F_GETFL);
    fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return Socket(std::move(fd), endpoint.to_string());
  }
  return make_error(ErrorCode::peer_closed, "connect to {} failed: {}", endpoint.to_string(),
                    failures);
}

Result<ListeningSocket> ListeningSocket::listen(const Endpoint& endpoint) {
  auto addresses = resolve(endpoint, true);
  if (!addresses) return Unexpected(addresses.error());
  int last_err = 0;
  for (addrinfo* ai = addresses->get(); ai; ai = ai->ai_next) {
    // Non-blocking: accept() is called when the fd is readable, and a peer that gave up in
    // between must not block the caller.
    UniqueFd fd(
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) return Unexpected(system_error("socket", errno));
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 ||
        ::listen(fd.get(), kListenBacklog) != 0) {
      last_err = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    ListeningSocket out;
    out.fd_ = std::move(fd);
    auto local = parse_endpoint(format_address(reinterpret_cast<sockaddr*>(&bound)), true);
    out.local_ = local ? *local : endpoint;
    return out;
  }
  return Unexpected(system_error(fmt::format("listen on {}", endpoint.to_string()), last_err));
}

Result<Socket> ListeningSocket::accept() {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  // The accepted socket blocks (accept4 does not pass on the listener's O_NONBLOCK).
  const int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) {
      return make_error(ErrorCode::timeout, "accept on {}: no connection waiting",
                        local_.to_string());
    }
    return Unexpected(system_error(fmt::format("accept on {}", local_.to_string()), err));
  }
  return Socket(UniqueFd(fd), format_address(reinterpret_cast<sockaddr*>(&peer)));
}

}  // namespace rdmavideo::tcp
