// SPDX-License-Identifier: Apache-2.0
// Windows delivers no asynchronous signals to threads: Ctrl+C and a closed console come to a
// thread of their own (SetConsoleCtrlHandler), so there is nothing to block.
#include "rdmavideo/signals.hpp"

namespace rdmavideo {

void block_async_signals() noexcept {}

void block_stop_signals() noexcept {}

}  // namespace rdmavideo
