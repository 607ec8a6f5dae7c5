// SPDX-License-Identifier: Apache-2.0
// A connected TCP socket with the blocking I/O the transport needs: exact reads and full
// writes that wake every `tick` so the caller can send keepalives, and that give up after
// `peer_timeout` without progress. Plus connect with a timeout and listen.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <span>
#include <string>

#include "rdmavideo/platform/net.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::tcp {

struct IoPolicy {
  std::chrono::milliseconds tick{1000};          ///< wake this often while blocked
  std::chrono::milliseconds peer_timeout{5000};  ///< fail after this long with no progress
  std::function<void()> on_tick;                 ///< called at each wake without progress
  const std::atomic<bool>* stop = nullptr;       ///< give up (errno EINTR) at a wake once true
  /// Give up when this passes, progress or not: a peer sending a byte now and then must not
  /// hold a read open for ever. The default: no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

using platform::net::Piece;

class Socket {
 public:
  Socket() = default;
  Socket(platform::net::UniqueSocket socket, std::string peer);

  platform::net::SocketHandle handle() const { return socket_.get(); }
  /// The socket as a descriptor a receiver's poll waits on (Linux; the receiver is Linux's).
  int fd() const { return static_cast<int>(socket_.get()); }
  bool is_open() const { return static_cast<bool>(socket_); }
  const std::string& peer() const { return peer_; }
  void close() { socket_.reset(); }
  /// Half-closes (no more sends), or shuts both ways (waking a thread blocked on it).
  void shutdown(bool both) { platform::net::shutdown(socket_.get(), both); }
  /// Makes the close a reset.
  void reset_on_close() { platform::net::reset_on_close(socket_.get()); }

  /// Sets TCP_NODELAY and the wake-up tick (SO_RCVTIMEO/SO_SNDTIMEO).
  Result<void> configure(std::chrono::milliseconds tick);

  /// Reads exactly buf.size() bytes. `what` names the data for errors ("FrameWritten payload").
  Result<void> read_exact(std::span<std::byte> buf, const IoPolicy& policy, std::string_view what);
  /// Reads whatever is there without blocking; 0 bytes when nothing is.
  Result<size_t> read_available(std::span<std::byte> buf);
  /// Waits until readable or `wait` passes; true when readable.
  /// An interruption by a signal is an error unless `stop` is given and still false.
  Result<bool> wait_readable(std::chrono::milliseconds wait,
                             const std::atomic<bool>* stop = nullptr);
  /// Writes every byte of the pieces (modified in place).
  Result<void> write_all(std::span<Piece> pieces, const IoPolicy& policy, std::string_view what);
  Result<void> write_all(std::span<const std::byte> bytes, const IoPolicy& policy,
                         std::string_view what);

 private:
  platform::net::UniqueSocket socket_;
  std::string peer_;                      // "host:port" for messages
  std::chrono::milliseconds tick_{1000};  // configure()'s wake-up tick
};

/// Connects within `timeout`. The error names the endpoint and the cause.
Result<Socket> connect(const Endpoint& endpoint, std::chrono::milliseconds timeout);

class ListeningSocket {
 public:
  static Result<ListeningSocket> listen(const Endpoint& endpoint);
  Endpoint local_endpoint() const { return local_; }
  int fd() const { return static_cast<int>(socket_.get()); }
  /// Takes a waiting connection (the socket does not block: call when fd() is readable);
  /// `timeout` when none is waiting.
  Result<Socket> accept();

 private:
  platform::net::UniqueSocket socket_;
  Endpoint local_;
};

/// "host:port" or "[v6]:port" of a sockaddr.
inline std::string format_address(const void* sockaddr) {
  return platform::net::format_address(sockaddr);
}

}  // namespace rdmavideo::tcp
