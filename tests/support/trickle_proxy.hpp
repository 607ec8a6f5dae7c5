// SPDX-License-Identifier: Apache-2.0
// Test support: a receiver that reads slowly but keeps reading, made of a real one behind a
// relay that passes the sender's bytes on at a set rate.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rdmavideo::testing {

// A TCP relay to a receiver that passes the sender's bytes on at `rate` bytes a second and
// the receiver's at once: a receiver that reads slowly but never stops (so no "stopped
// reading" limit fires). One connection; stops with the test.
class TrickleProxy {
 public:
  TrickleProxy(int target_port, size_t rate) : target_port_(target_port), rate_(rate) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 1) != 0) {
      throw std::runtime_error("proxy: bind/listen failed");
    }
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TrickleProxy() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void run() {
    pollfd l{listen_fd_, POLLIN, 0};
    while (!stop_ && poll(&l, 1, 50) == 0) {
    }
    if (stop_) return;
    const int from = accept(listen_fd_, nullptr, nullptr);
    const int to = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (from < 0 || connect(to, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (from >= 0) close(from);
      close(to);
      return;
    }
    std::vector<char> buf(65536);
    double allowance = 0;
    auto last = std::chrono::steady_clock::now();
    while (!stop_) {
      const auto now = std::chrono::steady_clock::now();
      allowance = std::min<double>(
          allowance + std::chrono::duration<double>(now - last).count() * rate_, 65536);
      last = now;
      pollfd p[2] = {{from, static_cast<short>(allowance >= 1 ? POLLIN : 0), 0}, {to, POLLIN, 0}};
      if (poll(p, 2, 10) < 0) break;
      if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {  // the receiver's messages, at once
        const ssize_t n = ::recv(to, buf.data(), buf.size(), 0);
        if (n <= 0 || ::send(from, buf.data(), static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {  // the sender's, at the rate
        const ssize_t n = ::recv(from, buf.data(),
                                 std::min<size_t>(buf.size(), static_cast<size_t>(allowance)), 0);
        if (n <= 0 || ::send(to, buf.data(), static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
        allowance -= static_cast<double>(n);
      }
    }
    close(from);
    close(to);
  }
  int target_port_;
  size_t rate_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rdmavideo::testing
