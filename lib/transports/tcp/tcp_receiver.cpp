// SPDX-License-Identifier: Apache-2.0
// TCP receiver: a listener that takes connections without talking to them, and a channel
// that reads messages, reads each frame's payload straight into its slot, and writes from
// any thread (the core serialises writes, so a consumer can send its credit at once).

#include <atomic>
#include <mutex>

#include "channel/receiver_channel.hpp"
#include "rdmavideo/log.hpp"
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {
namespace {

using receiver::Clock;
using std::chrono::milliseconds;

// The most a receiver drains after its half-close before it closes the socket.
constexpr milliseconds kDrainLimit(500);
// How often a blocked read wakes (SO_RCVTIMEO) to look at the stop flag and send keepalives:
// a stop ends a read within this.
constexpr milliseconds kReadTick(200);

class TcpChannel final : public receiver::ReceiverChannel {
 public:
  TcpChannel(Socket socket, const Timeouts& timeouts)
      : socket_(std::move(socket)), timeouts_(timeouts) {
    // Reads give up after the peer timeout without progress; a stop ends them at the next
    // tick. (Shutting the read side down would end them sooner, but then the socket could not
    // be drained, and closing it with the sender's unread bytes would reset the connection.)
    read_policy_ = IoPolicy{kReadTick, timeouts.peer, nullptr, &interrupted_};
    write_policy_ = IoPolicy{timeouts.keepalive, timeouts.peer, nullptr, &interrupted_};
  }
  ~TcpChannel() override { close(nullptr); }

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return socket_.peer(); }

  Result<void> establish(Clock::time_point) override {
    return socket_.configure(std::min(kReadTick, timeouts_.keepalive));
  }

  Result<std::optional<proto::Message>> receive(milliseconds wait,
                                                Clock::time_point complete_by) override {
    auto ready = socket_.wait_readable(wait, &interrupted_);
    if (!ready) return Unexpected(ready.error());
    if (!*ready) return std::optional<proto::Message>{};
    IoPolicy policy = read_policy_;
    policy.deadline = complete_by;
    auto message = read_message(socket_, policy, mac_.get());
    if (!message) return Unexpected(message.error());
    return std::optional<proto::Message>(std::move(*message));
  }

  Result<void> receive_payload(std::span<std::byte> slot, Clock::time_point complete_by,
                               const std::function<void()>& on_tick) override {
    IoPolicy policy = read_policy_;
    policy.on_tick = on_tick;  // keepalives while a slow link brings a large frame
    policy.deadline = complete_by;
    return socket_.read_exact(slot, policy, "FrameWritten payload");
  }

  Result<void> send(const proto::Message& message) override {
    return write_message(socket_, message, write_policy_, mac_.get(), version_);
  }
  void protect(std::shared_ptr<auth::ControlMac> mac) override { mac_ = std::move(mac); }
  void negotiated(uint16_t version) override { version_ = version; }
  bool sends_from_any_thread() const override { return true; }

  void wake() override {}  // the connection thread never waits long on its own

  void interrupt() override { interrupted_ = true; }

  // Wakes the connection thread at once (a shut-down socket is readable) and makes its close
  // a reset: a shed peer gets no last words, and its socket holds nothing while it drains.
  void abandon() override {
    interrupted_ = true;
    abandoned_ = true;
    std::lock_guard lock(fd_mu_);
    if (!socket_.is_open()) return;  // closed already: the number may be another's now
    socket_.reset_on_close();
    socket_.shutdown(true);
  }

  Result<receiver::RingAccess> expose_ring(const std::shared_ptr<memory::Region>&) override {
    return receiver::RingAccess{};  // payloads are read into the slots; nothing to expose
  }

  void close(const proto::Message* last) override {
    if (closed_) return;
    closed_ = true;
    if (abandoned_) {
      std::lock_guard lock(fd_mu_);
      socket_.close();
      return;
    }
    if (last) (void)send(*last);
    // Let the peer read what we sent before the socket goes: half-close, then drain briefly
    // (closing with unread data would reset the connection and could lose our last words).
    socket_.shutdown(false);
    std::array<std::byte, 65536> sink;
    const auto deadline = Clock::now() + kDrainLimit;
    while (Clock::now() < deadline) {
      auto ready = socket_.wait_readable(milliseconds(100));
      if (!ready) break;
      if (!*ready) continue;
      auto n = socket_.read_available(sink);
      if (!n || *n == 0) break;  // closed by the peer (or an error): done
    }
    std::lock_guard lock(fd_mu_);
    socket_.close();
  }

 private:
  Socket socket_;
  Timeouts timeouts_;
  IoPolicy read_policy_;
  IoPolicy write_policy_;
  std::atomic<bool> interrupted_{false};  // stop(): every wait ends
  std::atomic<bool> abandoned_{false};    // shed: close at once, with a reset
  std::mutex fd_mu_;  // abandon() from another thread against the socket's close
  std::shared_ptr<auth::ControlMac> mac_;  // set once, on the connection thread, by protect()
  uint16_t version_ = proto::kVersion;     // set once, on the connection thread, by negotiated()
  bool closed_ = false;
};

class TcpListener final : public receiver::ChannelListener {
 public:
  TcpListener(ListeningSocket socket, ListenOptions options)
      : socket_(std::move(socket)), options_(std::move(options)) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  Endpoint local_endpoint() const override { return socket_.local_endpoint(); }
  int readiness_fd() const override { return socket_.fd(); }
  std::string describe() const override { return "tcp"; }

  Result<std::unique_ptr<receiver::ReceiverChannel>> accept() override {
    auto accepted = socket_.accept();
    if (!accepted) return Unexpected(accepted.error());
    return std::unique_ptr<receiver::ReceiverChannel>(
        std::make_unique<TcpChannel>(std::move(*accepted), options_.timeouts));
  }

 private:
  ListeningSocket socket_;
  ListenOptions options_;
};

}  // namespace

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options) {
  auto socket = ListeningSocket::listen(options.endpoint);
  if (!socket) return Unexpected(socket.error());
  return std::unique_ptr<receiver::ChannelListener>(
      std::make_unique<TcpListener>(std::move(*socket), options));
}

}  // namespace rdmavideo::tcp
