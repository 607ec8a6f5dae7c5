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

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
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
    if (!ack || !std::holds_alternative<proto::HelloAck>(*ack))
      throw std::runtime_error("no HelloAck");
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
  send(proto::FrameWritten{ring.ring_epoch, credits.slots[0], 0, 0, 0, format.layout.frame_bytes, 0,
                           0});
  return format;
}

// A hand-driven sender of small_format() frames with sound beside them, for tests of what
// a receiver makes of odd but well-formed media: frames written into the slots it was
// credited (waiting for credits as a sender does), audio chunks of any size and pts.
class MediaPeer {
 public:
  explicit MediaPeer(int port, const proto::StreamStart& format = small_format())
      : peer_(port), format_(live(format)), payload_(format.layout.frame_bytes, std::byte{0x80}) {
    peer_.handshake();
    auto [ring, credits] = peer_.start(format_);
    epoch_ = ring.ring_epoch;
    free_ = credits.slots;
  }
  RawPeer& raw() { return peer_; }

  // A format change mid-stream: StreamStart again with the next ring epoch; frames go on
  // into the new ring once it is credited.
  void restart(proto::StreamStart format) {
    format = live(format);
    format.ring_epoch = epoch_ + 1;
    peer_.send(format);
    format_ = format;
    payload_.assign(format.layout.frame_bytes, std::byte{0x80});
    free_.clear();
    for (bool have_ring = false;;) {
      auto m = peer_.receive();
      if (!m) throw std::runtime_error("the receiver closed the connection");
      if (auto* e = std::get_if<proto::ErrorMessage>(&*m))
        throw std::runtime_error("receiver: " + e->text);
      if (auto* r = std::get_if<proto::RingInfo>(&*m)) {
        epoch_ = r->ring_epoch;
        have_ring = true;
      }
      auto* c = std::get_if<proto::CreditReturn>(&*m);
      if (have_ring && c && c->ring_epoch == epoch_) {
        free_ = c->slots;
        return;
      }
    }
  }

  // A 48 kHz s16 stereo track `stream_id` (not the video's).
  static proto::AudioStart stereo_s16(uint32_t stream_id, const std::string& name = "tone") {
    proto::AudioStart a;
    a.stream_id = stream_id;
    a.sample_format = proto::SampleFormat::s16;
    a.sample_rate = 48000;
    a.channels = 2;
    a.name = name;
    return a;
  }
  void start_audio(const proto::AudioStart& a) { peer_.send(a); }

  // The next frame, into a slot the receiver credited (reading its messages until one is).
  void frame(int64_t pts_ns) {
    while (free_.empty()) {
      auto m = peer_.receive();
      if (!m) throw std::runtime_error("the receiver closed the connection");
      if (auto* e = std::get_if<proto::ErrorMessage>(&*m))
        throw std::runtime_error("receiver: " + e->text);
      auto* c = std::get_if<proto::CreditReturn>(&*m);
      if (c && c->ring_epoch == epoch_) free_.insert(free_.end(), c->slots.begin(), c->slots.end());
    }
    const uint32_t slot = free_.front();
    free_.erase(free_.begin());
    peer_.send(proto::FrameWritten{epoch_, slot, sequence_++, pts_ns, 0, format_.layout.frame_bytes,
                                   0, 0});
    peer_.send_bytes(payload_);
  }

  // `samples` of a 1 kHz tone at half scale from sample `first` of the track (48 kHz s16
  // stereo), stamped `pts_ns`.
  void tone(uint32_t stream_id, uint64_t first, uint32_t samples, int64_t pts_ns) {
    proto::AudioChunk c;
    c.stream_id = stream_id;
    c.samples = samples;
    c.pts_ns = pts_ns;
    c.data.resize(size_t{samples} * 4);
    for (uint32_t i = 0; i < samples; ++i) {
      const double t = static_cast<double>(first + i) / 48000.0;
      const auto v = static_cast<int16_t>(16383 * std::sin(2 * 3.141592653589793 * 1000 * t));
      std::memcpy(&c.data[size_t{i} * 4], &v, 2);
      std::memcpy(&c.data[size_t{i} * 4 + 2], &v, 2);
    }
    peer_.send(c);
  }

  // `seconds` of frames at the format's rate, paced in real time, each followed by its
  // period's tone in chunks of `chunk` samples, all on the picture's clock (audio stream
  // `stream_id`; 0: frames alone).
  void play(uint32_t stream_id, double seconds, uint32_t chunk) {
    const auto rate = format_.frame_rate;
    const auto frames = static_cast<uint64_t>(seconds * rate.num / rate.den);
    const auto began = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < frames; ++i, ++frames_) {
      const int64_t pts = static_cast<int64_t>(frames_ * 1'000'000'000 * rate.den / rate.num);
      frame(pts);
      const uint64_t until = (frames_ + 1) * 48000 * rate.den / rate.num;
      while (stream_id != 0 && samples_ < until) {
        const auto n = static_cast<uint32_t>(std::min<uint64_t>(chunk, until - samples_));
        tone(stream_id, samples_, n, static_cast<int64_t>(samples_ * 1'000'000'000 / 48000));
        samples_ += n;
      }
      std::this_thread::sleep_until(
          began + std::chrono::nanoseconds((i + 1) * 1'000'000'000 * rate.den / rate.num));
    }
  }
  // Paced in real time, as a capture is: the stream says it is live.
  static proto::StreamStart live(proto::StreamStart format) {
    format.flags |= proto::kStreamLive;
    return format;
  }

  void end() { peer_.send(proto::EndOfStream{sequence_, 0}); }

 private:
  RawPeer peer_;
  proto::StreamStart format_;
  std::vector<std::byte> payload_;
  uint32_t epoch_ = 0;
  std::vector<uint32_t> free_;  // slots credited and not yet written
  uint64_t sequence_ = 0;
  uint64_t frames_ = 0;   // play()'s frames so far
  uint64_t samples_ = 0;  // play()'s samples so far
};

}  // namespace rdmavideo::testing
