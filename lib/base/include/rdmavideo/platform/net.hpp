// SPDX-License-Identifier: Apache-2.0
// TCP sockets, as thin as the transport needs: BSD sockets on Linux, Winsock on Windows.
// Errors are errno values on both (Winsock's codes mapped: EAGAIN, EINTR, ECONNRESET, ...).
//
// Windows differs in one way that shapes this interface: a blocking receive that times out
// (SO_RCVTIMEO) leaves a Winsock socket in an indeterminate state. So nothing here relies on
// a receive timing out. receive() waits at most `tick` for readiness first (poll / WSAPoll)
// and then takes what is there, or, on Linux, lets SO_RCVTIMEO wake a MSG_WAITALL receive,
// which is one system call for a whole frame.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/result.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo::platform::net {

using SocketHandle = std::intptr_t;  ///< a file descriptor, or a Winsock SOCKET
inline constexpr SocketHandle kNoSocket = -1;
void close_socket(SocketHandle socket) noexcept;
using UniqueSocket = UniqueHandle<SocketHandle, &close_socket, kNoSocket>;

/// The errno value of the last socket call that failed on this thread.
int last_error();

/// One piece of a gathered send.
struct Piece {
  const void* data;
  size_t size;
};

/// What one receive or send did: `bytes` moved; with none, `closed` (the peer closed),
/// `waited` (nothing within the tick) or `error` (an errno value; EINTR for a signal).
struct Transfer {
  size_t bytes = 0;
  bool closed = false;
  bool waited = false;
  int error = 0;
};

/// Receives into `buffer`: the whole buffer where the platform can in one call, else what is
/// there, waiting at most `tick` for anything.
Transfer receive(SocketHandle socket, std::span<std::byte> buffer, std::chrono::milliseconds tick);
/// Receives what is there without waiting.
Transfer receive_now(SocketHandle socket, std::span<std::byte> buffer);
/// Sends from `pieces` in order (never raising SIGPIPE), waiting at most `tick` for room.
Transfer send(SocketHandle socket, std::span<const Piece> pieces, std::chrono::milliseconds tick);
/// Waits until `socket` is readable (or writable) or `wait` passes: 1 ready, 0 not, -1 an
/// error (last_error()).
int wait(SocketHandle socket, bool for_writing, std::chrono::milliseconds wait);

/// Small messages go out at once (TCP_NODELAY), and blocking calls wake every `tick`.
Result<void> configure(SocketHandle socket, std::chrono::milliseconds tick);
/// Half-closes (no more sends) or shuts both ways, which wakes a thread blocked on it.
void shutdown(SocketHandle socket, bool both) noexcept;
/// Makes the close a reset: nothing is drained or sent after it.
void reset_on_close(SocketHandle socket) noexcept;

/// Connects to `host`:`port` within `timeout`, trying each address it resolves to. The
/// error names each address tried and why it failed.
Result<UniqueSocket> connect(const std::string& host, uint16_t port,
                             std::chrono::milliseconds timeout, const std::string& name);
/// A non-blocking listening socket on `host` (empty: every address):`port` (0: any), and the
/// address it is bound to ("host:port", "[v6]:port").
struct Listening {
  UniqueSocket socket;
  std::string local;
};
Result<Listening> listen(const std::string& host, uint16_t port, int backlog,
                         const std::string& name);
/// Takes a waiting connection (blocking from then on) and its peer's address; `timeout` where
/// none is waiting.
struct Accepted {
  UniqueSocket socket;
  std::string peer;
};
Result<Accepted> accept(SocketHandle listening, const std::string& name);

/// "host:port" or "[v6]:port" of a `sockaddr` (IPv4 or IPv6); "unknown" for another family.
std::string format_address(const void* sockaddr);

}  // namespace rdmavideo::platform::net
