// SPDX-License-Identifier: Apache-2.0
// What a program asks of its operating system beyond files and sockets: a user's request to
// stop, a timer fine enough to pace frames, bytes from standard input, and the descriptor
// limit. Linux: signals, nanosleep, poll and read, RLIMIT_NOFILE. Windows: the console's
// control handler, a high-resolution waitable timer, the standard input handle.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "rdmavideo/result.hpp"

namespace rdmavideo::platform {

/// Sets `*flag` (which must outlive the program's main) when the user asks the program to
/// stop, as Ctrl+C does on both systems:
/// - Linux: SIGINT or SIGTERM. The handlers do not restart system calls, so a call blocked in
///   the calling thread returns EINTR; SIGPIPE is ignored (a write to a closed pipe fails).
/// - Windows: Ctrl+C, Ctrl+Break, closing the console window, logging off or shutting down.
///   Windows ends the process when the handler returns from the last three, so there it holds
///   until main() has returned (Windows grants a console five seconds): the program finishes
///   as it does after Ctrl+C.
void on_stop_request(std::atomic<bool>* flag);

/// Sleeps until `when` with the finest timer the system offers. Windows's default sleep
/// granularity is 15.6 ms, a whole frame at 60 fps: there this is a high-resolution waitable
/// timer (Windows 10 1803 on; before it, an ordinary one at the timer's finest period).
void sleep_until(std::chrono::steady_clock::time_point when);

/// Reads up to `into.size()` bytes of standard input, as bytes (never text: on Windows a
/// 0x1A byte or CR LF is data), waiting at most `wait` for the first of them. Returns the count
/// read; 0 at the end of the input; nullopt when nothing came within `wait`.
Result<std::optional<size_t>> read_stdin(std::span<std::byte> into, std::chrono::milliseconds wait);

/// Raises the soft descriptor limit to the hard one, as a server that holds a descriptor per
/// connection does, and returns the limit now in force (Windows has none: UINT64_MAX).
uint64_t raise_descriptor_limit();

}  // namespace rdmavideo::platform
