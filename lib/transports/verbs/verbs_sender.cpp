// SPDX-License-Identifier: Apache-2.0
// Verbs sender: frames go by RDMA WRITE straight from registered memory (a session's pool,
// registered once, or a buffer registered on first use) into the granted slot, then a
// FrameWritten SEND on the same QP announces them.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>

#include "rdmavideo/log.hpp"
#include "rdmavideo/stats.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"

namespace rdmavideo::verbs {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using sender::Credit;

class VerbsSenderConnection final : public sender::SenderBase {
 public:
  VerbsSenderConnection(std::unique_ptr<Link> link, const ConnectOptions& options)
      : SenderBase(options.timeouts, fmt::format("send {}", link->peer())), link_(std::move(link)) {
    link_->set_stop(options.stop);
  }

  ~VerbsSenderConnection() override {
    registrations_.clear();  // MRs before the link's PD goes
  }

  TransportKind kind() const override { return TransportKind::verbs; }
  const std::string& peer() const override { return link_->peer(); }

  Result<proto::RingInfo> start_stream(const proto::StreamStart& format) override {
    auto ring = SenderBase::start_stream(format);
    if (ring && ring->rkey == 0 && ring->base_addr == 0) {
      return fail(Error(ErrorCode::protocol, "RingInfo has no base_addr and rkey for RDMA"));
    }
    return ring;
  }

  Result<void> register_memory(std::span<const std::byte> memory,
                               std::shared_ptr<const void> owner) override {
    if (registered(memory)) return {};
    auto registration = std::make_unique<Registration>();
    registration->owner = std::move(owner);
    registration->mr.reset(ibv_reg_mr(link_->pd().get(), const_cast<std::byte*>(memory.data()),
                                      memory.size(), IBV_ACCESS_LOCAL_WRITE));
    if (!registration->mr) {
      return Unexpected(system_error(
          fmt::format("verbs {}: ibv_reg_mr of {} bytes of frame memory", link_->device_name(),
                      memory.size()),
          errno));
    }
    log().debug("[{}] registered frame memory {} ({} bytes)", who_,
                static_cast<const void*>(memory.data()), memory.size());
    registrations_.push_back(std::move(registration));
    return {};
  }

  bool registered(std::span<const std::byte> frame) const override {
    return find_registration(frame) != nullptr;
  }

  gpu::PathFacts gpu_facts() override { return verbs::gpu_facts(*link_); }

  // GPU memory the NIC reads straight from: a dma-buf the GPU exports, or the device
  // address resolved by nvidia-peermem.
  Result<void> register_gpu_memory(std::span<const std::byte> memory, std::shared_ptr<const void> owner,
                                   gpu::Path path, const cuda::Device& device) override {
    if (registered(memory)) return {};
    auto mr = register_gpu(*link_, memory, path, device, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return Unexpected(mr.error());
    auto registration = std::make_unique<Registration>();
    registration->owner = std::move(owner);
    registration->mr = std::move(*mr);
    log().debug("[{}] registered {} bytes of {} by {}", who_, memory.size(), device.describe(), gpu::to_string(path));
    registrations_.push_back(std::move(registration));
    return {};
  }

  void forget_memory(std::span<const std::byte> memory) override {
    std::erase_if(registrations_, [&](const std::unique_ptr<Registration>& r) {
      return r->mr->addr == memory.data() && r->mr->length == memory.size();
    });
  }

  bool in_flight(std::span<const std::byte> buffer) override {
    if (!closed_) (void)link_->progress(milliseconds(0));  // errors show on the next send
    retire();
    return std::any_of(in_flight_.begin(), in_flight_.end(),
                       [&](const InFlight& f) { return overlaps(f, buffer); });
  }

  Result<void> send_frame(Credit credit, std::span<const std::byte> frame,
                          const proto::FrameWritten& info) override {
    if (auto ok = check_frame(credit, frame); !ok) return ok;
    const Registration* registration = find_registration(frame);
    if (!registration) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: frame at {} is in memory not registered with {}", who_,
                        static_cast<const void*>(frame.data()), link_->device_name());
    }
    const uint32_t lkey = registration->mr->lkey;
    proto::FrameWritten m = info;
    m.ring_epoch = credit.ring_epoch;
    m.slot = credit.slot;
    m.bytes = static_cast<uint32_t>(frame.size());
    const uint64_t remote = ring_->base_addr + uint64_t{credit.slot} * ring_->slot_stride;
    auto ticket = link_->write_and_send(frame, lkey, remote, ring_->rkey, m);
    if (!ticket) return fail(ticket.error());
    // Not waiting here: the next frame's WRITE goes out while this one completes, so the
    // wire never idles for a round trip. wait_idle() waits before a buffer is refilled.
    in_flight_.push_back({frame.data(), frame.size(), *ticket, info.sequence});
    return {};
  }

  Result<void> wait_idle(std::span<const std::byte> buffer) override {
    return wait_until([&] {
      return std::none_of(in_flight_.begin(), in_flight_.end(),
                          [&](const InFlight& f) { return overlaps(f, buffer); });
    });
  }

  Result<void> end_stream(const proto::EndOfStream& end) override {
    if (closed_) return {};
    auto ok = wait_until([&] { return in_flight_.empty(); });  // every frame out, buffers free
    closed_ = true;
    if (ok) ok = link_->send(end);
    // Wait for the receiver to disconnect (it has then seen every frame), then disconnect.
    const auto deadline = Clock::now() + timeouts_.peer;
    while (ok && !link_->disconnected() && Clock::now() < deadline) {
      if (!link_->progress(milliseconds(100))) break;
    }
    link_->disconnect();
    if (!ok) return Unexpected(ok.error().context(who_));
    return {};
  }

 private:
  struct InFlight {
    const std::byte* data;  // the memory the WRITE reads
    size_t bytes;
    uint64_t ticket;        // done when link_->send_done(ticket)
    uint64_t sequence;      // for messages
  };
  // A registration of frame memory: the MR goes first, then the memory's owner.
  struct Registration {
    std::shared_ptr<const void> owner;
    UniqueMr mr;
  };

  static bool overlaps(const InFlight& f, std::span<const std::byte> buffer) {
    return f.data < buffer.data() + buffer.size() && buffer.data() < f.data + f.bytes;
  }

  const Registration* find_registration(std::span<const std::byte> frame) const {
    for (const auto& r : registrations_) {
      const auto* base = static_cast<const std::byte*>(r->mr->addr);
      if (frame.data() >= base && frame.data() + frame.size() <= base + r->mr->length) {
        return r.get();
      }
    }
    return nullptr;
  }

  void retire() {
    while (!in_flight_.empty() && link_->send_done(in_flight_.front().ticket)) {
      in_flight_.pop_front();
    }
  }

  // Drives completions until `done()` holds; a frame stuck for Timeouts.peer is an error.
  template <typename Done>
  Result<void> wait_until(Done done) {
    retire();
    const auto start = Clock::now();
    while (!done()) {
      if (auto ok = link_->progress(timeouts_.keepalive); !ok) return fail(ok.error());
      retire();
      if (!done() && Clock::now() - start >= timeouts_.peer) {
        return fail(Error(ErrorCode::timeout, fmt::format("frame {} not complete after {} ms",
                                                          in_flight_.front().sequence,
                                                          timeouts_.peer.count())));
      }
    }
    return {};
  }

  Result<void> send_message(const proto::Message& message) override { return link_->send(message); }
  void protect(std::shared_ptr<auth::ControlMac> mac) override { link_->protect(std::move(mac)); }

  Result<void> pump(milliseconds wait) override {
    if (handshaken_ && Clock::now() - link_->last_sent() >= timeouts_.keepalive) {
      if (auto ok = link_->send(proto::Keepalive{stats::realtime_ns()}); !ok) return ok;
    }
    if (auto ok = link_->progress(wait); !ok) return ok;
    for (;;) {
      auto message = link_->take_message();
      if (!message) return Unexpected(message.error());
      if (!*message) break;
      if (auto ok = handle(**message); !ok) return ok;
    }
    if (link_->disconnected() && !receiver_ended_) {
      return make_error(ErrorCode::peer_closed, "receiver disconnected");
    }
    if (Clock::now() - link_->last_heard() >= timeouts_.peer) {
      return make_error(ErrorCode::timeout, "receiver silent for {} ms", timeouts_.peer.count());
    }
    return {};
  }

  Unexpected fail(const Error& error) override {
    if (!closed_) {
      closed_ = true;
      if (tell_receiver(error) && !link_->disconnected()) {
        (void)link_->send(proto::ErrorMessage{error.code(), error.message()});
        (void)link_->progress(milliseconds(100));
      }
      link_->disconnect();
    }
    return Unexpected(error.context(who_));
  }

  std::unique_ptr<Link> link_;
  std::vector<std::unique_ptr<Registration>> registrations_;  // frame memory, once each
  std::deque<InFlight> in_flight_;  // frames posted, not yet complete, oldest first
};

}  // namespace

Result<std::unique_ptr<sender::SenderConnection>> connect(const ConnectOptions& options) {
  if (!have_devices()) {
    return make_error(ErrorCode::unsupported,
                      "send: verbs connect to {}: no RDMA device on this machine (rdmavideo-doctor "
                      "tells more); use --transport tcp",
                      options.endpoint.to_string());
  }
  ConnectRequest request;
  request.credits_requested = options.credits_requested;
  auto link = Link::connect(options.endpoint, options.rdma_device, request, options.timeouts);
  if (!link) return Unexpected(link.error().context("send"));
  auto connection = std::make_unique<VerbsSenderConnection>(std::move(*link), options);
  if (auto ok = connection->handshake(options); !ok) return Unexpected(ok.error());
  return std::unique_ptr<sender::SenderConnection>(std::move(connection));
}

}  // namespace rdmavideo::verbs
