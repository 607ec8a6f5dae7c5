// SPDX-License-Identifier: Apache-2.0
// What the plain socket peers of the benches (tcp_pipe.cpp, paced_socket.cpp) share: their
// CPU time, and a failed call said on one line.
#pragma once

#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rdmavideo::bench {

/// User + system CPU seconds of this process so far.
inline double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// "PROGRAM: WHAT: strerror(errno)" on stderr; returns the exit status 1.
inline int fail(const char* program, const char* what) {
  std::fprintf(stderr, "%s: %s: %s\n", program, what, std::strerror(errno));
  return 1;
}

}  // namespace rdmavideo::bench
