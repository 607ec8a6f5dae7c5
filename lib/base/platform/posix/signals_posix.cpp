// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/signals.hpp"

#include <pthread.h>

#include <csignal>
#include <initializer_list>

namespace rdmavideo {

void block_async_signals() noexcept {
  sigset_t set;
  sigfillset(&set);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) {
    sigdelset(&set, synchronous);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void block_stop_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace rdmavideo
