// SPDX-License-Identifier: Apache-2.0
// Verbs receiver: the rdma_cm listener, and a channel that exposes each ring by registering
// it for remote write (never remote read) and whose frames are announced by FrameWritten
// SENDs. Its sends are the Link's, which one thread drives: credits wait for that thread.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "channel/receiver_channel.hpp"
#include "rdmavideo/log.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"

namespace rdmavideo::verbs {
namespace {

using receiver::Clock;
using std::chrono::milliseconds;

// A ring's registration: the MR first, then (as its last owner may be) the memory, then
// the PD the MR was made in.
struct RingRegistration {
  SharedPd pd;
  std::shared_ptr<memory::Region> memory;
  UniqueMr mr;
};

class VerbsChannel final : public receiver::ReceiverChannel {
 public:
  explicit VerbsChannel(std::unique_ptr<Link> link) : link_(std::move(link)) {
    link_->set_stop(&interrupted_);
  }
  ~VerbsChannel() override { close(nullptr); }

  TransportKind kind() const override { return TransportKind::verbs; }
  const std::string& peer() const override { return link_->peer(); }

  Result<void> establish(Clock::time_point deadline) override { return link_->accept(deadline); }

  // A SEND arrives whole: there is no message in part to time.
  Result<std::optional<proto::Message>> receive(milliseconds wait, Clock::time_point) override {
    auto message = link_->take_message();
    if (!message || *message) return message;
    if (interrupted_) return make_error(ErrorCode::peer_closed, "connection stopped");
    if (link_->disconnected()) return make_error(ErrorCode::peer_closed, "sender disconnected");
    if (auto ok = link_->progress(wait); !ok) return Unexpected(ok.error());
    return link_->take_message();
  }

  // RC delivers in order: the FrameWritten SEND completed after the WRITEs before it.
  Result<void> receive_payload(std::span<std::byte>, Clock::time_point,
                               const std::function<void()>&) override {
    return {};
  }

  Result<void> send(const proto::Message& message) override { return link_->send(message); }
  void protect(std::shared_ptr<auth::ControlMac> mac) override { link_->protect(std::move(mac)); }
  void negotiated(uint16_t version) override { link_->set_version(version); }
  bool sends_from_any_thread() const override { return false; }
  void wake() override { link_->wake(); }
  void interrupt() override {
    interrupted_ = true;
    link_->wake();
  }

  Result<receiver::RingAccess> expose_ring(const std::shared_ptr<memory::Region>& memory) override {
    // A new ring retires the old one: the StreamStart that asked for it came after every
    // write into the old ring (RC keeps order), so its rkey dies now, whoever still reads
    // its frames.
    retire_rings();
    // Remote write, never remote read: the sender can put frames in, not take anything out.
    UniqueMr mr(ibv_reg_mr(link_->pd().get(), memory->bytes().data(), memory->size(),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!mr) {
      return Unexpected(system_error(fmt::format("verbs {}: ibv_reg_mr of a {} MiB ring",
                                                 link_->device_name(), memory->size() >> 20),
                                     errno));
    }
    return expose(memory, std::move(mr));
  }

  gpu::PathFacts gpu_facts() override { return verbs::gpu_facts(*link_); }

  Result<receiver::RingAccess> expose_gpu_ring(const std::shared_ptr<memory::Region>& memory,
                                               gpu::Path path) override {
    retire_rings();
    auto mr = register_gpu(*link_, memory->bytes(), path, *memory->cuda_device(),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) return Unexpected(mr.error());
    return expose(memory, std::move(*mr));
  }

  // Hands out a registered ring's address and rkey; the registration lives while the ring
  // is exposed and as long as the access is held.
  Result<receiver::RingAccess> expose(const std::shared_ptr<memory::Region>& memory, UniqueMr mr) {
    auto ring = std::make_shared<RingRegistration>();
    ring->pd = link_->pd();
    ring->memory = memory;
    ring->mr = std::move(mr);
    receiver::RingAccess access;
    access.base_addr = reinterpret_cast<uint64_t>(memory->bytes().data());
    access.rkey = ring->mr->rkey;
    access.registration = ring;
    exposed_.push_back(std::move(ring));
    return access;
  }

  void close(const proto::Message* last) override {
    if (closed_) return;
    closed_ = true;
    if (last && !link_->disconnected()) {
      if (link_->send(*last)) (void)link_->progress(milliseconds(100));  // let it go out
    }
    link_->disconnect();
    // The peer's rkeys die with the connection, even while leases keep the memory.
    retire_rings();
  }

 private:
  void retire_rings() {
    for (auto& ring : exposed_) ring->mr.reset();
    exposed_.clear();
  }

  std::unique_ptr<Link> link_;
  std::vector<std::shared_ptr<RingRegistration>> exposed_;  // rings whose MR is live
  std::atomic<bool> interrupted_{false};
  bool closed_ = false;
};

class VerbsListener final : public receiver::ChannelListener {
 public:
  VerbsListener(UniqueEventChannel channel, UniqueCmId id, Endpoint local, ListenOptions options)
      : channel_(std::move(channel)),
        id_(std::move(id)),
        local_(std::move(local)),
        options_(std::move(options)) {}

  TransportKind kind() const override { return TransportKind::verbs; }
  Endpoint local_endpoint() const override { return local_; }
  int readiness_fd() const override { return channel_->fd; }
  std::string describe() const override { return "verbs"; }

  Result<std::unique_ptr<receiver::ReceiverChannel>> accept() override {
    for (;;) {
      auto event = next_cm_event(channel_.get(), milliseconds(0));
      if (!event) return Unexpected(event.error().context("recv verbs listener"));
      if (event->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
        log().debug("[recv verbs listener] {} ignored", rdma_event_str(event->type));
        continue;
      }
      UniqueCmId id(event->id);
      const std::string who = fmt::format("recv {}", peer_of(id.get()));
      // Checked before anything is allocated for the peer.
      auto request = decode_connect_request(event->private_data);
      if (request && !options_.rdma_device.empty() && id->verbs &&
          options_.rdma_device != ibv_get_device_name(id->verbs->device)) {
        request = make_error(
            ErrorCode::invalid_argument,
            "connection arrived on {}; this receiver takes only {} (the RDMA device it was given)",
            ibv_get_device_name(id->verbs->device), options_.rdma_device);
      }
      if (!request) {
        // Tell the peer why in the reject's private data (it has room for a short text).
        std::string reason = request.error().message().substr(0, 140);
        rdma_reject(id.get(), reason.c_str(), static_cast<uint8_t>(reason.size() + 1));
        return Unexpected(Error(request.error().code(),
                                fmt::format("{}: {}; rejected", who, request.error().message())));
      }
      auto link = Link::adopt(std::move(id), options_.timeouts);
      if (!link) return Unexpected(link.error());
      return std::unique_ptr<receiver::ReceiverChannel>(
          std::make_unique<VerbsChannel>(std::move(*link)));
    }
  }

 private:
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

Result<std::unique_ptr<receiver::ChannelListener>> listen(const ListenOptions& options) {
  const std::string where = fmt::format("verbs listen on {}", options.endpoint.to_string());
  if (!have_devices()) {
    return make_error(
        ErrorCode::unsupported,
        "{}: no RDMA device on this machine (rdmavideo-doctor tells more); use the TCP transport",
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
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", where,
                      gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(ai, freeaddrinfo);
  if (rdma_bind_addr(id.get(), ai->ai_addr) != 0) {
    return Unexpected(system_error(where + ": rdma_bind_addr", errno));
  }
  if (rdma_listen(id.get(), 128) != 0) {
    return Unexpected(system_error(where + ": rdma_listen", errno));
  }
  // accept() takes what is there without waiting.
  fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK);
  Endpoint local{options.endpoint.host, ntohs(rdma_get_src_port(id.get()))};
  return std::unique_ptr<receiver::ChannelListener>(
      std::make_unique<VerbsListener>(std::move(channel), std::move(id), local, options));
}

}  // namespace rdmavideo::verbs
