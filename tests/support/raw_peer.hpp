// SPDX-License-Identifier: Apache-2.0
// Test support: a hand-driven sender speaking the protocol's raw bytes over TCP, for tests
// that play a broken, hostile or paused peer.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::testing {

// A hand-driven sender speaking raw bytes.
class RawPeer {
 public:
  explicit RawPeer(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect failed");
    }
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const int one = 1;  // each message goes out at once, as the real sender's do
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawPeer() { close(fd_); }
  int fd() const { return fd_; }

  void send_bytes(std::span<const std::byte> bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void send(const proto::Message& m) { send_bytes(proto::encode(m)); }

  // The next message, or nullopt when the receiver closed.
  std::optional<proto::Message> receive() {
    std::vector<std::byte> header(proto::kHeaderBytes);
    if (!read_exact(header)) return std::nullopt;
    auto h = proto::decode_header(header);
    if (!h) throw std::runtime_error(h.error().message());
    std::vector<std::byte> body(h->length);
    if (!read_exact(body)) return std::nullopt;
    auto m = proto::decode(*h, body);
    if (!m) throw std::runtime_error(m.error().message());
    return *m;
  }

  // Reads until the receiver closes; returns the Error message it sent, if any.
  std::optional<proto::ErrorMessage> error_before_close() {
    std::optional<proto::ErrorMessage> error;
    while (auto m = receive()) {
      if (auto* e = std::get_if<proto::ErrorMessage>(&*m)) error = *e;
    }
    return error;
  }

  proto::HelloAck handshake() {
    proto::Hello hello;  // this build's versions
    hello.max_frame_bytes = 1 << 20;
    hello.software = "raw test peer";
    send(hello);
    auto ack = receive();
    if (!ack || !std::holds_alternative<proto::HelloAck>(*ack)) throw std::runtime_error("no HelloAck");
    return std::get<proto::HelloAck>(*ack);
  }

  // A stream of small_format() up to a FrameWritten whose payload is the caller's to send
  // (or not). Returns the format.
  proto::StreamStart begin_frame();

  // StreamStart, then the RingInfo and the first credits.
  std::pair<proto::RingInfo, proto::CreditReturn> start(const proto::StreamStart& format) {
    send(format);
    auto ring = receive();
    if (ring) {
      if (auto* e = std::get_if<proto::ErrorMessage>(&*ring)) {
        throw std::runtime_error("StreamStart refused: " + e->text);
      }
    }
    auto credits = receive();
    if (!ring || !credits) throw std::runtime_error("no RingInfo/CreditReturn");
    return {std::get<proto::RingInfo>(*ring), std::get<proto::CreditReturn>(*credits)};
  }

 private:
  bool read_exact(std::span<std::byte> buf) {
    size_t done = 0;
    while (done < buf.size()) {
      const ssize_t n = recv(fd_, buf.data() + done, buf.size() - done, 0);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  int fd_ = -1;
};

// Sockets that connect and say nothing, opened without blocking (past the listener's backlog
// a blocking connect would wait for the kernel to retry its SYN).
class Flood {
 public:
  Flood(int port, int count) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < count; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      (void)connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fds_.push_back(fd);
    }
  }
  ~Flood() { close_all(); }
  void close_all() {
    for (int fd : fds_) close(fd);
    fds_.clear();
  }
  size_t size() const { return fds_.size(); }

 private:
  std::vector<int> fds_;
};

// A small stream: 64x36 UYVY at 30 fps, stream 1, ring epoch 1.
inline proto::StreamStart small_format() {
  auto f = proto::make_stream_start(PixelFormat::uyvy, 64, 36, {30, 1});
  f->stream_id = 1;
  f->ring_epoch = 1;
  f->name = "bad peer";
  return *f;
}

inline proto::StreamStart RawPeer::begin_frame() {
  handshake();
  const auto format = small_format();
  auto [ring, credits] = start(format);
  send(proto::FrameWritten{ring.ring_epoch, credits.slots[0], 0, 0, 0,
                           format.layout.frame_bytes, 0, 0});
  return format;
}

}  // namespace rdmavideo::testing
