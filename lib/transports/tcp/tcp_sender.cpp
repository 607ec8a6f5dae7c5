// SPDX-License-Identifier: Apache-2.0
// TCP sender channel: messages written on the socket, the receiver's read without blocking
// into an inbox and taken one at a time, and frames written from the caller's buffer (header
// and payload in one sendmsg per 4 MiB slice). A frame is written whole before send_frame()
// returns, so its memory is free at once: every ticket is done.

#include "rdmavideo/log.hpp"
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The socket's errors speak of a peer; on this side the peer is the receiver.
Error as_receiver(const Error& error) {
  if (error.code() != ErrorCode::peer_closed) return error;
  std::string message = error.message();
  if (message.starts_with("peer ")) message.replace(0, 4, "receiver");
  return Error(ErrorCode::peer_closed, std::move(message), error.sys_errno());
}

class TcpSenderChannel final : public sender::SenderChannel {
 public:
  TcpSenderChannel(Socket socket, const ConnectOptions& options)
      : socket_(std::move(socket)), timeouts_(options.timeouts), stop_(options.stop) {}
  ~TcpSenderChannel() override { close(nullptr, milliseconds(0)); }

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return socket_.peer(); }

  Result<void> send(const proto::Message& message) override {
    if (closed_) return make_error(ErrorCode::peer_closed, "connection closed");
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    auto ok = write_message(socket_, message, policy, mac_.get(), version_);
    if (!ok) return Unexpected(as_receiver(ok.error()));
    return ok;
  }

  Result<uint64_t> send_frame(std::span<const std::byte> frame, const proto::FrameWritten& written,
                              sender::RemoteSlot) override {
    if (closed_) return make_error(ErrorCode::peer_closed, "connection closed");
    header_.clear();
    auth::encode_sealed(written, header_, mac_.get(), version_);
    Piece pieces[2] = {{header_.data(), header_.size()}, {frame.data(), frame.size()}};
    // No keepalive may be written in the middle of a frame, so no on_tick here.
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr, stop_};
    if (auto ok = socket_.write_all(pieces, policy, "frame"); !ok)
      return Unexpected(as_receiver(ok.error()));
    return ++tickets_;
  }

  // The kernel has the frame's bytes once send_frame() returned.
  bool done(uint64_t) override { return true; }

  Result<std::optional<proto::Message>> receive(milliseconds wait) override {
    if (auto message = take(); !message || *message) return message;
    auto got = read_into_inbox();
    if (!got) return Unexpected(got.error());
    if (*got == 0 && wait.count() > 0 && !peer_eof_ && !closed_) {
      auto ready = socket_.wait_readable(wait, stop_);
      if (!ready) return Unexpected(as_receiver(ready.error()));
      if (*ready) {
        got = read_into_inbox();
        if (!got) return Unexpected(got.error());
      }
    }
    if (auto message = take(); !message || *message) return message;
    if (peer_eof_) return make_error(ErrorCode::peer_closed, "receiver closed the connection");
    return std::optional<proto::Message>{};
  }

  void protect(std::shared_ptr<auth::ControlMac> mac) override { mac_ = std::move(mac); }
  void negotiated(uint16_t version) override { version_ = version; }
  size_t max_control_bytes() const override {
    return proto::kHeaderBytes + proto::kMaxBodyBytes + auth::ControlMac::kTagBytes;
  }
  void wake() override {}  // receive() waits at most a keepalive interval

  // TCP copies the frame into the kernel before send_frame returns: any memory will do, and
  // none is read after it returns.
  Result<void> register_memory(std::span<const std::byte>, std::shared_ptr<const void>) override {
    return {};
  }
  bool registered(std::span<const std::byte>) const override { return true; }
  void forget_memory(std::span<const std::byte>) override {}

  void close(const proto::Message* last, milliseconds linger) override {
    if (closed_) return;
    if (last) (void)send(*last);
    closed_ = true;
    if (linger.count() > 0) {
      // Half-close, then read until the receiver closes: closing with unread credits in our
      // buffer would reset the connection and could cost the receiver the last frames.
      socket_.shutdown(false);
      const auto deadline = Clock::now() + linger;
      std::array<std::byte, 65536> sink;
      while (Clock::now() < deadline) {
        auto ready = socket_.wait_readable(milliseconds(100));
        if (!ready) break;
        if (!*ready) continue;
        auto n = socket_.read_available(sink);
        if (!n) break;
      }
    }
    socket_.close();
  }

 private:
  // The next whole message in the inbox, opened as the one before left the seal; nullopt when
  // the inbox holds none whole.
  Result<std::optional<proto::Message>> take() {
    if (inbox_.size() - used_ < proto::kHeaderBytes) return std::optional<proto::Message>{};
    auto header = proto::decode_header(std::span(inbox_).subspan(used_, proto::kHeaderBytes));
    if (!header) return Unexpected(header.error());
    const size_t whole = proto::kHeaderBytes + header->length + auth::tag_bytes(mac_.get());
    if (inbox_.size() - used_ < whole) return std::optional<proto::Message>{};
    auto message = auth::decode_sealed(std::span(inbox_).subspan(used_, whole), mac_.get());
    used_ += whole;
    if (used_ == inbox_.size()) {
      inbox_.clear();
      used_ = 0;
    }
    if (!message) return Unexpected(message.error());
    return std::optional<proto::Message>(std::move(*message));
  }

  // Reads what has arrived without blocking; notes the receiver's close (its last words stay
  // in the inbox, to be taken first).
  Result<size_t> read_into_inbox() {
    if (used_ > 0) {
      inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(used_));
      used_ = 0;
    }
    size_t total = 0;
    while (!peer_eof_ && !closed_) {
      const size_t old = inbox_.size();
      inbox_.resize(old + 65536);
      auto n = socket_.read_available(std::span(inbox_).subspan(old));
      inbox_.resize(old + (n ? *n : 0));
      if (!n && n.error().code() == ErrorCode::peer_closed) {
        peer_eof_ = true;
        break;
      }
      if (!n) return Unexpected(as_receiver(n.error()));
      if (*n == 0) break;
      total += *n;
    }
    return total;
  }

  Socket socket_;
  Timeouts timeouts_;
  const std::atomic<bool>* stop_;  // ConnectOptions::stop: abandon a blocked frame write
  std::vector<std::byte> inbox_;   // received bytes; those before used_ are taken
  size_t used_ = 0;
  std::vector<std::byte> header_;          // FrameWritten encoding buffer, reused
  std::shared_ptr<auth::ControlMac> mac_;  // once authenticated
  uint16_t version_ = proto::kVersion;     // as negotiated
  uint64_t tickets_ = 0;                   // frames written
  bool peer_eof_ = false;                  // the receiver closed its side
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<sender::SenderChannel>> connect(const ConnectOptions& options) {
  auto socket = tcp::connect(options.endpoint, options.timeouts.connect);
  if (!socket) return Unexpected(socket.error().context("send"));
  if (auto ok = socket->configure(options.timeouts.keepalive); !ok) {
    return Unexpected(ok.error().context("send"));
  }
  return std::unique_ptr<sender::SenderChannel>(
      std::make_unique<TcpSenderChannel>(std::move(*socket), options));
}

}  // namespace rdmavideo::tcp
