// SPDX-License-Identifier: Apache-2.0
// The IS-04 v1.3 resources of an rdmavideo node, as JSON the schemas describe: the node,
// its device, and per sender a source, a flow and the sender (an audio source and flow beside
// them where it sends sound), per receiver a receiver.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmavideo/nmos.hpp"

namespace rdmavideo::nmos {

using json = nlohmann::json;

/// A network interface as IS-04's node resource lists it.
struct Interface {
  std::string name;     ///< "eth0"
  std::string mac;      ///< "aa-bb-cc-dd-ee-ff" (IS-04's form)
  std::string address;  ///< its first IPv4 address, if any
};
/// The machine's interfaces that are up, loopback left out.
std::vector<Interface> interfaces();

struct Common {
  std::string id, label, description;
};
json resource_core(const Common& c);

json node_resource(const Common& c, const std::string& host, uint16_t port,
                   const std::string& hostname, const std::vector<Interface>& interfaces);
json device_resource(const Common& c, const std::string& node_id,
                     const std::vector<std::string>& senders,
                     const std::vector<std::string>& receivers, const std::string& host,
                     uint16_t port);
json video_source(const Common& c, const std::string& device_id, Rational rate);
json audio_source(const Common& c, const std::string& device_id, const AudioFormat& audio);
json video_flow(const Common& c, const std::string& source_id, const std::string& device_id,
                const VideoFormat& video);
json audio_flow(const Common& c, const std::string& source_id, const std::string& device_id,
                const AudioFormat& audio);
json sender_resource(const Common& c, const std::string& flow_id, const std::string& device_id,
                     const std::vector<std::string>& interface_bindings);
json receiver_resource(const Common& c, const std::string& device_id,
                       const std::vector<std::string>& interface_bindings);

}  // namespace rdmavideo::nmos
