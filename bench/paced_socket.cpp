// SPDX-License-Identifier: Apache-2.0
// rdmavideo-paced-socket: the plain live peer for bench/run_live_bench.py. What an application
// without rdmavideo would do to send 4K60 over TCP: a frame every period, one blocking send of
// the whole frame, no framing beyond a 16-byte header (sequence and due time), and a reader
// that drains each frame into the next slot of a ring of frame-sized buffers (as
// rdmavideo-recv's ring). Nothing is dropped: a frame that comes due while the last is still
// being written is written as soon as the socket takes it.
//
//   rdmavideo-paced-socket --listen PORT --frame-bytes N [--slots S] [--host ADDR]
//                          [--read waitall]
//   rdmavideo-paced-socket --connect HOST:PORT --frame-bytes N --rate FPS --frames F
//                          [--buffers B] [--max-lateness-ms MS] [--write-bytes N]
//
// --write-bytes N: each send() call offers at most N bytes (default: all of the frame that is
// left, as a sendall does). --read waitall: each frame is read by one recv(MSG_WAITALL), as
// rdmavideo-recv reads it (default: recv() of what is left, returning with what has come).
//
// The sender's latency of a frame runs from its due time to the end of its write (what
// rdmavideo-send's latency measures); `late` counts frames whose write began more than
// --max-lateness-ms after they were due (what a live rdmavideo sender with that bound would
// have dropped). The reader's latency runs from the due time to the frame's last byte (one
// machine, one monotonic clock). Each side prints one JSON line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "plain_socket.hpp"

namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_until_ns(uint64_t when) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(when / 1'000'000'000u);
  ts.tv_nsec = static_cast<long>(when % 1'000'000'000u);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

using rdmavideo::bench::cpu_seconds;

int fail(const char* what) { return rdmavideo::bench::fail("rdmavideo-paced-socket", what); }

int usage() {
  std::fprintf(stderr,
               "usage: rdmavideo-paced-socket --listen PORT --frame-bytes N [--slots S] "
               "[--host ADDR] [--read waitall]\n"
               "       rdmavideo-paced-socket --connect HOST:PORT --frame-bytes N --rate FPS "
               "--frames F [--buffers B] [--max-lateness-ms MS] [--write-bytes N]\n");
  return 2;
}

struct Header {
  uint64_t sequence;
  uint64_t due_ns;
};

// p50, p99 and max of `ms`, in the JSON form rdmavideo's summaries use.
std::string latency_json(std::vector<double> ms) {
  if (ms.empty()) return "{\"p50\": 0, \"p99\": 0, \"max\": 0}";
  std::sort(ms.begin(), ms.end());
  auto at = [&](double fraction) {
    const auto rank =
        static_cast<size_t>(std::max(1.0, fraction * static_cast<double>(ms.size()) + 0.5));
    return ms[std::min(rank, ms.size()) - 1];
  };
  char text[128];
  std::snprintf(text, sizeof text, "{\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}", at(0.5),
                at(0.99), ms.back());
  return text;
}

bool read_exact(int fd, char* to, size_t bytes, int flags = 0) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = recv(fd, to + done, bytes - done, flags);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// One send() call for at most `slice` bytes (0: all that is left).
bool write_exact(int fd, const char* from, size_t bytes, size_t slice = 0) {
  size_t done = 0;
  while (done < bytes) {
    const size_t want = slice ? std::min(slice, bytes - done) : bytes - done;
    const ssize_t n = send(fd, from + done, want, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

int run_listen(const std::string& host, uint16_t port, size_t frame_bytes, size_t slots,
               bool waitall) {
  // The ring, every page touched now (rdmavideo-recv maps its ring up front too).
  std::vector<char> ring(frame_bytes * slots, '\0');
  const int fd = rdmavideo::bench::accept_one("rdmavideo-paced-socket", host, port);
  if (fd < 0) return 1;
  std::vector<double> latency_ms;
  uint64_t frames = 0, first_ns = 0, last_ns = 0;
  double cpu_start = 0;
  for (;;) {
    Header header{};
    if (!read_exact(fd, reinterpret_cast<char*>(&header), sizeof header)) break;
    if (frames == 0) {
      first_ns = now_ns();
      cpu_start = cpu_seconds();
    }
    if (!read_exact(fd, ring.data() + (frames % slots) * frame_bytes, frame_bytes,
                    waitall ? MSG_WAITALL : 0)) {
      break;
    }
    last_ns = now_ns();
    latency_ms.push_back(static_cast<double>(last_ns - header.due_ns) / 1e6);
    ++frames;
  }
  const double seconds = frames ? static_cast<double>(last_ns - first_ns) / 1e9 : 0.0;
  std::printf(
      "{\"role\": \"listen\", \"frames\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, "
      "\"latency_ms\": %s}\n",
      static_cast<unsigned long long>(frames), seconds, cpu_seconds() - cpu_start,
      latency_json(latency_ms).c_str());
  std::fflush(stdout);
  close(fd);
  return 0;
}

int run_connect(const std::string& endpoint, size_t frame_bytes, double rate, uint64_t count,
                size_t buffers, double max_lateness_ms, size_t slice) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) return usage();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(endpoint.c_str() + colon + 1)));
  if (inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &addr.sin_addr) != 1) return usage();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket");
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("connect");
  // Frames in distinct buffers, each touched now: a source's frames are not one cached block.
  std::vector<std::vector<char>> frames(buffers, std::vector<char>(frame_bytes));
  for (size_t b = 0; b < buffers; ++b)
    std::memset(frames[b].data(), 0x40 + static_cast<int>(b), frame_bytes);
  const double period_ns = 1e9 / rate;
  const double bound_ns = max_lateness_ms * 1e6;
  std::vector<double> latency_ms;
  uint64_t late = 0;
  const double cpu_start = cpu_seconds();
  const uint64_t start = now_ns() + 10'000'000;  // the first frame 10 ms from now
  uint64_t last_end = start;
  for (uint64_t i = 0; i < count; ++i) {
    const auto due = start + static_cast<uint64_t>(static_cast<double>(i) * period_ns);
    sleep_until_ns(due);
    const uint64_t began = now_ns();
    if (static_cast<double>(began - due) > bound_ns) ++late;
    const Header header{i, due};
    if (!write_exact(fd, reinterpret_cast<const char*>(&header), sizeof header) ||
        !write_exact(fd, frames[i % buffers].data(), frame_bytes, slice)) {
      return fail("send");
    }
    last_end = now_ns();
    latency_ms.push_back(static_cast<double>(last_end - due) / 1e6);
  }
  const double cpu = cpu_seconds() - cpu_start;
  shutdown(fd, SHUT_WR);
  char sink[64];
  while (recv(fd, sink, sizeof sink, 0) > 0) {
  }
  close(fd);
  const double seconds = static_cast<double>(last_end - start) / 1e9;
  std::printf(
      "{\"role\": \"connect\", \"frames\": %llu, \"late\": %llu, \"seconds\": %.6f, "
      "\"fps\": %.3f, \"cpu_seconds\": %.6f, \"latency_ms\": %s}\n",
      static_cast<unsigned long long>(count), static_cast<unsigned long long>(late), seconds,
      seconds > 0 ? static_cast<double>(count) / seconds : 0.0, cpu,
      latency_json(latency_ms).c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen_port, connect_to, host = "127.0.0.1";
  double rate = 60, max_lateness_ms = 1e12;
  unsigned long long frame_bytes = 0, frames = 0, slots = 8, buffers = 3, slice = 0;
  bool waitall = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view arg = argv[i];
    const char* value = argv[i + 1];
    if (arg == "--listen")
      listen_port = value;
    else if (arg == "--host")
      host = value;
    else if (arg == "--connect")
      connect_to = value;
    else if (arg == "--frame-bytes")
      frame_bytes = std::strtoull(value, nullptr, 10);
    else if (arg == "--frames")
      frames = std::strtoull(value, nullptr, 10);
    else if (arg == "--slots")
      slots = std::strtoull(value, nullptr, 10);
    else if (arg == "--buffers")
      buffers = std::strtoull(value, nullptr, 10);
    else if (arg == "--rate")
      rate = std::strtod(value, nullptr);
    else if (arg == "--max-lateness-ms")
      max_lateness_ms = std::strtod(value, nullptr);
    else if (arg == "--write-bytes")
      slice = std::strtoull(value, nullptr, 10);
    else if (arg == "--read" && std::string_view(value) == "waitall")
      waitall = true;
    else
      return usage();
  }
  if (argc % 2 == 0 || frame_bytes == 0 || listen_port.empty() == connect_to.empty())
    return usage();
  if (!listen_port.empty()) {
    if (slots == 0) return usage();
    return run_listen(host, static_cast<uint16_t>(std::atoi(listen_port.c_str())), frame_bytes,
                      slots, waitall);
  }
  if (frames == 0 || buffers == 0 || !(rate > 0)) return usage();
  return run_connect(connect_to, frame_bytes, rate, frames, buffers, max_lateness_ms, slice);
}
