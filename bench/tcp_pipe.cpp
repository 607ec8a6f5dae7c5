// SPDX-License-Identifier: Apache-2.0
// rdmavideo-tcp-pipe: the plain TCP reference for bench/run_tcp_bench.py and
// bench/run_fanout_bench.py. One side listens and reads until EOF into a 4 MiB buffer; the
// other connects and writes N bytes, 4 MiB per write; with --connect given several times, it
// writes N bytes to each from the same buffer, a thread per connection (the plain peer of a
// fan-out). No framing, no copies beyond the kernel's: what TCP sockets can move here.
// --zerocopy writes with MSG_ZEROCOPY (the kernel sends from the buffer's pages instead of
// copying them, and says when it is done with them on the socket's error queue).
// Each side prints one JSON line: {"role", "bytes", "seconds", "cpu_seconds", "gbytes_per_s"}
// (--zerocopy adds "zerocopy_copied": notifications in which the kernel copied after all).
//
//   rdmavideo-tcp-pipe --listen PORT [--host ADDR]     (PORT 0: any free port)
//   rdmavideo-tcp-pipe --connect HOST:PORT [--connect HOST:PORT ...] --bytes N [--zerocopy]
//
// The listener prints "listening on ADDR:PORT" on stderr once it accepts connections.
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
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
  std::fprintf(stderr,
               "usage: rdmavideo-tcp-pipe --listen PORT [--host ADDR]\n"
               "       rdmavideo-tcp-pipe --connect HOST:PORT [--connect HOST:PORT ...] --bytes N "
               "[--zerocopy]\n");
  return 2;
}

void report(const char* role, uint64_t bytes, double seconds, double cpu, long copied = -1) {
  char extra[64] = "";
  if (copied >= 0) std::snprintf(extra, sizeof extra, ", \"zerocopy_copied\": %ld", copied);
  std::printf(
      "{\"role\": \"%s\", \"bytes\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, "
      "\"gbytes_per_s\": %.4f%s}\n",
      role, static_cast<unsigned long long>(bytes), seconds, cpu,
      seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0, extra);
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

// MSG_ZEROCOPY's completions: takes what is on the socket's error queue (waiting up to `wait_ms`
// for some) and returns how many zerocopy sends it completed; `copied` counts notifications in
// which the kernel copied the bytes after all.
long reap_zerocopy(int fd, int wait_ms, std::atomic<long>& copied) {
  long completed = 0;
  bool waited = false;
  for (;;) {
    char control[128];
    msghdr msg{};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (completed > 0 || wait_ms == 0 || waited) return completed;
      pollfd p{fd, 0, 0};  // the error queue wakes poll with POLLERR
      if (poll(&p, 1, wait_ms) <= 0) return completed;
      waited = true;
      continue;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      sock_extended_err error{};
      std::memcpy(&error, CMSG_DATA(c), sizeof error);
      if (error.ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      completed += static_cast<long>(error.ee_data - error.ee_info) + 1;
      if (error.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) ++copied;
    }
  }
}

// Writes `bytes` from `buffer` (4 MiB per write), half-closes and waits for the reader's EOF,
// so the time covers delivery, not just buffering. False on a failed send.
bool write_all(int fd, const std::vector<char>& buffer, uint64_t bytes, bool zerocopy,
               std::atomic<long>& copied) {
  uint64_t left = bytes;
  long pending = 0;  // zerocopy sends not completed yet
  while (left > 0) {
    const size_t want = left < kChunk ? static_cast<size_t>(left) : kChunk;
    size_t done = 0;
    while (done < want) {
      const int flags = MSG_NOSIGNAL | (zerocopy ? MSG_ZEROCOPY : 0);
      const ssize_t n = send(fd, buffer.data() + done, want - done, flags);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (zerocopy && errno == ENOBUFS) {  // too many completions untaken: take some
          pending -= reap_zerocopy(fd, 100, copied);
          continue;
        }
        return false;
      }
      done += static_cast<size_t>(n);
      if (zerocopy) pending -= reap_zerocopy(fd, 0, copied) - 1;
    }
    left -= want;
  }
  while (pending > 0) {
    const long completed = reap_zerocopy(fd, 1000, copied);
    if (completed == 0) return false;
    pending -= completed;
  }
  shutdown(fd, SHUT_WR);
  char sink[64];
  while (recv(fd, sink, sizeof sink, 0) > 0) {
  }
  return true;
}

int run_connect(const std::vector<std::string>& endpoints, uint64_t bytes, bool zerocopy) {
  std::vector<int> fds;
  for (const auto& endpoint : endpoints) {
    const int fd = connect_to(endpoint);
    if (fd < 0) return fail("connect");
    const int one = 1;
    if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0) {
      return fail("setsockopt SO_ZEROCOPY");
    }
    fds.push_back(fd);
  }
  std::atomic<long> copied{0};
  // One buffer for every connection; every page touched once so the first writes do not pay
  // for page faults.
  const std::vector<char> buffer(kChunk, '\x5a');
  const double cpu_start = cpu_seconds();
  const auto start = Clock::now();
  std::atomic<bool> ok{true};
  std::vector<std::thread> writers;
  for (int fd : fds) {
    writers.emplace_back([&, fd] {
      if (!write_all(fd, buffer, bytes, zerocopy, copied)) ok = false;
    });
  }
  for (auto& w : writers) w.join();
  if (!ok) return fail("send");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  for (int fd : fds) close(fd);
  report("connect", bytes * fds.size(), seconds, cpu, zerocopy ? copied.load() : -1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen_port, host = "127.0.0.1";
  std::vector<std::string> connect_to;
  uint64_t bytes = 0;
  bool have_bytes = false, zerocopy = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    }
    if (arg == "--zerocopy") {
      zerocopy = true;
      continue;
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
  return run_connect(connect_to, bytes, zerocopy);
}
