// SPDX-License-Identifier: Apache-2.0
// Verbs sender channel: frames go by RDMA WRITE straight from registered memory (a session's
// pool, registered once per device, or a buffer registered on first use) into the granted slot,
// then a FrameWritten SEND on the same QP announces them; the chain's ticket is the Link's, done
// when its SEND completes (RC: the WRITEs before it are done too).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>

#include "rdmavideo/log.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"

namespace rdmavideo::verbs {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Frame memory registered in a protection domain, for as long as any channel sends from it.
// Destroyed in reverse: the MR goes first, then the memory's owner, then the PD.
struct Registration {
  SharedPd pd;
  std::shared_ptr<const void> owner;
  UniqueMr mr;
};

// The frame memory registered by the process's sender channels, by protection domain and
// range. Connections through one device share its PD (Link::connect), so N destinations on
// one NIC find the pool registered by the first and cost one registration.
class Registry {
 public:
  /// The registration of exactly `memory` in `pd`: the one another channel holds, or one
  /// `make` makes now (second: true).
  Result<std::pair<std::shared_ptr<const Registration>, bool>> hold(
      const SharedPd& pd, std::span<const std::byte> memory, std::shared_ptr<const void> owner,
      const std::function<Result<UniqueMr>()>& make) {
    std::lock_guard lock(mu_);  // held while registering: two channels never register one range
    std::erase_if(held_, [](const auto& entry) { return entry.second.expired(); });
    const Key key{pd.get(), memory.data(), memory.size()};
    if (auto it = held_.find(key); it != held_.end()) {
      if (auto r = it->second.lock()) return std::pair{std::move(r), false};
    }
    auto mr = make();
    if (!mr) return Unexpected(mr.error());
    auto r = std::make_shared<Registration>(Registration{pd, std::move(owner), std::move(*mr)});
    held_[key] = r;
    return std::pair{std::shared_ptr<const Registration>(std::move(r)), true};
  }

 private:
  using Key = std::tuple<const ibv_pd*, const std::byte*, size_t>;
  std::mutex mu_;
  std::map<Key, std::weak_ptr<const Registration>> held_;
};

Registry& registry() {
  static Registry all;
  return all;
}

class VerbsSenderChannel final : public sender::SenderChannel {
 public:
  VerbsSenderChannel(std::unique_ptr<Link> link, const ConnectOptions& options)
      : link_(std::move(link)), who_(fmt::format("send {}", link_->peer())) {
    link_->set_stop(options.stop);
  }

  ~VerbsSenderChannel() override {
    close(nullptr, milliseconds(0));
    registrations_.clear();  // each registration keeps its PD until its MR is gone
  }

  TransportKind kind() const override { return TransportKind::verbs; }
  const std::string& peer() const override { return link_->peer(); }
  bool needs_ring_address() const override { return true; }
  uint32_t registrations() const override { return static_cast<uint32_t>(registrations_.size()); }
  uint32_t registrations_made() const override {
    return static_cast<uint32_t>(
        std::ranges::count_if(registrations_, [](const Held& h) { return h.made_here; }));
  }

  Result<void> send(const proto::Message& message) override { return link_->send(message); }

  Result<uint64_t> send_frame(std::span<const std::byte> frame, const proto::FrameWritten& written,
                              sender::RemoteSlot slot) override {
    const Registration* registration = find_registration(frame);
    if (!registration) {
      return make_error(ErrorCode::invalid_argument,
                        "frame at {} is in memory not registered with {}",
                        static_cast<const void*>(frame.data()), link_->device_name());
    }
    return link_->write_and_send(frame, registration->mr->lkey, slot.addr, slot.rkey, written);
  }

  bool done(uint64_t ticket) override {
    if (link_->send_done(ticket)) return true;
    (void)link_->progress(milliseconds(0));  // errors show on the next receive
    return link_->send_done(ticket);
  }

  Result<std::optional<proto::Message>> receive(milliseconds wait) override {
    auto message = link_->take_message();
    if (!message || *message) return message;
    if (link_->disconnected()) return make_error(ErrorCode::peer_closed, "receiver disconnected");
    if (auto ok = link_->progress(wait); !ok) return Unexpected(ok.error());
    message = link_->take_message();
    if (!message || *message) return message;
    if (link_->disconnected()) return make_error(ErrorCode::peer_closed, "receiver disconnected");
    return std::optional<proto::Message>{};
  }

  void protect(std::shared_ptr<auth::ControlMac> mac) override { link_->protect(std::move(mac)); }
  void negotiated(uint16_t version) override { link_->set_version(version); }
  size_t max_control_bytes() const override { return verbs::kControlBytes; }
  void wake() override { link_->wake(); }

  Result<void> register_memory(std::span<const std::byte> memory,
                               std::shared_ptr<const void> owner) override {
    if (registered(memory)) return {};
    return hold(memory, std::move(owner), [&]() -> Result<UniqueMr> {
      UniqueMr mr(ibv_reg_mr(link_->pd().get(), const_cast<std::byte*>(memory.data()),
                             memory.size(), static_cast<int>(IBV_ACCESS_LOCAL_WRITE)));
      if (!mr) {
        return Unexpected(
            system_error(fmt::format("verbs {}: ibv_reg_mr of {} bytes of frame memory",
                                     link_->device_name(), memory.size()),
                         errno));
      }
      log().debug("[{}] registered frame memory {} ({} bytes)", who_,
                  static_cast<const void*>(memory.data()), memory.size());
      return mr;
    });
  }

  bool registered(std::span<const std::byte> frame) const override {
    return find_registration(frame) != nullptr;
  }

  gpu::PathFacts gpu_facts() override { return verbs::gpu_facts(*link_); }

  // GPU memory the NIC reads straight from: a dma-buf the GPU exports, or the device
  // address resolved by nvidia-peermem.
  Result<void> register_gpu_memory(std::span<const std::byte> memory,
                                   std::shared_ptr<const void> owner, gpu::Path path,
                                   const cuda::Device& device) override {
    if (registered(memory)) return {};
    return hold(memory, std::move(owner), [&]() -> Result<UniqueMr> {
      auto mr = register_gpu(*link_, memory, path, device, IBV_ACCESS_LOCAL_WRITE);
      if (mr) {
        log().debug("[{}] registered {} bytes of {} by {}", who_, memory.size(), device.describe(),
                    gpu::to_string(path));
      }
      return mr;
    });
  }

  void forget_memory(std::span<const std::byte> memory) override {
    std::erase_if(registrations_, [&](const Held& h) {
      return h.registration->mr->addr == memory.data() &&
             h.registration->mr->length == memory.size();
    });
  }

  void close(const proto::Message* last, milliseconds linger) override {
    if (closed_) return;
    closed_ = true;
    bool sent = false;
    if (last && !link_->disconnected()) {
      sent = static_cast<bool>(link_->send(*last));
      if (sent && linger.count() == 0) (void)link_->progress(milliseconds(100));  // let it go out
    }
    // Wait for the receiver to disconnect (it has then taken everything), then disconnect.
    const auto deadline = Clock::now() + linger;
    while (!link_->disconnected() && Clock::now() < deadline) {
      if (!link_->progress(milliseconds(100))) break;
    }
    link_->disconnect();
  }

 private:
  struct Held {
    std::shared_ptr<const Registration> registration;
    bool made_here;  // registered by this channel (not found registered by another)
  };

  Result<void> hold(std::span<const std::byte> memory, std::shared_ptr<const void> owner,
                    const std::function<Result<UniqueMr>()>& make) {
    auto got = registry().hold(link_->pd(), memory, std::move(owner), make);
    if (!got) return Unexpected(got.error());
    if (!got->second) {
      log().debug("[{}] frame memory {} ({} bytes) is registered on {} already", who_,
                  static_cast<const void*>(memory.data()), memory.size(), link_->device_name());
    }
    registrations_.push_back({std::move(got->first), got->second});
    return {};
  }

  const Registration* find_registration(std::span<const std::byte> frame) const {
    for (const auto& h : registrations_) {
      const auto* base = static_cast<const std::byte*>(h.registration->mr->addr);
      if (frame.data() >= base &&
          frame.data() + frame.size() <= base + h.registration->mr->length) {
        return h.registration.get();
      }
    }
    return nullptr;
  }

  std::unique_ptr<Link> link_;
  std::string who_;                  // "send host:port" for messages
  std::vector<Held> registrations_;  // the frame memory this channel sends from
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<sender::SenderChannel>> connect(const ConnectOptions& options) {
  if (!have_devices()) {
    return make_error(ErrorCode::unsupported,
                      "send: verbs connect to {}: no RDMA device on this machine (rdmavideo-doctor "
                      "tells more); use the TCP transport",
                      options.endpoint.to_string());
  }
  ConnectRequest request;
  request.credits_requested = options.credits_requested;
  auto link = Link::connect(options.endpoint, options.rdma_device, request, options.timeouts);
  if (!link) return Unexpected(link.error().context("send"));
  return std::unique_ptr<sender::SenderChannel>(
      std::make_unique<VerbsSenderChannel>(std::move(*link), options));
}

}  // namespace rdmavideo::verbs
