// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/probe.hpp"

#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "rdmavideo/memory.hpp"
#include "tcp/socket.hpp"
#ifdef RDMAVIDEO_HAVE_VERBS
#include "verbs/handles.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"
#endif

namespace rdmavideo::probe {
namespace {

using std::chrono::milliseconds;

[[maybe_unused]] bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

[[maybe_unused]] std::string status_text(int status) {
  if (status < 0) return fmt::format("status {}: {}", status, std::strerror(-status));
  return fmt::format("status {}", status);
}

// The receiver's text in a consumer reject's private data, made printable.
[[maybe_unused]] std::string reject_text(const std::vector<std::byte>& private_data) {
  std::string text;
  for (std::byte b : private_data) {
    const auto c = static_cast<unsigned char>(b);
    if (c == 0) break;
    text += (c < 0x20 || c > 0x7e) ? '?' : static_cast<char>(c);
  }
  return text;
}

}  // namespace

const char* reject_reason_name(int status) {
  switch (status) {
    case 1: return "no QP";
    case 2: return "no EEC";
    case 3: return "no resources";
    case 4: return "timeout";
    case 5: return "unsupported request";
    case 6: return "invalid communication ID";
    case 8: return "invalid service ID";
    case 10: return "stale connection";
    case 12: return "invalid GID";
    case 26: return "invalid MTU";
    case 27: return "insufficient responder resources";
    case 28: return "consumer defined";
    default: return "reason";
  }
}

LockedMemory verbs_receiver_locked_memory(uint64_t frame_bytes, uint32_t ring_size) {
  LockedMemory m;
  m.slot_bytes = memory::round_up(frame_bytes, memory::kPageBytes);
  m.ring_bytes = uint64_t{ring_size} * m.slot_bytes;
#ifdef RDMAVIDEO_HAVE_VERBS
  m.control_bytes = uint64_t{verbs::kSendBuffers + verbs::kRecvDepth} * verbs::kControlBytes;
#endif
  return m;
}

Result<void> reach_tcp_listener(const Endpoint& peer, milliseconds timeout) {
  auto socket = tcp::connect(peer, timeout);
  if (!socket) return Unexpected(socket.error());
  return {};
}

#ifndef RDMAVIDEO_HAVE_VERBS

bool have_rdma_devices() { return false; }

VerbsReach reach_verbs_receiver(const Endpoint&, uint32_t, milliseconds) {
  VerbsReach r;
  r.error =
      "this build has no RDMA verbs transport (rdma-core was not found when it was configured)";
  return r;
}

Result<std::vector<DmabufImport>> probe_dmabuf_import(const std::string&) {
  return make_error(
      ErrorCode::unsupported,
      "this build has no RDMA verbs transport (rdma-core was not found when it was configured)");
}

#else

bool have_rdma_devices() { return verbs::have_devices(); }

namespace {

// The probe, one step after another; each failure fills `r` and ends it.
class Reach {
 public:
  Reach(const Endpoint& peer, uint32_t credits, milliseconds timeout)
      : peer_(peer), credits_(credits), timeout_(timeout) {}

  VerbsReach run() {
    if (!verbs::have_devices())
      return fail(VerbsReach::Step::no_device, "no RDMA device on this machine");
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* ai = nullptr;
    const std::string port = std::to_string(peer_.port);
    if (int rc = getaddrinfo(peer_.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
      return fail(VerbsReach::Step::resolve_name,
                  fmt::format("cannot resolve \"{}\": {}", peer_.host, gai_strerror(rc)));
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(ai, freeaddrinfo);
    if (is_loopback(ai->ai_addr)) {
      return fail(VerbsReach::Step::loopback,
                  fmt::format("{} is this machine's loopback address, and RDMA does not run over "
                              "lo",
                              peer_.host));
    }
    verbs::UniqueEventChannel channel(rdma_create_event_channel());
    if (!channel) {
      return fail(VerbsReach::Step::event_channel,
                  system_error("rdma_create_event_channel", errno).message(), errno);
    }
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
      return fail(VerbsReach::Step::event_channel, system_error("rdma_create_id", errno).message(),
                  errno);
    }
    verbs::UniqueCmId id(raw);  // destroys the QP, if any, before the id

    const int ms = static_cast<int>(timeout_.count());
    if (rdma_resolve_addr(id.get(), nullptr, ai->ai_addr, ms) != 0) {
      return fail(VerbsReach::Step::resolve_address,
                  system_error("rdma_resolve_addr", errno).message(), errno);
    }
    if (auto event = expect(channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED); !event) {
      return fail(VerbsReach::Step::resolve_address,
                  fmt::format("resolving the address: {}", event.error().message()));
    }
    r_.device = ibv_get_device_name(id->verbs->device);
    r_.port_num = id->port_num;
    r_.local_address = tcp::format_address(rdma_get_local_addr(id.get()));
    r_.steps.push_back(fmt::format("address resolved: from {} through {} port {}", r_.local_address,
                                   r_.device, r_.port_num));

    if (rdma_resolve_route(id.get(), ms) != 0) {
      return fail(VerbsReach::Step::resolve_route,
                  system_error("rdma_resolve_route", errno).message(), errno);
    }
    if (auto event = expect(channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED); !event) {
      return fail(VerbsReach::Step::resolve_route,
                  fmt::format("resolving the route: {}", event.error().message()));
    }
    if (id->route.num_paths > 0 && id->route.path_rec) {
      const unsigned mtu = id->route.path_rec->mtu;  // IB encoding: 1 = 256 ... 5 = 4096
      r_.path_mtu = mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
      r_.steps.push_back(fmt::format("route resolved: path MTU {}", r_.path_mtu));
    } else {
      r_.steps.emplace_back("route resolved");
    }

    // A small RC QP on the device's default PD; rdma_create_qp makes (and rdma_destroy_qp
    // frees) its CQs. The receiver sizes its own QP; ours only has to exist.
    ibv_qp_init_attr attr{};
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 1;
    attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id.get(), nullptr, &attr) != 0) {
      const int err = errno;
      return fail(
          VerbsReach::Step::create_qp,
          system_error(fmt::format("{} port {}: rdma_create_qp", r_.device, r_.port_num), err)
              .message(),
          err);
    }

    verbs::ConnectRequest request;
    request.credits_requested = credits_;
    r_.min_version = request.min_version;
    r_.max_version = request.max_version;
    const auto private_data = verbs::encode(request);
    rdma_conn_param param = verbs::connection_params(private_data);
    if (rdma_connect(id.get(), &param) != 0) {
      return fail(VerbsReach::Step::connect, system_error("rdma_connect", errno).message(), errno);
    }
    auto event = verbs::next_cm_event(channel.get(), wait());
    if (!event) {
      r_.event = "timeout";
      return fail(VerbsReach::Step::connect, fmt::format("connecting (qp 0x{:x}): {}",
                                                         id->qp->qp_num, event.error().message()));
    }
    r_.event = rdma_event_str(event->type);
    r_.status = event->status;
    if (event->type == RDMA_CM_EVENT_REJECTED) {
      r_.reject_reason = reject_text(event->private_data);
      return fail(
          VerbsReach::Step::connect,
          fmt::format("rejected: {} (status {}){}", reject_reason_name(event->status),
                      event->status, r_.reject_reason.empty() ? "" : ": " + r_.reject_reason));
    }
    if (event->type != RDMA_CM_EVENT_ESTABLISHED) {
      return fail(VerbsReach::Step::connect,
                  fmt::format("connecting: {} ({})", r_.event, status_text(event->status)));
    }
    r_.steps.push_back(fmt::format(
        "connected: qp 0x{:x}; the receiver accepted ConnectRequest (RDVF, versions {}..{})",
        id->qp->qp_num, request.min_version, request.max_version));
    r_.reached = VerbsReach::Step::connected;

    // A clean goodbye: DREQ, and the receiver's DREP comes back as DISCONNECTED.
    if (rdma_disconnect(id.get()) != 0) {
      r_.steps.push_back(system_error("rdma_disconnect", errno).message());
    } else if (auto bye = verbs::next_cm_event(channel.get(), wait()); !bye) {
      r_.steps.push_back(fmt::format("disconnect: {}", bye.error().message()));
    } else {
      r_.steps.push_back(fmt::format("disconnected: {}", rdma_event_str(bye->type)));
    }
    return r_;
  }

 private:
  VerbsReach fail(VerbsReach::Step step, std::string error, int err = 0) {
    r_.reached = step;
    r_.error = std::move(error);
    r_.error_errno = err;
    return r_;
  }

  // rdma_cm ends each step with an event of its own when `timeout_` runs out (ADDR_ERROR,
  // UNREACHABLE with ETIMEDOUT): wait a little longer so that event, which says more, wins.
  milliseconds wait() const { return timeout_ + milliseconds(1000); }

  // The next event, which must be `want`; any other names itself and its status.
  Result<verbs::CmEvent> expect(rdma_event_channel* channel, rdma_cm_event_type want) {
    auto event = verbs::next_cm_event(channel, wait());
    if (!event) {
      r_.event = "timeout";
      return Unexpected(event.error());
    }
    r_.event = rdma_event_str(event->type);
    r_.status = event->status;
    if (event->type == want) return event;
    return make_error(ErrorCode::peer_closed, "{} ({})", r_.event, status_text(event->status));
  }

  Endpoint peer_;
  uint32_t credits_;
  milliseconds timeout_;
  VerbsReach r_;
};

}  // namespace

VerbsReach reach_verbs_receiver(const Endpoint& peer, uint32_t credits_requested,
                                milliseconds timeout) {
  return Reach(peer, credits_requested, timeout).run();
}

Result<std::vector<DmabufImport>> probe_dmabuf_import(const std::string& device) {
  int count = 0;
  verbs::UniqueDeviceList list(ibv_get_device_list(&count));
  if (!list || count == 0) return make_error(ErrorCode::unsupported, "no RDMA device");
  std::vector<DmabufImport> found;
  for (int i = 0; i < count; ++i) {
    const std::string name = ibv_get_device_name(list.get()[i]);
    if (!device.empty() && name != device) continue;
    ibv_context* context = ibv_open_device(list.get()[i]);
    if (!context) return Unexpected(system_error(fmt::format("ibv_open_device({})", name), errno));
    {
      verbs::UniquePd pd(ibv_alloc_pd(context));
      if (!pd) {
        const int err = errno;
        ibv_close_device(context);
        return Unexpected(system_error(fmt::format("ibv_alloc_pd on {}", name), err));
      }
      found.push_back({name, verbs::probe_dmabuf(pd.get())});
    }
    ibv_close_device(context);
  }
  if (found.empty()) return make_error(ErrorCode::invalid_argument, "no RDMA device {}", device);
  return found;
}

#endif

}  // namespace rdmavideo::probe
