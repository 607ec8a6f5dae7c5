// SPDX-License-Identifier: Apache-2.0
// Threads the library starts take no asynchronous signals: a process's SIGINT handler runs on
// the thread the application chose, and no library wait is ever cut short by one. The
// library's waits end through its own stop signals instead.
#pragma once

namespace rdmavideo {

/// Blocks every asynchronous signal in the calling thread (SIGSEGV and the other
/// synchronous ones stay deliverable).
void block_async_signals() noexcept;

}  // namespace rdmavideo
