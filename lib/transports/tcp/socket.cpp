// SPDX-License-Identifier: Apache-2.0
// The transport's policy over the platform's sockets (rdmavideo/platform/net.hpp): exact
// reads and full writes that wake every tick for keepalives, give up after the peer timeout
// without progress, and stop when asked.
#include "tcp/socket.hpp"

#include <array>
#include <cerrno>

namespace rdmavideo::tcp {
namespace {

namespace net = platform::net;
using Clock = std::chrono::steady_clock;
constexpr size_t kMaxWriteBytes = size_t{4} << 20;
// Connections the kernel completes before the accept thread takes them: the receiver takes
// each at once and talks to it on its own thread, so this only has to cover bursts.
constexpr int kListenBacklog = 128;

}  // namespace

Socket::Socket(net::UniqueSocket socket, std::string peer)
    : socket_(std::move(socket)), peer_(std::move(peer)) {}

Result<void> Socket::configure(std::chrono::milliseconds tick) {
  // Socket buffers are left to the system's autotuning, which grows them (on Linux to
  // tcp_rmem/tcp_wmem's maximum, 6 MiB and 4 MiB by default) as a frame stream needs. Setting
  // SO_RCVBUF or SO_SNDBUF would turn autotuning off and cap them at net.core.rmem_max (208
  // KiB by default): smaller, not larger. Raise tcp_rmem/tcp_wmem for long fat links.
  if (auto ok = net::configure(handle(), tick); !ok) return Unexpected(ok.error().context(peer_));
  tick_ = tick;
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
    const net::Transfer t = net::receive(handle(), buf.subspan(done), tick_);
    if (t.bytes > 0) {
      done += t.bytes;
      last_progress = Clock::now();
      continue;
    }
    if (t.closed) {
      return Unexpected(Error(ErrorCode::peer_closed,
                              done == 0
                                  ? fmt::format("peer closed the connection (reading {})", what)
                                  : fmt::format("peer closed the connection in the middle of "
                                                "{} ({} of {} bytes)",
                                                what, done, buf.size())));
    }
    if (t.waited) {
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
    if (t.error == EINTR) {
      // With a wake-up tick set, a handled signal interrupts a receive even under SA_RESTART.
      // Where the caller gave a stop flag, the flag decides; where not, an interruption is a
      // stop (the command-line tools' SIGINT).
      if (!policy.stop || policy.stop->load()) {
        return Unexpected(
            Error(ErrorCode::system, fmt::format("interrupted reading {}", what), EINTR));
      }
      continue;
    }
    return Unexpected(system_error(fmt::format("recv ({})", what), t.error));
  }
  return {};
}

Result<size_t> Socket::read_available(std::span<std::byte> buf) {
  const net::Transfer t = net::receive_now(handle(), buf);
  if (t.bytes > 0) return t.bytes;
  if (t.closed) return make_error(ErrorCode::peer_closed, "peer closed the connection");
  if (t.waited) return size_t{0};
  return Unexpected(system_error("recv", t.error));
}

Result<bool> Socket::wait_readable(std::chrono::milliseconds wait, const std::atomic<bool>* stop) {
  const int rc = net::wait(handle(), false, wait);
  if (rc < 0) {
    const int err = net::last_error();
    if (err == EINTR && stop && !stop->load()) return false;  // as in read_exact
    if (err == EINTR) {
      return Unexpected(Error(ErrorCode::system, "interrupted while waiting", EINTR));
    }
    return Unexpected(system_error("poll", err));
  }
  return rc > 0;
}

Result<void> Socket::write_all(std::span<Piece> pieces, const IoPolicy& policy,
                               std::string_view what) {
  size_t first = 0;
  auto last_progress = Clock::now();
  while (first < pieces.size()) {
    // At most kMaxWriteBytes per call: loopback TCP moves a frame about 20% faster in
    // 4 MiB slices than in one frame-sized call (less time holding the socket lock while
    // ACKs pile up behind it), and 1 MiB slices are as fast as 4 MiB.
    std::array<Piece, 8> slice;
    size_t count = 0, bytes = 0;
    for (size_t i = first; i < pieces.size() && count < slice.size() && bytes < kMaxWriteBytes;
         ++i) {
      slice[count] = pieces[i];
      slice[count].size = std::min(pieces[i].size, kMaxWriteBytes - bytes);
      bytes += slice[count].size;
      ++count;
    }
    const net::Transfer t = net::send(handle(), std::span(slice.data(), count), tick_);
    if (t.bytes == 0) {
      if (t.waited) {
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
      if (t.error == EINTR) continue;  // a partial write must be finished to keep framing
      if (t.error == EPIPE || t.error == ECONNRESET) {
        return make_error(ErrorCode::peer_closed, "peer closed the connection (writing {})", what);
      }
      return Unexpected(system_error(fmt::format("sendmsg ({})", what), t.error));
    }
    last_progress = Clock::now();
    size_t left = t.bytes;
    while (first < pieces.size() && left >= pieces[first].size) {
      left -= pieces[first].size;
      ++first;
    }
    if (first < pieces.size()) {
      pieces[first].data = static_cast<const std::byte*>(pieces[first].data) + left;
      pieces[first].size -= left;
    }
  }
  return {};
}

Result<void> Socket::write_all(std::span<const std::byte> bytes, const IoPolicy& policy,
                               std::string_view what) {
  Piece piece{bytes.data(), bytes.size()};
  return write_all(std::span(&piece, 1), policy, what);
}

Result<Socket> connect(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  auto socket = net::connect(endpoint.host, endpoint.port, timeout, endpoint.to_string());
  if (!socket) return Unexpected(socket.error());
  return Socket(std::move(*socket), endpoint.to_string());
}

Result<ListeningSocket> ListeningSocket::listen(const Endpoint& endpoint) {
  auto listening = net::listen(endpoint.host, endpoint.port, kListenBacklog, endpoint.to_string());
  if (!listening) return Unexpected(listening.error());
  ListeningSocket out;
  out.socket_ = std::move(listening->socket);
  auto local = parse_endpoint(listening->local, true);
  out.local_ = local ? *local : endpoint;
  return out;
}

Result<Socket> ListeningSocket::accept() {
  auto accepted = net::accept(socket_.get(), local_.to_string());
  if (!accepted) return Unexpected(accepted.error());
  return Socket(std::move(accepted->socket), std::move(accepted->peer));
}

}  // namespace rdmavideo::tcp
