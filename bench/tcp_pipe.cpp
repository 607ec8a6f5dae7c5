// SPDX-License-Identifier: Apache-2.0
// rdmavideo-tcp-pipe: the plain TCP reference for bench/run_tcp_bench.py and
// bench/run_fanout_bench.py. One side listens and reads until EOF into a 4 MiB buffer; the
// other connects and writes N bytes, 4 MiB per write; with --connect given several times, it
// writes N bytes to each from the same buffer, a thread per connection (the plain peer of a
// fan-out). No framing, no copies beyond the kernel's: what TCP sockets can move here.
// Each side prints one JSON line: {"role", "bytes", "seconds", "cpu_seconds", "gbytes_per_s"}.
//
//   rdmavideo-tcp-pipe --listen PORT [--host ADDR]     (PORT 0: any free port)
//   rdmavideo-tcp-pipe --connect HOST:PORT [--connect HOST:PORT ...] --bytes N
//
// The listener prints "listening on ADDR:PORT" on stderr once it accepts connections.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "plain_socket.hpp"

namespace {

constexpr size_t kChunk = size_t{4} << 20;  // 4 MiB per read and per write

using Clock = std::chrono::steady_clock;

using rdmavideo::bench::cpu_seconds;

int fail(const char* what) { return rdmavideo::bench::fail("rdmavideo-tcp-pipe", what); }

int usage() {
  std::fprintf(
      stderr,
      "usage: rdmavideo-tcp-pipe --listen PORT [--host ADDR]\n"
      "       rdmavideo-tcp-pipe --connect HOST:PORT [--connect HOST:PORT ...] --bytes N\n");
  return 2;
}

void report(const char* role, uint64_t bytes, double seconds, double cpu) {
  std::printf(
      "{\"role\": \"%s\", \"bytes\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, "
      "\"gbytes_per_s\": %.4f}\n",
      role, static_cast<unsigned long long>(bytes), seconds, cpu,
      seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
  std::fflush(stdout);
}

bool parse_u64(const char* text, uint64_t& out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

int run_listen(const std::string& host, uint16_t port) {
  const int fd = rdmavideo::bench::accept_one("rdmavideo-tcp-pipe", host, port);
  if (fd < 0) return 1;

  std::vector<char> buffer(kChunk);
  uint64_t total = 0;
  // The clock starts at the first byte, like rdmavideo-recv's stats start at its first stream.
  Clock::time_point start{};
  double cpu_start = 0;
  for (;;) {
    const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("recv");
    }
    if (total == 0) {
      start = Clock::now();
      cpu_start = cpu_seconds();
    }
    total += static_cast<uint64_t>(n);
  }
  const double seconds = total ? std::chrono::duration<double>(Clock::now() - start).count() : 0.0;
  const double cpu = cpu_seconds() - cpu_start;
  close(fd);
  report("listen", total, seconds, cpu);
  return 0;
}

int connect_to(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) return -1;
  const std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &result); rc != 0) {
    std::fprintf(stderr, "rdmavideo-tcp-pipe: %s: %s\n", endpoint.c_str(), gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = result; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(result);
  return fd;
}

// Writes `bytes` from `buffer` (4 MiB per write), half-closes and waits for the reader's EOF,
// so the time covers delivery, not just buffering. False on a failed send.
bool write_all(int fd, const std::vector<char>& buffer, uint64_t bytes) {
  uint64_t left = bytes;
  while (left > 0) {
    const size_t want = left < kChunk ? static_cast<size_t>(left) : kChunk;
    size_t done = 0;
    while (done < want) {
      const ssize_t n = send(fd, buffer.data() + done, want - done, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      done += static_cast<size_t>(n);
    }
    left -= want;
  }
  shutdown(fd, SHUT_WR);
  char sink[64];
  while (recv(fd, sink, sizeof sink, 0) > 0) {
  }
  return true;
}

int run_connect(const std::vector<std::string>& endpoints, uint64_t bytes) {
  std::vector<int> fds;
  for (const auto& endpoint : endpoints) {
    const int fd = connect_to(endpoint);
    if (fd < 0) return fail("connect");
    fds.push_back(fd);
  }
  // One buffer for every connection; every page touched once so the first writes do not pay
  // for page faults.
  const std::vector<char> buffer(kChunk, '\x5a');
  const double cpu_start = cpu_seconds();
  const auto start = Clock::now();
  std::atomic<bool> ok{true};
  std::vector<std::thread> writers;
  for (int fd : fds) {
    writers.emplace_back([&, fd] {
      if (!write_all(fd, buffer, bytes)) ok = false;
    });
  }
  for (auto& w : writers) w.join();
  if (!ok) return fail("send");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  for (int fd : fds) close(fd);
  report("connect", bytes * fds.size(), seconds, cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen_port, host = "127.0.0.1";
  std::vector<std::string> connect_to;
  uint64_t bytes = 0;
  bool have_bytes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    }
    if (!value) return usage();
    if (arg == "--listen") {
      listen_port = value;
    } else if (arg == "--host") {
      host = value;
    } else if (arg == "--connect") {
      connect_to.push_back(value);
    } else if (arg == "--bytes") {
      if (!parse_u64(value, bytes)) return usage();
      have_bytes = true;
    } else {
      return usage();
    }
    ++i;
  }
  if (listen_port.empty() == connect_to.empty()) return usage();
  if (!listen_port.empty()) {
    uint64_t port = 0;
    if (!parse_u64(listen_port.c_str(), port) || port > 65535) return usage();
    return run_listen(host, static_cast<uint16_t>(port));
  }
  if (!have_bytes) return usage();
  return run_connect(connect_to, bytes);
}
