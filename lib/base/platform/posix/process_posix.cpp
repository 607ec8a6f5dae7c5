// SPDX-License-Identifier: Apache-2.0
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/process.hpp"

namespace rdmavideo::platform {
namespace {

std::atomic<bool>* g_stop_flag = nullptr;

void on_signal(int) {
  if (g_stop_flag) g_stop_flag->store(true);
}

}  // namespace

void on_stop_request(std::atomic<bool>* flag) {
  g_stop_flag = flag;
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void sleep_until(std::chrono::steady_clock::time_point when) {
  std::this_thread::sleep_until(when);  // clock_nanosleep: the kernel's timers are fine enough
}

Result<std::optional<size_t>> read_stdin(std::span<std::byte> into,
                                         std::chrono::milliseconds wait) {
  pollfd pfd{STDIN_FILENO, POLLIN, 0};
  const int ready = poll(&pfd, 1, static_cast<int>(wait.count()));
  if (ready < 0 && errno != EINTR) return Unexpected(system_error("stdin: poll", errno));
  if (ready <= 0) return std::optional<size_t>{};
  const ssize_t n = read(STDIN_FILENO, into.data(), into.size());
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return std::optional<size_t>{};
    return Unexpected(system_error("stdin: read", errno));
  }
  return std::optional<size_t>(static_cast<size_t>(n));
}

uint64_t raise_descriptor_limit() {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return 0;
  if (nofile.rlim_cur < nofile.rlim_max) {
    const rlim_t was = nofile.rlim_cur;
    nofile.rlim_cur = nofile.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &nofile) == 0) {
      log().debug("descriptor limit raised from {} to {} (the hard limit)", was, nofile.rlim_max);
    } else {
      nofile.rlim_cur = was;
    }
  }
  return nofile.rlim_cur == RLIM_INFINITY ? UINT64_MAX : nofile.rlim_cur;
}

}  // namespace rdmavideo::platform
