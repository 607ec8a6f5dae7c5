// SPDX-License-Identifier: Apache-2.0
// check_peer: the first steps a sender takes, stopped before the protocol starts, through the
// library's probe (rdmavideo/probe.hpp): resolve the receiver's address and route with
// rdma_cm, create an RC QP, connect with the sender's ConnectRequest as private data (so an
// rdmavideo receiver checks and accepts it as it would a sender's), and disconnect at once.
// This file turns the step that failed into advice. The receiver logs one "disconnected before
// Hello" for it and goes on listening. Each failure names the step, the rdma_cm event and status,
// and what to fix. When the connect fails, a TCP connect to the same HOST:PORT tells whether a
// receiver listens there on TCP instead.
#include <cerrno>
#include <cstring>
#include <string>

#include "checks.hpp"
#include "rdmavideo/probe.hpp"

namespace rdmavideo::doctor {
namespace {

using std::chrono::milliseconds;
using Step = probe::VerbsReach::Step;

struct Outcome {
  Status status = Status::ok;
  std::string detail;
  std::string fix;
};

// What each failed step of the library's probe means for the user, and what to do.
class PeerAdvice {
 public:
  explicit PeerAdvice(const Endpoint& peer) : peer_(peer) {}

  Outcome judge(const probe::VerbsReach& r) const {
    switch (r.reached) {
      case Step::connected:
        return {Status::ok,
                fmt::format("rdma_cm connect through {} port {} accepted", r.device, r.port_num),
                ""};
      case Step::no_device:
        return fail("cannot try an rdma_cm connect: " + r.error,
                    "load an RDMA driver first (see RDMA devices above); without RDMA, run both "
                    "ends with --transport tcp");
      case Step::resolve_name:
        return fail(r.error, "give the receiver's IP address, or a name this machine resolves");
      case Step::loopback:
        return fail(r.error,
                    "give the receiver's address on an RDMA netdev (a routable GID's address in "
                    "the tables above), even when the receiver runs on this machine");
      case Step::event_channel:
        return fail(r.error,
                    "load the rdma_cm user module: modprobe rdma_ucm (/dev/infiniband/rdma_cm "
                    "must exist and be accessible)");
      case Step::resolve_address:
        // ENODEV: the route leaves through a netdev without an RDMA device. Otherwise
        // (ETIMEDOUT, EHOSTUNREACH, our own timeout) no neighbour answered.
        return fail(r.error, r.error_errno != 0 || r.status == -ENODEV || r.status == -EADDRNOTAVAIL
                                 ? address_fix()
                                 : neighbour_fix());
      case Step::resolve_route: return fail(r.error, route_fix());
      case Step::create_qp:
        return fail(r.error, r.error_errno == ENOMEM
                                 ? "raise the locked-memory limit (see memlock above): ulimit -l "
                                   "unlimited"
                                 : "see the driver's messages in dmesg");
      case Step::connect: return connect_failed(r);
    }
    return fail(r.error, "");
  }

 private:
  static Outcome fail(std::string detail, std::string fix) {
    return {Status::fail, std::move(detail), std::move(fix)};
  }

  Outcome connect_failed(const probe::VerbsReach& r) const {
    if (r.event != "RDMA_CM_EVENT_REJECTED") return fail(r.error, unreachable_fix());
    if (r.status == probe::kRejectConsumerDefined && !r.reject_reason.empty()) {
      return fail(fmt::format("rejected by the receiver: {}", r.reject_reason),
                  "the receiver's reason names what to change (its --rdma-device, or run the same "
                  "rdmavideo version on both ends)");
    }
    if (r.status == probe::kRejectInvalidServiceId) {
      return fail(
          fmt::format("nothing listens for rdma_cm on port {} at {} (REJECTED: {}, status {})",
                      peer_.port, peer_.host, probe::reject_reason_name(r.status), r.status),
          listener_fix());
    }
    return fail(r.error, r.status == probe::kRejectConsumerDefined
                             ? "the application on that port rejected without a reason: is it an "
                               "rdmavideo receiver?"
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
};

nlohmann::json facts_of(const Endpoint& peer, const probe::VerbsReach& r) {
  return {{"endpoint", peer.to_string()},
          {"device", r.device},
          {"port", r.port_num},
          {"local_address", r.local_address},
          {"path_mtu", r.path_mtu},
          {"event", r.event},
          {"status", r.status},
          {"reason", r.reject_reason},
          {"established", r.reached == Step::connected}};
}

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
  const auto reach = probe::reach_verbs_receiver(*peer, credits_requested, timeout);
  Outcome outcome = PeerAdvice(*peer).judge(reach);
  Check c{"peer",         fmt::format("peer {}", peer->to_string()),
          outcome.status, outcome.detail,
          outcome.fix,    reach.steps};
  s.facts = facts_of(*peer, reach);
  // rdma_cm got an answer from the peer's host: a reject, or a connection.
  const bool reached_host =
      reach.event == "RDMA_CM_EVENT_REJECTED" || reach.reached == Step::connected;
  if (outcome.status == Status::fail) {
    // Does a receiver listen there on TCP instead? Costs that receiver one failed handshake.
    auto socket = probe::reach_tcp_listener(*peer, timeout);
    s.facts["tcp_listener"] = socket.has_value();
    if (socket) {
      c.info.push_back(
          fmt::format("TCP: a listener answers on {}: a receiver with --transport tcp "
                      "is reachable there, but not by RDMA",
                      peer->to_string()));
      if (reached_host) {
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
