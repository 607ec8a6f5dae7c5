// SPDX-License-Identifier: Apache-2.0
// check_peer: the first steps a sender takes, stopped before the protocol starts. Resolve the
// receiver's address and route with rdma_cm, create an RC QP, connect with the sender's
// ConnectRequest as private data (so an rdmavideo receiver checks and accepts it as it would
// a sender's), and disconnect at once. The receiver logs one "disconnected before Hello" for
// it and goes on listening. Each failure names the step, the rdma_cm event and status, and
// what to fix. When the connect fails, a TCP connect to the same HOST:PORT tells whether a
// receiver listens there on TCP instead.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "checks.hpp"
#include "tcp/socket.hpp"
#include "verbs/handles.hpp"
#include "verbs/link.hpp"
#include "verbs/verbs_transport.hpp"

namespace rdmavideo::doctor {
namespace {

using std::chrono::milliseconds;

constexpr int kRejectInvalidServiceId = 8;  // IB CM REJ reason: nothing listens on that port
constexpr int kRejectConsumerDefined = 28;  // rdma_reject() by the application

// IB CM REJ reasons (IBTA 12.6.7.2) that a RoCE or IB connect may come back with.
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

// The receiver's text in a consumer reject's private data, made printable.
std::string reject_text(const std::vector<std::byte>& private_data) {
  std::string text;
  for (std::byte b : private_data) {
    const auto c = static_cast<unsigned char>(b);
    if (c == 0) break;
    text += (c < 0x20 || c > 0x7e) ? '?' : static_cast<char>(c);
  }
  return text;
}

bool is_loopback(const sockaddr* address) {
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

std::string status_text(int status) {
  if (status < 0) return fmt::format("status {}: {}", status, std::strerror(-status));
  return fmt::format("status {}", status);
}

struct Outcome {
  Status status = Status::ok;
  std::string detail;
  std::string fix;
};

class PeerProbe {
 public:
  PeerProbe(const Endpoint& peer, uint32_t credits, milliseconds timeout)
      : peer_(peer), credits_(credits), timeout_(timeout) {}

  Outcome run() {
    if (!verbs::have_devices()) {
      return fail("cannot try an rdma_cm connect: no RDMA device on this machine",
                  "load an RDMA driver first (see RDMA devices above); without RDMA, run both "
                  "ends with --transport tcp");
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* ai = nullptr;
    const std::string port = std::to_string(peer_.port);
    if (int rc = getaddrinfo(peer_.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
      return fail(fmt::format("cannot resolve \"{}\": {}", peer_.host, gai_strerror(rc)),
                  "give the receiver's IP address, or a name this machine resolves");
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(ai, freeaddrinfo);
    if (is_loopback(ai->ai_addr)) {
      return fail(fmt::format("{} is this machine's loopback address, and RDMA does not run over "
                              "lo",
                              peer_.host),
                  "give the receiver's address on an RDMA netdev (a routable GID's address in the "
                  "tables above), even when the receiver runs on this machine");
    }

    verbs::UniqueEventChannel channel(rdma_create_event_channel());
    if (!channel) {
      return fail(system_error("rdma_create_event_channel", errno).message(),
                  "load the rdma_cm user module: modprobe rdma_ucm (/dev/infiniband/rdma_cm must "
                  "exist and be accessible)");
    }
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
      return fail(system_error("rdma_create_id", errno).message(), "modprobe rdma_ucm");
    }
    verbs::UniqueCmId id(raw);  // destroys the QP, if any, before the id

    const int ms = static_cast<int>(timeout_.count());
    if (rdma_resolve_addr(id.get(), nullptr, ai->ai_addr, ms) != 0) {
      return fail(system_error("rdma_resolve_addr", errno).message(), address_fix());
    }
    if (auto event = expect(channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED); !event) {
      // ENODEV: the route leaves through a netdev without an RDMA device. Otherwise
      // (ETIMEDOUT, EHOSTUNREACH, our own timeout) no neighbour answered.
      return fail(
          fmt::format("resolving the address: {}", event.error().message()),
          status_ == -ENODEV || status_ == -EADDRNOTAVAIL ? address_fix() : neighbour_fix());
    }
    device_ = ibv_get_device_name(id->verbs->device);
    port_num_ = id->port_num;
    local_ = tcp::format_address(rdma_get_local_addr(id.get()));
    steps_.push_back(
        fmt::format("address resolved: from {} through {} port {}", local_, device_, port_num_));

    if (rdma_resolve_route(id.get(), ms) != 0) {
      return fail(system_error("rdma_resolve_route", errno).message(), route_fix());
    }
    if (auto event = expect(channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED); !event) {
      return fail(fmt::format("resolving the route: {}", event.error().message()), route_fix());
    }
    if (id->route.num_paths > 0 && id->route.path_rec) {
      const unsigned mtu = id->route.path_rec->mtu;  // IB encoding: 1 = 256 ... 5 = 4096
      path_mtu_ = mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
      steps_.push_back(fmt::format("route resolved: path MTU {}", path_mtu_));
    } else {
      steps_.push_back("route resolved");
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
      return fail(system_error(fmt::format("{} port {}: rdma_create_qp", device_, port_num_), err)
                      .message(),
                  err == ENOMEM
                      ? "raise the locked-memory limit (see memlock above): ulimit -l unlimited"
                      : "see the driver's messages in dmesg");
    }

    verbs::ConnectRequest request;
    request.credits_requested = credits_;
    const auto private_data = verbs::encode(request);
    rdma_conn_param param = verbs::connection_params(private_data);
    if (rdma_connect(id.get(), &param) != 0) {
      return fail(system_error("rdma_connect", errno).message(), unreachable_fix());
    }
    auto event = verbs::next_cm_event(channel.get(), wait());
    if (!event) {
      event_ = "timeout";
      return fail(
          fmt::format("connecting (qp 0x{:x}): {}", id->qp->qp_num, event.error().message()),
          unreachable_fix());
    }
    event_ = rdma_event_str(event->type);
    status_ = event->status;
    switch (event->type) {
      case RDMA_CM_EVENT_ESTABLISHED: break;
      case RDMA_CM_EVENT_REJECTED: return rejected(*event);
      default:
        return fail(fmt::format("connecting: {} ({})", event_, status_text(event->status)),
                    unreachable_fix());
    }
    steps_.push_back(
        fmt::format("connected: qp 0x{:x}; the receiver accepted ConnectRequest (RDVF, "
                    "versions {}..{})",
                    id->qp->qp_num, request.min_version, request.max_version));
    established_ = true;

    // A clean goodbye: DREQ, and the receiver's DREP comes back as DISCONNECTED.
    if (rdma_disconnect(id.get()) != 0) {
      steps_.push_back(system_error("rdma_disconnect", errno).message());
    } else if (auto bye = verbs::next_cm_event(channel.get(), wait()); !bye) {
      steps_.push_back(fmt::format("disconnect: {}", bye.error().message()));
    } else {
      steps_.push_back(fmt::format("disconnected: {}", rdma_event_str(bye->type)));
    }
    Outcome ok;
    ok.detail = fmt::format("rdma_cm connect through {} port {} accepted", device_, port_num_);
    return ok;
  }

  const std::vector<std::string>& steps() const { return steps_; }
  /// rdma_cm got an answer from the peer's host: a reject, or a connection.
  bool reached_host() const { return event_ == "RDMA_CM_EVENT_REJECTED" || established_; }

  nlohmann::json facts() const {
    return {{"endpoint", peer_.to_string()},
            {"device", device_},
            {"port", port_num_},
            {"local_address", local_},
            {"path_mtu", path_mtu_},
            {"event", event_},
            {"status", status_},
            {"reason", reason_},
            {"established", established_}};
  }

 private:
  Outcome fail(std::string detail, std::string fix) {
    return {Status::fail, std::move(detail), std::move(fix)};
  }

  // rdma_cm ends each step with an event of its own when `timeout_` runs out (ADDR_ERROR,
  // UNREACHABLE with ETIMEDOUT): wait a little longer so that event, which says more, wins.
  milliseconds wait() const { return timeout_ + milliseconds(1000); }

  // The next event, which must be `want`; any other names itself and its status.
  Result<verbs::CmEvent> expect(rdma_event_channel* channel, rdma_cm_event_type want) {
    auto event = verbs::next_cm_event(channel, wait());
    if (!event) {
      event_ = "timeout";
      return Unexpected(event.error());
    }
    event_ = rdma_event_str(event->type);
    status_ = event->status;
    if (event->type == want) return event;
    return make_error(ErrorCode::peer_closed, "{} ({})", event_, status_text(event->status));
  }

  Outcome rejected(const verbs::CmEvent& event) {
    reason_ = reject_text(event.private_data);
    if (event.status == kRejectConsumerDefined && !reason_.empty()) {
      return fail(fmt::format("rejected by the receiver: {}", reason_),
                  "the receiver's reason names what to change (its --rdma-device, or run the same "
                  "rdmavideo version on both ends)");
    }
    if (event.status == kRejectInvalidServiceId) {
      return fail(
          fmt::format("nothing listens for rdma_cm on port {} at {} (REJECTED: {}, status {})",
                      peer_.port, peer_.host, reject_reason_name(event.status), event.status),
          listener_fix());
    }
    return fail(fmt::format("rejected: {} (status {}){}", reject_reason_name(event.status),
                            event.status, reason_.empty() ? "" : ": " + reason_),
                event.status == kRejectConsumerDefined
                    ? "the application on that port rejected without a reason: is it an rdmavideo "
                      "receiver?"
                    : unreachable_fix());
  }

  std::string listener_fix() const {
    return fmt::format(
        "start the receiver there with RDMA: rdmavideo-recv --listen {} --transport verbs (or "
        "auto, which takes TCP and RDMA on one port), and check the port",
        peer_.to_string());
  }

  std::string address_fix() const {
    return fmt::format(
        "no RDMA device reaches {0}: the route to it (ip route get {0}) must leave "
        "through a netdev with an RDMA device (rdma link show) and a routable GID "
        "(see the GID tables above); connect to the receiver's address on the RDMA "
        "network",
        peer_.host);
  }

  std::string neighbour_fix() const {
    return fmt::format(
        "{0} did not answer ARP/neighbour discovery on the RDMA network: is that "
        "host up, and is {0} its address on that network? (ping {0}; ip neigh show "
        "{0})",
        peer_.host);
  }

  std::string route_fix() const {
    return fmt::format(
        "RoCE: the netdev needs a neighbour entry for {} (ping it) and a RoCE v2 GID "
        "for the source address; InfiniBand: a subnet manager must answer path "
        "queries",
        peer_.host);
  }

  std::string unreachable_fix() const {
    return fmt::format(
        "is rdmavideo-recv running on {} with --listen {} and --transport verbs or auto? Does "
        "the firewall pass UDP 4791 (RoCE v2) both ways? Does the peer's RDMA device have a "
        "routable GID for {}?",
        peer_.host, peer_.to_string(), peer_.host);
  }

  Endpoint peer_;
  uint32_t credits_;
  milliseconds timeout_;
  std::vector<std::string> steps_;  // what succeeded, in order, for the info lines
  std::string device_;              // the device rdma_cm resolved the address to
  int port_num_ = 0;
  std::string local_;  // our address on that device
  uint32_t path_mtu_ = 0;
  std::string event_;  // the last rdma_cm event, or "timeout"
  int status_ = 0;
  std::string reason_;  // a reject's private-data text
  bool established_ = false;
};

}  // namespace

Section check_peer(const std::optional<Endpoint>& peer, uint32_t credits_requested,
                   milliseconds timeout) {
  Section s{"Peer", "peer", {}, nullptr};
  if (!peer) {
    s.checks.push_back({"peer",
                        "peer",
                        Status::skip,
                        "no --peer given (--peer HOST:PORT tries an rdma_cm connect to a "
                        "receiver)",
                        "",
                        {}});
    return s;
  }
  PeerProbe probe(*peer, credits_requested, timeout);
  Outcome outcome = probe.run();
  Check c{"peer",         fmt::format("peer {}", peer->to_string()),
          outcome.status, outcome.detail,
          outcome.fix,    probe.steps()};
  s.facts = probe.facts();
  if (outcome.status == Status::fail) {
    // Does a receiver listen there on TCP instead? Costs that receiver one failed handshake.
    auto socket = tcp::connect(*peer, timeout);
    s.facts["tcp_listener"] = socket.has_value();
    if (socket) {
      c.info.push_back(
          fmt::format("TCP: a listener answers on {}: a receiver with --transport tcp "
                      "is reachable there, but not by RDMA",
                      peer->to_string()));
      if (probe.reached_host()) {
        c.fix = fmt::format(
            "the receiver on {} takes TCP only: restart it with --transport verbs, or auto on a "
            "machine with an RDMA device (auto logs why it fell back to TCP); or send with "
            "--transport tcp",
            peer->to_string());
      }
    } else if (int err = socket.error().sys_errno(); err != 0) {
      c.info.push_back(fmt::format("TCP to {}: {} (no TCP receiver there either)",
                                   peer->to_string(), std::strerror(err)));
    } else {
      c.info.push_back(fmt::format("TCP: {}", socket.error().message()));
    }
  }
  s.checks.push_back(std::move(c));
  return s;
}

}  // namespace rdmavideo::doctor
