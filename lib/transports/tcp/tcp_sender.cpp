// SPDX-License-Identifier: Apache-2.0
// TCP sender: handshake, credits read from the socket without blocking, and frames written
// from the caller's buffer (header and payload in one sendmsg per 4 MiB slice).
#include <sys/socket.h>

#include "rdmavideo/log.hpp"
#include "rdmavideo/stats.hpp"
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using sender::Credit;

class TcpSenderConnection final : public sender::SenderBase {
 public:
  TcpSenderConnection(Socket socket, const ConnectOptions& options)
      : SenderBase(options.timeouts, fmt::format("send {}", socket.peer())),
        socket_(std::move(socket)),
        stop_(options.stop) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return socket_.peer(); }

  Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                          const proto::FrameWritten& info) override {
    if (auto ok = check_frame(credit, frame); !ok) return ok;
    proto::FrameWritten m = info;
    m.ring_epoch = credit.ring_epoch;
    m.slot = credit.slot;
    m.bytes = static_cast<uint32_t>(frame.size());
    header_.clear();
    auth::encode_sealed(m, header_, mac_.get());
    iovec iov[2] = {{header_.data(), header_.size()},
                    {const_cast<std::byte*>(frame.data()), frame.size()}};
    // No keepalive may be written in the middle of a frame, so no on_tick here.
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr, stop_};
    if (auto ok = socket_.write_all(iov, policy, "frame"); !ok) return fail(closed_by_receiver(ok.error()));
    last_sent_ = Clock::now();
    return {};
  }

  // TCP copies the frame into the kernel before send_frame returns: any memory will do, and
  // none is read after it returns.
  Result<void> register_memory(std::span<const std::byte>, std::shared_ptr<const void>) override {
    return {};
  }
  bool registered(std::span<const std::byte>) const override { return true; }
  void forget_memory(std::span<const std::byte>) override {}
  bool in_flight(std::span<const std::byte>) override { return false; }
  Result<void> wait_idle(std::span<const std::byte>) override { return {}; }

  Result<void> end_stream(const proto::EndOfStream& end) override {
    if (closed_) return {};
    auto ok = send_message(end);
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
  Result<void> send_message(const proto::Message& message) override {
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    auto ok = write_message(socket_, message, policy, mac_.get());
    if (!ok) return Unexpected(closed_by_receiver(ok.error()));
    last_sent_ = Clock::now();
    return ok;
  }

  // A write that finds the connection closed says so as a read would, and reports the
  // receiver's last words (an Error, an EndOfStream) where they arrived before the close.
  Error closed_by_receiver(const Error& error) {
    if (error.code() != ErrorCode::peer_closed || reading_last_words_) return error;
    reading_last_words_ = true;
    if (auto got = read_into_inbox(); got) {
      if (auto ok = handle_inbox(); !ok) return ok.error();
    }
    std::string message = error.message();
    if (message.starts_with("peer ")) message.replace(0, 4, "receiver");
    return Error(ErrorCode::peer_closed, std::move(message), error.sys_errno());
  }

  void protect(std::shared_ptr<auth::ControlMac> mac) override { mac_ = std::move(mac); }

  Result<void> pump(milliseconds wait) override {
    if (handshaken_ && Clock::now() - last_sent_ >= timeouts_.keepalive) {
      if (auto ok = send_message(proto::Keepalive{stats::realtime_ns()}); !ok) return ok;
    }
    auto got = read_into_inbox();
    if (!got) return Unexpected(got.error());
    if (*got == 0 && wait.count() > 0 && !peer_eof_) {
      auto ready = socket_.wait_readable(std::min(wait, timeouts_.keepalive), stop_);
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
      // handle() may turn authentication on: each message is opened as the one before left it.
      const size_t whole = proto::kHeaderBytes + header->length + auth::tag_bytes(mac_.get());
      if (inbox_.size() - used < whole) break;
      auto message = auth::decode_sealed(std::span(inbox_).subspan(used, whole), mac_.get());
      used += whole;
      if (!message) return Unexpected(message.error());
      if (auto ok = handle(*message); !ok) return ok;
    }
    inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(used));
    return {};
  }

  Unexpected fail(const Error& error) override {
    if (!closed_) {
      closed_ = true;
      if (tell_receiver(error)) {
        // The receiver broke the protocol or failed to authenticate: tell it why before
        // closing (best effort).
        (void)send_message(proto::ErrorMessage{error.code(), error.message()});
      }
      socket_.close();
    }
    return Unexpected(error.context(who_));
  }

  Socket socket_;
  std::vector<std::byte> inbox_;   // received bytes not yet parsed
  std::vector<std::byte> header_;  // FrameWritten encoding buffer, reused
  const std::atomic<bool>* stop_;  // ConnectOptions::stop: abandon a blocked frame write
  std::shared_ptr<auth::ControlMac> mac_;  // once authenticated
  bool reading_last_words_ = false;  // closed_by_receiver() is reading them
  bool peer_eof_ = false;          // the receiver closed its side; inbox_ holds its last words
  Clock::time_point last_sent_ = Clock::now();
  Clock::time_point last_heard_ = Clock::now();
};

}  // namespace

Result<std::unique_ptr<sender::SenderConnection>> connect(const ConnectOptions& options) {
  auto socket = tcp::connect(options.endpoint, options.timeouts.connect);
  if (!socket) return Unexpected(socket.error().context("send"));
  if (auto ok = socket->configure(options.timeouts.keepalive); !ok) {
    return Unexpected(ok.error().context("send"));
  }
  auto connection = std::make_unique<TcpSenderConnection>(std::move(*socket), options);
  if (auto ok = connection->handshake(options); !ok) return Unexpected(ok.error());
  return std::unique_ptr<sender::SenderConnection>(std::move(connection));
}

}  // namespace rdmavideo::tcp
