// SPDX-License-Identifier: Apache-2.0
// Threads the library starts take no asynchronous signals: a process's SIGINT handler runs on
// the thread the application chose, and no library wait is ever cut short by one. The
// library's waits end through its own stop signals instead. A program's own worker threads
// (a writer, a capture, a window) leave SIGINT and SIGTERM to its main thread, whose blocked
// calls must see EINTR.
#pragma once

namespace rdmavideo {

/// Blocks every asynchronous signal in the calling thread (SIGSEGV and the other
/// synchronous ones stay deliverable).
void block_async_signals() noexcept;
/// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts), so that the
/// main thread takes them.
void block_stop_signals() noexcept;

}  // namespace rdmavideo
