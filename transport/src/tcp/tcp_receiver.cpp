// SPDX-License-Identifier: Apache-2.0
// TCP receiver: the listener with its Hello handshake, and a connection that turns messages
// into events and frame payloads into leases on ring slots.
#include <sys/socket.h>

#include <cerrno>
#include <mutex>

#include "memory/host_memory.hpp"
#include "proto/checks.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/ring.hpp"
#include "rdmavideo/stats.hpp"
#include "tcp/tcp_transport.hpp"

namespace rdmavideo::tcp {
namespace {

using Clock = std::chrono::steady_clock;

// What the connection shares with its leases: the socket's write side, the ring and its
// credits. Leases call release_slot() from any thread; everything here is under mu.
class ReceiverState final : public detail::SlotOwner {
 public:
  ReceiverState(Socket socket, Timeouts timeouts)
      : socket_(std::move(socket)), timeouts_(timeouts) {}

  const std::string& peer() const { return socket_.peer(); }
  Socket& socket_for_reading() { return socket_; }  // network thread only

  void release_slot(uint32_t ring_epoch, uint32_t slot) noexcept override {
    std::lock_guard lock(mu_);
    if (closed_ || ring_epoch != epoch_ || !credits_) return;  // an old ring: just let it go
    if (credits_->release(slot)) {
      if (auto ok = send_credits_locked(); !ok) {
        log().debug("[recv {}] CreditReturn not sent: {}", peer(), ok.error().message());
      }
    }
  }

  // A new ring for a new StreamStart; the old ring's memory lives on in its leases.
  Result<void> start_ring(uint32_t epoch, uint32_t slots, uint64_t slot_bytes, uint64_t stride,
                          std::shared_ptr<memory::HostBuffer> memory) {
    std::lock_guard lock(mu_);
    epoch_ = epoch;
    credits_.emplace(slots);
    memory_ = std::move(memory);
    // RingInfo and the first credits in one write, so a live sender that starts the moment
    // it learns the ring has credits for its first frame.
    std::vector<std::byte> bytes;
    proto::encode(proto::RingInfo{epoch, slots, slot_bytes, stride, 0, 0}, bytes);
    proto::encode(proto::CreditReturn{epoch, credits_->grant_pending()}, bytes);
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    auto ok = socket_.write_all(bytes, policy, "RingInfo");
    if (ok) last_sent_ = Clock::now();
    return ok;
  }

  Result<void> frame_arrived(uint32_t slot) {
    std::lock_guard lock(mu_);
    if (auto ok = credits_->frame_arrived(slot); !ok) return ok;
    if (credits_->flush_due()) return send_credits_locked();
    return {};
  }

  std::shared_ptr<memory::HostBuffer> memory() {
    std::lock_guard lock(mu_);
    return memory_;
  }

  void keepalive_if_idle() {
    std::lock_guard lock(mu_);
    if (!closed_ && Clock::now() - last_sent_ >= timeouts_.keepalive) {
      (void)send_locked(proto::Keepalive{stats::realtime_ns()});
    }
  }

  Result<void> send(const proto::Message& message) {
    std::lock_guard lock(mu_);
    return send_locked(message);
  }

  // Tells the peer why (best effort) and closes. Called from the network thread only.
  void close(const proto::Message* last) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (last) (void)send_locked(*last);
    closed_ = true;
    if (credits_) credits_->reclaim();
    // Let the peer read what we sent before the socket goes: half-close, then drain briefly.
    shutdown(socket_.fd(), SHUT_WR);
    std::array<std::byte, 65536> sink;
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < deadline) {
      auto ready = socket_.wait_readable(std::chrono::milliseconds(100));
      if (!ready || !*ready) continue;
      auto n = socket_.read_available(sink);
      if (!n) break;  // closed by the peer: done
    }
    socket_.close();
  }

 private:
  Result<void> send_locked(const proto::Message& message) {
    if (closed_) return make_error(ErrorCode::peer_closed, "connection closed");
    IoPolicy policy{timeouts_.keepalive, timeouts_.peer, nullptr};
    auto ok = write_message(socket_, message, policy);
    if (ok) last_sent_ = Clock::now();
    return ok;
  }

  Result<void> send_credits_locked() {
    proto::CreditReturn credits{epoch_, credits_->grant_pending()};
    if (credits.slots.empty()) return {};
    return send_locked(credits);
  }

  std::mutex mu_;
  Socket socket_;
  Timeouts timeouts_;
  bool closed_ = false;                          // no more writes; leases let slots go
  uint32_t epoch_ = 0;                           // ring epoch = stream_id of the StreamStart
  std::optional<ring::RingCredits> credits_;     // the current ring's credits
  std::shared_ptr<memory::HostBuffer> memory_;   // the current ring's slots
  Clock::time_point last_sent_ = Clock::now();  // for keepalives
};

class TcpReceiverConnection final : public ReceiverConnection {
 public:
  TcpReceiverConnection(Socket socket, const ListenOptions& options)
      : state_(std::make_shared<ReceiverState>(std::move(socket), options.timeouts)),
        options_(options),
        who_(fmt::format("recv {}", state_->peer())) {
    read_policy_.tick = options.timeouts.keepalive;
    read_policy_.peer_timeout = options.timeouts.peer;
    read_policy_.stop = options.stop;
    read_policy_.on_tick = [state = state_.get()] { state->keepalive_if_idle(); };
  }
  ~TcpReceiverConnection() override { state_->close(nullptr); }

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return state_->peer(); }

  Result<ReceiverEvent> next() override {
    if (done_) return make_error(ErrorCode::peer_closed, "{}: connection already closed", who_);
    for (;;) {
      auto message = read_message(state_->socket_for_reading(), read_policy_);
      if (!message) return fail(message.error());
      // The tick only fires when the sender is quiet; a sender that keeps sending
      // keepalives must hear ours too.
      state_->keepalive_if_idle();
      switch (proto::type_of(*message)) {
        case proto::MessageType::StreamStart: {
          auto event = start_stream(std::get<proto::StreamStart>(*message));
          if (!event) return fail(event.error());
          return event;
        }
        case proto::MessageType::FrameWritten: {
          auto event = receive_frame(std::get<proto::FrameWritten>(*message));
          if (!event) return fail(event.error());
          return event;
        }
        case proto::MessageType::Keepalive: continue;
        case proto::MessageType::EndOfStream:
          done_ = true;
          state_->close(nullptr);
          return StreamEnded{std::get<proto::EndOfStream>(*message)};
        case proto::MessageType::Error: {
          const auto& m = std::get<proto::ErrorMessage>(*message);
          return fail(Error(m.code, fmt::format("sender reported: {}", m.text)), false);
        }
        default:
          return fail(Error(ErrorCode::protocol,
                            fmt::format("unexpected {} from a sender",
                                        proto::to_string(proto::type_of(*message)))));
      }
    }
  }

  void finish(uint64_t frames) override {
    if (done_) return;
    done_ = true;
    const proto::Message end = proto::EndOfStream{frames, 0};
    state_->close(&end);
  }

 private:
  Result<ReceiverEvent> start_stream(const proto::StreamStart& m) {
    if (auto ok = proto::check_stream_start(m, format_, options_.max_frame_bytes); !ok) {
      return Unexpected(ok.error());
    }
    if (!m.name.empty()) who_ = fmt::format("recv {} \"{}\"", state_->peer(), m.name);
    const uint64_t stride = memory::round_up(m.layout.frame_bytes, memory::kPageBytes);
    auto memory = memory::HostBuffer::allocate(stride * options_.ring_size);
    if (!memory) return Unexpected(memory.error());
    if (auto ok = state_->start_ring(m.stream_id, options_.ring_size, m.layout.frame_bytes,
                                     stride, *memory);
        !ok) {
      return Unexpected(ok.error());
    }
    format_ = m;
    stride_ = stride;
    log().debug("[{}] ring {}: {} slots of {} bytes", who_, m.stream_id, options_.ring_size,
                m.layout.frame_bytes);
    return StreamStarted{m};
  }

  Result<ReceiverEvent> receive_frame(const proto::FrameWritten& m) {
    if (auto ok = proto::check_frame_written(m, format_, options_.ring_size); !ok) {
      return Unexpected(ok.error());
    }
    if (auto ok = state_->frame_arrived(m.slot); !ok) return Unexpected(ok.error());
    auto memory = state_->memory();
    std::span<std::byte> slot = memory->bytes().subspan(m.slot * stride_, m.bytes);
    if (auto ok = state_->socket_for_reading().read_exact(slot, read_policy_,
                                                          "FrameWritten payload");
        !ok) {
      return Unexpected(ok.error());
    }
    const uint64_t now = stats::realtime_ns();
    FrameArrived event{FrameLease(state_, memory, slot, m), now > m.sent_ns ? now - m.sent_ns : 0};
    return ReceiverEvent(std::move(event));
  }

  // Ends the connection on an error: tells the peer (unless it is the one that went away)
  // and returns the error with who we are talking to put in front.
  Unexpected fail(const Error& error, bool tell_peer = true) {
    done_ = true;
    Error out = error.context(who_);
    const auto last = proto::closing_message(error, tell_peer);
    state_->close(last ? &*last : nullptr);
    if (last && std::holds_alternative<proto::ErrorMessage>(*last)) {
      out = Error(out.code(), out.message() + "; closing", out.sys_errno());
    }
    return Unexpected(std::move(out));
  }

  std::shared_ptr<ReceiverState> state_;
  ListenOptions options_;
  std::string who_;  // "recv host:port "name"" for messages
  IoPolicy read_policy_;
  std::optional<proto::StreamStart> format_;  // the current stream's format
  uint64_t stride_ = 0;                       // bytes between slots of the current ring
  bool done_ = false;                         // closed; next() returns an error
};

class TcpListener final : public Listener {
 public:
  TcpListener(ListeningSocket socket, ListenOptions options)
      : socket_(std::move(socket)), options_(std::move(options)) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  Endpoint local_endpoint() const override { return socket_.local_endpoint(); }
  int readiness_fd() const override { return socket_.fd(); }

  Result<std::unique_ptr<ReceiverConnection>> accept() override {
    auto accepted = socket_.accept();
    if (!accepted) return Unexpected(accepted.error());
    Socket socket = std::move(*accepted);
    const std::string who = fmt::format("recv {}", socket.peer());
    if (auto ok = socket.configure(options_.timeouts.keepalive); !ok) {
      return Unexpected(ok.error().context(who));
    }
    // The whole handshake must finish within the connect timeout: a peer that connects and
    // says nothing must not hold the listener.
    IoPolicy policy{options_.timeouts.connect, options_.timeouts.connect, nullptr};
    auto reject = [&](const Error& error) -> Unexpected {
      if (error.code() != ErrorCode::peer_closed && error.code() != ErrorCode::timeout) {
        (void)write_message(socket, proto::ErrorMessage{error.code(), error.message()}, policy);
        shutdown(socket.fd(), SHUT_WR);
      }
      return Unexpected(error.context(who));
    };
    auto message = read_message(socket, policy);
    if (!message) return reject(message.error());
    const auto* hello = std::get_if<proto::Hello>(&*message);
    if (!hello) {
      return reject(Error(ErrorCode::protocol,
                          fmt::format("expected Hello, got {}",
                                      proto::to_string(proto::type_of(*message)))));
    }
    auto ack = proto::answer_hello(*hello, options_, options_.ring_size);
    if (!ack) return reject(ack.error());
    if (auto ok = write_message(socket, *ack, policy); !ok) return reject(ok.error());
    log().debug("[{}] Hello from \"{}\", version {}", who, hello->software, ack->version);
    return std::unique_ptr<ReceiverConnection>(
        std::make_unique<TcpReceiverConnection>(std::move(socket), options_));
  }

 private:
  ListeningSocket socket_;
  ListenOptions options_;
};

}  // namespace

Result<std::unique_ptr<Listener>> listen(const ListenOptions& options) {
  if (options.ring_size == 0 || options.ring_size > proto::kMaxRingSlots) {
    return make_error(ErrorCode::invalid_argument, "ring size {} out of range (1..{})",
                      options.ring_size, proto::kMaxRingSlots);
  }
  auto socket = ListeningSocket::listen(options.endpoint);
  if (!socket) return Unexpected(socket.error());
  return std::unique_ptr<Listener>(std::make_unique<TcpListener>(std::move(*socket), options));
}

}  // namespace rdmavideo::tcp
