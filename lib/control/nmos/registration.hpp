// SPDX-License-Identifier: Apache-2.0
// IS-04 registration: find a registry (configured, or by DNS-SD as _nmos-register._tcp over
// unicast DNS and mDNS, by priority), register the node and then its resources, heartbeat
// every few seconds, register again after a 404 (a registry that restarted), move to the next
// registry when one stops answering, and, with none, run peer-to-peer (advertising
// _nmos-node._tcp with ver_* counters). A clean stop deletes what it registered.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rdmavideo/discovery.hpp"
#include "rdmavideo/nmos.hpp"

namespace rdmavideo::nmos {

using json = nlohmann::json;

/// One resource as the Registration API takes it: {"type": ..., "data": ...}.
// The check flags the implicit members of any struct holding an nlohmann::json.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Registered {
  std::string type;  ///< node, device, source, flow, sender, receiver
  json data;
};

class Registrar {
 public:
  /// `snapshot` lists every resource, node first, in the order they are registered.
  Registrar(const NodeOptions& options, uint16_t api_port,
            std::function<std::vector<Registered>()> snapshot);
  ~Registrar();  // deletes what it registered, then stops
  Registrar(const Registrar&) = delete;
  Registrar& operator=(const Registrar&) = delete;

  /// A resource changed (a subscription): registered again with the registry, and counted
  /// in the peer-to-peer ver_* record.
  void changed(const Registered& resource);
  std::string state() const;

 private:
  struct Registry {
    std::string host;
    uint16_t port = 0;
    int priority = 0;
    std::string url() const;
  };
  void loop();
  std::vector<Registry> candidates();
  bool register_all(const Registry& r);
  bool post(const Registry& r, const Registered& resource, int* status = nullptr);
  void deregister(const Registry& r);
  void advertise(bool peer_to_peer);
  void set_state(std::string state);

  const NodeOptions options_;
  const uint16_t api_port_;
  const std::function<std::vector<Registered>()> snapshot_;
  std::string node_id_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Registered> updates_;
  std::map<std::string, uint8_t> versions_;  // ver_slf, ver_src, ...: peer-to-peer counters
  std::string state_ = "starting";
  std::optional<Registry> current_;
  std::unique_ptr<discovery::Advertiser> node_advert_;
  bool advert_failed_ = false;            // said once
  std::set<std::string> unicast_failed_;  // domains whose lookup failed: said once each
  std::thread thread_;
};

}  // namespace rdmavideo::nmos
