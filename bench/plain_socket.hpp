// SPDX-License-Identifier: Apache-2.0
// What the plain socket peers of the benches (tcp_pipe.cpp, paced_socket.cpp) share: their
// CPU time, and a failed call said on one line.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

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

/// One connection taken on HOST:PORT (port 0: any), saying "listening on HOST:PORT" on
/// stderr once it listens (the benches read the port from it). The connected socket, or -1
/// with the failure said (`program: --host H: not an IPv4 address`, or the failed call).
inline int accept_one(const char* program, const std::string& host, uint16_t port) {
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) return fail(program, "socket"), -1;
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "%s: --host %s: not an IPv4 address\n", program, host.c_str());
    close(lfd);
    return -1;
  }
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 1) != 0) {
    fail(program, "bind/listen");
    close(lfd);
    return -1;
  }
  socklen_t len = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::fprintf(stderr, "listening on %s:%u\n", host.c_str(), ntohs(addr.sin_port));
  std::fflush(stderr);
  const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) fail(program, "accept");
  close(lfd);
  return fd;
}

}  // namespace rdmavideo::bench
