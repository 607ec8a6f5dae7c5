// SPDX-License-Identifier: Apache-2.0
// TCP sender: handshake, credits read from the socket without blocking, and frames written
// from the caller's buffer with one sendmsg (header and payload together).
#include <sys/socket.h>

#include "rdmavideo/log.hpp"
#include "rdmavideo/ring.hpp"
#include "rdmavideo/stats.hpp"
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr char kSoftware[] = "rdmavideo " RDMAVIDEO_VERSION;

class TcpSenderConnection final : public SenderConnection {
 public:
  TcpSenderConnection(Socket socket, const ConnectOptions& options)
      : socket_(std::move(socket)),
        timeouts_(options.timeouts),
        who_(fmt::format("send {}", socket_.peer())) {}

  ~TcpSenderConnection() override = default;

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return socket_.peer(); }
  bool receiver_ended() const override { return receiver_ended_; }

  Result<void> handshake(const ConnectOptions& options) {
    proto::Hello hello;
    hello.max_frame_bytes = options.max_frame_bytes;
    hello.credits_requested = options.credits_requested;
    hello.flags = proto::kCapChecksum;
    hello.software = kSoftware;
    IoPolicy policy{timeouts_.connect, timeouts_.connect, nullptr};
    if (auto ok = write_message(socket_, hello, policy); !ok) return fail(ok.error());
    auto reply = read_message(socket_, policy);
    if (!reply) return fail(reply.error());
    if (const auto* error = std::get_if<proto::ErrorMessage>(&*reply)) {
      return fail(Error(error->code, fmt::format("receiver refused: {}", error->text)));
    }
    const auto* ack = std::get_if<proto::HelloAck>(&*reply);
    if (!ack) {
      return fail(Error(ErrorCode::protocol,
                        fmt::format("expected HelloAck, got {}",
                                    proto::to_string(proto::type_of(*reply)))));
    }
    if (ack->max_frame_bytes < options.max_frame_bytes) {
      return fail(Error(ErrorCode::unsupported,
                        fmt::format("receiver accepts frames up to {} bytes (HelloAck.max_frame_bytes); "
                                    "this stream's are {} bytes",
                                    ack->max_frame_bytes, options.max_frame_bytes)));
    }
    log().debug("[{}] HelloAck from \"{}\": version {}, {} credits", who_, ack->software,
                ack->version, ack->credits);
    return {};
  }

  Result<proto::RingInfo> start_stream(const proto::StreamStart& format) override {
    proto::StreamStart m = format;
    m.stream_id = ++stream_id_;
    if (!m.name.empty()) who_ = fmt::format("send {} \"{}\"", socket_.peer(), m.name);
    ring_.reset();
    pool_.reset();
    if (auto ok = send(m); !ok) return fail(ok.error());
    // Wait for the RingInfo that answers this StreamStart and its first credits (so a live
    // sender does not drop its first frame); credits of an older ring that cross it on the
    // wire are dropped by pump().
    const auto deadline = Clock::now() + timeouts_.connect;
    while (!ring_ || pool_->available() == 0) {
      if (receiver_ended_) {
        return make_error(ErrorCode::peer_closed, "{}: receiver ended the stream", who_);
      }
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        return fail(Error(ErrorCode::timeout,
                          fmt::format("no {} within {} ms of StreamStart",
                                      ring_ ? "CreditReturn" : "RingInfo",
                                      timeouts_.connect.count())));
      }
      if (auto ok = pump(left); !ok) return fail(ok.error());
    }
    if (ring_->slot_bytes < m.layout.frame_bytes) {
      return fail(Error(ErrorCode::protocol,
                        fmt::format("RingInfo.slot_bytes {} smaller than a frame ({} bytes)",
                                    ring_->slot_bytes, m.layout.frame_bytes)));
    }
    frame_bytes_ = m.layout.frame_bytes;
    return *ring_;
  }

  Result<std::optional<Credit>> acquire(milliseconds wait) override {
    const auto deadline = Clock::now() + wait;
    for (;;) {
      if (!pool_) return make_error(ErrorCode::invalid_argument, "{}: acquire before start_stream", who_);
      if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
      if (receiver_ended_) return std::optional<Credit>{};
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 && wait.count() > 0) return std::optional<Credit>{};
      if (auto ok = pump(wait.count() > 0 ? std::max(left, milliseconds(0)) : milliseconds(0)); !ok) {
        return fail(ok.error());
      }
      if (wait.count() == 0) {
        if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
        return std::optional<Credit>{};
      }
    }
  }

  Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                          const proto::FrameWritten& info) override {
    if (!ring_ || credit.ring_epoch != ring_->ring_epoch) {
      return make_error(ErrorCode::invalid_argument, "{}: credit for ring {} is not the current ring",
                        who_, credit.ring_epoch);
    }
    if (frame.size() != frame_bytes_) {
      return make_error(ErrorCode::invalid_argument, "{}: frame of {} bytes, stream needs {}", who_,
                        frame.size(), frame_bytes_);
    }
    proto::FrameWritten m = info;
    m.ring_epoch = credit.ring_epoch;
    m.slot = credit.slot;
    m.bytes = static_cast<uint32_t>(frame.size());
    header_.clear();
    proto::encode(m, header_);
    iovec iov[2] = {{header_.data(), header_.size()},
                    {const_cast<std::byte*>(frame.data()), frame.size()}};
    // No keepalive may be written in the middle of a frame, so no on_tick here.
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    if (auto ok = socket_.write_all(iov, policy, "frame"); !ok) return fail(ok.error());
    last_sent_ = Clock::now();
    return {};
  }

  // TCP copies the frame into the kernel before send_frame returns.
  Result<void> wait_idle(std::span<const std::byte>) override { return {}; }

  Result<void> keep_alive() override {
    if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
    if (auto ok = pump(milliseconds(0)); !ok) return fail(ok.error());
    return {};
  }

  Result<void> end_stream(const proto::EndOfStream& end) override {
    if (closed_) return {};
    auto ok = send(end);
    closed_ = true;
    // Half-close, then read until the receiver closes: closing with unread credits in our
    // buffer would reset the connection and could cost the receiver the last frames.
    shutdown(socket_.fd(), SHUT_WR);
    const auto deadline = Clock::now() + timeouts_.peer;
    std::array<std::byte, 65536> sink;
    while (Clock::now() < deadline) {
      auto ready = socket_.wait_readable(milliseconds(100));
      if (!ready) break;
      if (!*ready) continue;
      auto n = socket_.read_available(sink);
      if (!n) break;
    }
    socket_.close();
    if (!ok) return Unexpected(ok.error().context(who_));
    return {};
  }

 private:
  Result<void> send(const proto::Message& message) {
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    auto ok = write_message(socket_, message, policy);
    if (ok) last_sent_ = Clock::now();
    return ok;
  }

  // Reads what the receiver sent, waiting up to `wait` for something to arrive, and acts on
  // every complete message. Sends a keepalive when we have been quiet.
  Result<void> pump(milliseconds wait) {
    if (Clock::now() - last_sent_ >= timeouts_.keepalive) {
      if (auto ok = send(proto::Keepalive{stats::realtime_ns()}); !ok) return ok;
    }
    auto got = read_into_inbox();
    if (!got) return Unexpected(got.error());
    if (*got == 0 && wait.count() > 0) {
      auto ready = socket_.wait_readable(std::min(wait, timeouts_.keepalive));
      if (!ready) return Unexpected(ready.error());
      if (*ready) {
        got = read_into_inbox();
        if (!got) return Unexpected(got.error());
      }
    }
    if (Clock::now() - last_heard_ >= timeouts_.peer) {
      return make_error(ErrorCode::timeout, "receiver silent for {} ms", timeouts_.peer.count());
    }
    if (auto ok = handle_inbox(); !ok) return ok;
    if (peer_eof_ && !receiver_ended_) {
      return make_error(ErrorCode::peer_closed, "receiver closed the connection");
    }
    return {};
  }

  Result<size_t> read_into_inbox() {
    size_t total = 0;
    while (!peer_eof_) {
      const size_t old = inbox_.size();
      inbox_.resize(old + 65536);
      auto n = socket_.read_available(std::span(inbox_).subspan(old));
      inbox_.resize(old + (n ? *n : 0));
      if (!n && n.error().code() == ErrorCode::peer_closed) {
        peer_eof_ = true;  // act on what arrived before the close first
        break;
      }
      if (!n) return Unexpected(n.error());
      if (*n == 0) break;
      total += *n;
      last_heard_ = Clock::now();
    }
    return total;
  }

  Result<void> handle_inbox() {
    size_t used = 0;
    while (inbox_.size() - used >= proto::kHeaderBytes) {
      auto header = proto::decode_header(std::span(inbox_).subspan(used, proto::kHeaderBytes));
      if (!header) return Unexpected(header.error());
      if (inbox_.size() - used < proto::kHeaderBytes + header->length) break;
      auto message = proto::decode(
          *header, std::span(inbox_).subspan(used + proto::kHeaderBytes, header->length));
      used += proto::kHeaderBytes + header->length;
      if (!message) return Unexpected(message.error());
      if (auto ok = handle(*message); !ok) return ok;
    }
    inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(used));
    return {};
  }

  Result<void> handle(const proto::Message& message) {
    switch (proto::type_of(message)) {
      case proto::MessageType::RingInfo: {
        const auto& m = std::get<proto::RingInfo>(message);
        if (m.ring_epoch != stream_id_) {
          return make_error(ErrorCode::protocol, "RingInfo.ring_epoch {} does not answer StreamStart {}",
                            m.ring_epoch, stream_id_);
        }
        ring_ = m;
        pool_.emplace(m.slot_count);
        return {};
      }
      case proto::MessageType::CreditReturn: {
        const auto& m = std::get<proto::CreditReturn>(message);
        if (!ring_ || m.ring_epoch != ring_->ring_epoch) return {};  // an older ring's credits
        return pool_->add(m.slots);
      }
      case proto::MessageType::Keepalive: return {};
      case proto::MessageType::EndOfStream: receiver_ended_ = true; return {};
      case proto::MessageType::Error: {
        const auto& m = std::get<proto::ErrorMessage>(message);
        return Unexpected(Error(m.code == ErrorCode::peer_closed ? ErrorCode::protocol : m.code,
                                fmt::format("receiver reported: {}", m.text)));
      }
      default:
        return make_error(ErrorCode::protocol, "unexpected {} from a receiver",
                          proto::to_string(proto::type_of(message)));
    }
  }

  Unexpected fail(const Error& error) {
    if (!closed_) {
      closed_ = true;
      if (error.code() == ErrorCode::protocol) {
        // The receiver broke the protocol: tell it why before closing (best effort).
        (void)send(proto::ErrorMessage{error.code(), error.message()});
      }
      socket_.close();
    }
    return Unexpected(error.context(who_));
  }

  Socket socket_;
  Timeouts timeouts_;
  std::string who_;                       // "send host:port "name"" for messages
  std::vector<std::byte> inbox_;          // received bytes not yet parsed
  std::vector<std::byte> header_;         // FrameWritten encoding buffer, reused
  uint32_t stream_id_ = 0;                // id of the last StreamStart sent
  uint32_t frame_bytes_ = 0;              // the current stream's frame size
  std::optional<proto::RingInfo> ring_;   // the ring answering stream_id_
  std::optional<ring::CreditPool> pool_;  // credits held for ring_
  bool receiver_ended_ = false;
  bool peer_eof_ = false;  // the receiver closed its side; inbox_ holds its last words
  bool closed_ = false;
  Clock::time_point last_sent_ = Clock::now();
  Clock::time_point last_heard_ = Clock::now();
};

}  // namespace

Result<std::unique_ptr<SenderConnection>> connect(const ConnectOptions& options) {
  auto socket = tcp::connect(options.endpoint, options.timeouts.connect);
  if (!socket) return Unexpected(socket.error().context("send"));
  if (auto ok = socket->configure(options.timeouts.keepalive); !ok) {
    return Unexpected(ok.error().context("send"));
  }
  auto connection = std::make_unique<TcpSenderConnection>(std::move(*socket), options);
  if (auto ok = connection->handshake(options); !ok) return Unexpected(ok.error());
  return std::unique_ptr<SenderConnection>(std::move(connection));
}

}  // namespace rdmavideo::tcp
