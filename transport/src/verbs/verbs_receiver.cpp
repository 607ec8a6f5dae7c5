// SPDX-License-Identifier: Apache-2.0
// Verbs receiver: the rdma_cm listener, and a connection whose ring is registered for remote
// write (never remote read) and whose frames are announced by FrameWritten SENDs.
#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "memory/host_memory.hpp"
#include "proto/checks.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/ring.hpp"
#include "rdmavideo/stats.hpp"
#include "tcp/socket.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"

namespace rdmavideo::verbs {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A ring's memory and its registration. Declared so the MR goes first, then the memory,
// then (last owner) the PD.
struct RegisteredRing {
  SharedPd pd;
  std::shared_ptr<memory::HostBuffer> memory;
  UniqueMr mr;
};

// What the connection shares with its leases. Leases release from any thread; the credits
// they free are sent by the connection's thread, which wake() rouses.
class ReceiverState final : public detail::SlotOwner {
 public:
  explicit ReceiverState(Link* link) : link_(link) {}

  void release_slot(uint32_t ring_epoch, uint32_t slot) noexcept override {
    std::lock_guard lock(mu_);
    if (!link_ || ring_epoch != epoch_ || !credits_) return;
    if (credits_->release(slot)) link_->wake();
  }

  void start_ring(uint32_t epoch, uint32_t slots) {
    std::lock_guard lock(mu_);
    epoch_ = epoch;
    credits_.emplace(slots);
  }

  Result<void> frame_arrived(uint32_t slot) {
    std::lock_guard lock(mu_);
    return credits_->frame_arrived(slot);
  }

  // The credits to send now, if any.
  std::optional<proto::CreditReturn> due_credits() {
    std::lock_guard lock(mu_);
    if (!credits_ || !credits_->flush_due()) return std::nullopt;
    return proto::CreditReturn{epoch_, credits_->grant_pending()};
  }

  std::vector<uint32_t> all_grants() {
    std::lock_guard lock(mu_);
    return credits_->grant_pending();
  }

  void detach() {  // the link is going away: leases let their slots go silently
    std::lock_guard lock(mu_);
    link_ = nullptr;
    if (credits_) credits_->reclaim();
  }

 private:
  std::mutex mu_;
  Link* link_;                                // null once the connection is closed
  uint32_t epoch_ = 0;                        // current ring epoch
  std::optional<ring::RingCredits> credits_;  // the current ring's credits
};

class VerbsReceiverConnection final : public ReceiverConnection {
 public:
  VerbsReceiverConnection(std::unique_ptr<Link> link, const ListenOptions& options)
      : link_(std::move(link)),
        state_(std::make_shared<ReceiverState>(link_.get())),
        options_(options),
        who_(fmt::format("recv {}", link_->peer())) {
    link_->set_stop(options.stop);
  }

  ~VerbsReceiverConnection() override { close(nullptr); }

  TransportKind kind() const override { return TransportKind::verbs; }
  const std::string& peer() const override { return link_->peer(); }

  Result<ReceiverEvent> next() override {
    if (done_) return make_error(ErrorCode::peer_closed, "{}: connection already closed", who_);
    for (;;) {
      if (auto credits = state_->due_credits()) {
        if (auto ok = link_->send(*credits); !ok) return fail(ok.error());
      }
      if (auto message = link_->take_message()) {
        auto event = handle(*message);
        if (!event) return fail(event.error());
        if (*event) return std::move(**event);
        continue;
      }
      if (link_->disconnected()) {
        return fail(Error(ErrorCode::peer_closed, "sender disconnected"));
      }
      if (options_.stop && options_.stop->load()) {
        return fail(Error(ErrorCode::system, "stopped waiting for the sender", EINTR));
      }
      if (auto ok = link_->progress(options_.timeouts.keepalive); !ok) return fail(ok.error());
      if (Clock::now() - link_->last_sent() >= options_.timeouts.keepalive) {
        if (auto ok = link_->send(proto::Keepalive{stats::realtime_ns()}); !ok) return fail(ok.error());
      }
      if (Clock::now() - link_->last_heard() >= options_.timeouts.peer) {
        return fail(Error(ErrorCode::timeout,
                          fmt::format("peer silent for {} ms", options_.timeouts.peer.count())));
      }
    }
  }

  void finish(uint64_t frames) override {
    if (done_) return;
    done_ = true;
    const proto::Message end = proto::EndOfStream{frames, 0};
    close(&end);
  }

 private:
  // An event for the caller, nothing (keep going), or an error.
  Result<std::optional<ReceiverEvent>> handle(const proto::Message& message) {
    switch (proto::type_of(message)) {
      case proto::MessageType::StreamStart: {
        auto event = start_stream(std::get<proto::StreamStart>(message));
        if (!event) return Unexpected(event.error());
        return std::optional<ReceiverEvent>(std::move(*event));
      }
      case proto::MessageType::FrameWritten: {
        auto event = frame_written(std::get<proto::FrameWritten>(message));
        if (!event) return Unexpected(event.error());
        return std::optional<ReceiverEvent>(std::move(*event));
      }
      case proto::MessageType::Keepalive: return std::optional<ReceiverEvent>();
      case proto::MessageType::EndOfStream:
        done_ = true;
        close(nullptr);
        return std::optional<ReceiverEvent>(StreamEnded{std::get<proto::EndOfStream>(message)});
      case proto::MessageType::Error: {
        const auto& m = std::get<proto::ErrorMessage>(message);
        tell_peer_ = false;
        return Unexpected(Error(m.code, fmt::format("sender reported: {}", m.text)));
      }
      default:
        return make_error(ErrorCode::protocol, "unexpected {} from a sender",
                          proto::to_string(proto::type_of(message)));
    }
  }

  Result<ReceiverEvent> start_stream(const proto::StreamStart& m) {
    if (auto ok = proto::check_stream_start(m, format_, options_.max_frame_bytes); !ok) {
      return Unexpected(ok.error());
    }
    if (!m.name.empty()) who_ = fmt::format("recv {} \"{}\"", link_->peer(), m.name);
    const uint64_t stride = memory::round_up(m.layout.frame_bytes, memory::kPageBytes);
    const uint64_t bytes = stride * options_.ring_size;
    auto memory = memory::HostBuffer::allocate(bytes);
    if (!memory) return Unexpected(memory.error());
    auto ring = std::make_shared<RegisteredRing>();
    ring->pd = link_->pd();
    ring->memory = *memory;
    // Remote write, never remote read: a sender can fill slots, not look at them.
    ring->mr.reset(ibv_reg_mr(ring->pd.get(), ring->memory->bytes().data(), ring->memory->bytes().size(),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!ring->mr) {
      const int err = errno;
      return Unexpected(system_error(
          fmt::format("verbs {}: ibv_reg_mr of the {} MiB ring{}", link_->device_name(), bytes >> 20,
                      err == ENOMEM ? " (is ulimit -l large enough? rdmavideo-doctor checks)" : ""),
          err));
    }
    state_->start_ring(m.stream_id, options_.ring_size);
    const auto base = reinterpret_cast<uint64_t>(ring->memory->bytes().data());
    if (auto ok = link_->send(proto::RingInfo{m.stream_id, options_.ring_size, m.layout.frame_bytes,
                                              stride, base, ring->mr->rkey});
        !ok) {
      return Unexpected(ok.error());
    }
    if (auto ok = link_->send(proto::CreditReturn{m.stream_id, state_->all_grants()}); !ok) {
      return Unexpected(ok.error());
    }
    ring_ = std::move(ring);
    format_ = m;
    stride_ = stride;
    log().debug("[{}] ring {}: {} slots of {} bytes at 0x{:x} rkey 0x{:x}", who_, m.stream_id,
                options_.ring_size, m.layout.frame_bytes, base, ring_->mr->rkey);
    return StreamStarted{m};
  }

  Result<ReceiverEvent> frame_written(const proto::FrameWritten& m) {
    if (auto ok = proto::check_frame_written(m, format_, options_.ring_size); !ok) {
      return Unexpected(ok.error());
    }
    if (auto ok = state_->frame_arrived(m.slot); !ok) return Unexpected(ok.error());
    std::span<std::byte> slot = ring_->memory->bytes().subspan(m.slot * stride_, m.bytes);
    const uint64_t now = stats::realtime_ns();
    return ReceiverEvent(FrameArrived{FrameLease(state_, ring_, slot, m),
                                      now > m.sent_ns ? now - m.sent_ns : 0});
  }

  // Sends `last` (best effort, waiting briefly for it to go), then disconnects.
  void close(const proto::Message* last) {
    if (closed_) return;
    closed_ = true;
    state_->detach();
    if (last && !link_->disconnected()) {
      if (link_->send(*last)) {
        const auto deadline = Clock::now() + milliseconds(500);
        while (!link_->disconnected() && Clock::now() < deadline &&
               link_->progress(milliseconds(50))) {
        }
      }
    }
    link_->disconnect();
  }

  Unexpected fail(const Error& error) {
    done_ = true;
    Error out = error.context(who_);
    const auto last = proto::closing_message(error, tell_peer_);
    close(last ? &*last : nullptr);
    if (last && std::holds_alternative<proto::ErrorMessage>(*last)) {
      out = Error(out.code(), out.message() + "; closing", out.sys_errno());
    }
    return Unexpected(std::move(out));
  }

  std::unique_ptr<Link> link_;
  std::shared_ptr<ReceiverState> state_;
  ListenOptions options_;
  std::string who_;                             // "recv host:port (dev) "name"" for messages
  std::shared_ptr<RegisteredRing> ring_;        // the current ring; leases keep older ones
  std::optional<proto::StreamStart> format_;    // the current stream's format
  uint64_t stride_ = 0;                         // bytes between slots of the current ring
  bool done_ = false;
  bool closed_ = false;
  bool tell_peer_ = true;  // false when the peer itself reported the error
};

class VerbsListener final : public Listener {
 public:
  VerbsListener(UniqueEventChannel channel, UniqueCmId id, Endpoint local, ListenOptions options)
      : channel_(std::move(channel)), id_(std::move(id)), local_(std::move(local)),
        options_(std::move(options)) {}

  TransportKind kind() const override { return TransportKind::verbs; }
  Endpoint local_endpoint() const override { return local_; }
  int readiness_fd() const override { return channel_->fd; }

  Result<std::unique_ptr<ReceiverConnection>> accept() override {
    for (;;) {
      auto event = next_cm_event(channel_.get(), milliseconds(-1));
      if (!event) return Unexpected(event.error().context("recv verbs listener"));
      if (event->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
        log().debug("[recv verbs listener] {} ignored", rdma_event_str(event->type));
        continue;
      }
      UniqueCmId id(event->id);
      const std::string who = fmt::format("recv {}", peer_of(id.get()));
      auto request = decode_connect_request(event->private_data);
      if (request && !options_.rdma_device.empty() && id->verbs &&
          options_.rdma_device != ibv_get_device_name(id->verbs->device)) {
        request = make_error(ErrorCode::invalid_argument,
                             "connection arrived on {}; this receiver takes only {} (--rdma-device)",
                             ibv_get_device_name(id->verbs->device), options_.rdma_device);
      }
      if (!request) {
        // Tell the peer why in the reject's private data (it has room for a short text).
        std::string reason = request.error().message().substr(0, 140);
        rdma_reject(id.get(), reason.c_str(), static_cast<uint8_t>(reason.size() + 1));
        return Unexpected(Error(request.error().code(), fmt::format("{}: {}; rejected", who,
                                                                    request.error().message())));
      }
      auto link = Link::accept(std::move(id), options_.timeouts);
      if (!link) return Unexpected(link.error());
      if (auto ok = handshake(**link); !ok) return Unexpected(ok.error().context(who));
      return std::unique_ptr<ReceiverConnection>(
          std::make_unique<VerbsReceiverConnection>(std::move(*link), options_));
    }
  }

 private:
  Result<void> handshake(Link& link) {
    const auto deadline = Clock::now() + options_.timeouts.connect;
    for (;;) {
      if (auto message = link.take_message()) {
        const auto* hello = std::get_if<proto::Hello>(&*message);
        if (!hello) {
          Error error(ErrorCode::protocol, fmt::format("expected Hello, got {}",
                                                       proto::to_string(proto::type_of(*message))));
          (void)link.send(proto::ErrorMessage{error.code(), error.message()});
          return Unexpected(error);
        }
        auto ack = proto::answer_hello(*hello, options_, options_.ring_size);
        if (!ack) {
          (void)link.send(proto::ErrorMessage{ack.error().code(), ack.error().message()});
          return Unexpected(ack.error());
        }
        return link.send(*ack);
      }
      if (link.disconnected()) return make_error(ErrorCode::peer_closed, "disconnected before Hello");
      if (Clock::now() >= deadline) {
        return make_error(ErrorCode::timeout, "no Hello within {} ms", options_.timeouts.connect.count());
      }
      if (auto ok = link.progress(milliseconds(100)); !ok) return ok;
    }
  }

  UniqueEventChannel channel_;
  UniqueCmId id_;
  Endpoint local_;
  ListenOptions options_;
};

}  // namespace

bool have_devices() {
  int count = 0;
  UniqueDeviceList list(ibv_get_device_list(&count));
  return list && count > 0;
}

Result<std::unique_ptr<Listener>> listen(const ListenOptions& options) {
  const std::string where = fmt::format("verbs listen on {}", options.endpoint.to_string());
  if (options.ring_size == 0 || options.ring_size > kMaxRingSlots) {
    return make_error(ErrorCode::invalid_argument, "{}: ring of {} slots (the verbs transport carries 1..{})",
                      where, options.ring_size, kMaxRingSlots);
  }
  if (!have_devices()) {
    return make_error(ErrorCode::unsupported,
                      "{}: no RDMA device on this machine (rdmavideo-doctor tells more); use --transport tcp",
                      where);
  }
  UniqueEventChannel channel(rdma_create_event_channel());
  if (!channel) return Unexpected(system_error(where + ": rdma_create_event_channel", errno));
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    return Unexpected(system_error(where + ": rdma_create_id", errno));
  }
  UniqueCmId id(raw);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* ai = nullptr;
  const std::string port = std::to_string(options.endpoint.port);
  if (int rc = getaddrinfo(options.endpoint.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", where, gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(ai, freeaddrinfo);
  if (rdma_bind_addr(id.get(), ai->ai_addr) != 0) {
    return Unexpected(system_error(where + ": rdma_bind_addr", errno));
  }
  if (rdma_listen(id.get(), 16) != 0) return Unexpected(system_error(where + ": rdma_listen", errno));
  Endpoint local{options.endpoint.host, ntohs(rdma_get_src_port(id.get()))};
  return std::unique_ptr<Listener>(
      std::make_unique<VerbsListener>(std::move(channel), std::move(id), local, options));
}

}  // namespace rdmavideo::verbs
