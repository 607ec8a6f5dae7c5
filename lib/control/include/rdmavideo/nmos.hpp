// SPDX-License-Identifier: Apache-2.0
// An NMOS node (AMWA IS-04 v1.3 Node API and registration, IS-05 v1.1 Connection API) over
// HTTP, so that a facility's registry lists rdmavideo's senders and receivers and its
// controller connects them. The node holds the resources and the IS-05 state; what an
// activation does (connect and stream, stop; take a sender) is the front end's, through the
// callbacks it gives. The data path's key is never carried over NMOS. docs/nmos.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::nmos {

/// The transport of rdmavideo's senders and receivers, as IS-04 and IS-05 name it: a vendor
/// URN (IS-04 1.3 "use of URNs": not in the urn:x-nmos namespace).
inline constexpr std::string_view kTransport = "urn:x-rdmavideo:transport:rdmavideo";

struct NodeOptions {
  /// Where the Node API (/x-nmos/node/v1.3) and the Connection API (/x-nmos/connection/v1.1)
  /// are served; port 0: any free port.
  Endpoint listen;
  /// The address the APIs are reached at, as advertised and registered; empty: the listen
  /// address, or where that is a wildcard, the address of the interface the registry is
  /// reached through (else the first non-loopback one).
  std::string advertise_host;
  std::string label;                  ///< the node's and its device's label
  std::string product = "rdmavideo";  ///< BCP-002-02's product: "rdmavideo-recv", ...
  std::string function;               ///< BCP-002-02's function of the device: "Receiver", "Sender"
  std::string description;            ///< "rdmavideo receiver", "rdmavideo sender"
  /// What the resources' ids derive from, so they stay the same across restarts (the host
  /// name, the role and the label, by default).
  std::string seed;
  /// Registries to register with, "http://host:port", by priority (the first first); empty:
  /// found by DNS-SD (_nmos-register._tcp, over mDNS and unicast DNS, by their "pri"), and
  /// with none found, peer-to-peer.
  std::vector<std::string> registries;
  /// The unicast DNS-SD domains to look for registries in ("studio.example"); empty: the
  /// resolver's search domains (resolv.conf, as DHCP set it).
  std::vector<std::string> domains;
  bool dnssd = true;  ///< browse for registries and advertise _nmos-node._tcp
  std::chrono::milliseconds heartbeat{5000};
};

/// A video stream as a sender sends it, for its source and flow.
struct VideoFormat {
  PixelFormat pix_fmt = PixelFormat::uyvy;
  uint32_t width = 0, height = 0;
  Rational rate{60, 1};
  Colour colour;
};
/// A sender's sound, for its audio source and flow.
struct AudioFormat {
  uint32_t channels = 2;
  uint32_t sample_rate = 48000;
};

/// What an IS-05 activation asks of a sender.
struct SenderActivation {
  bool enable = false;   ///< master_enable
  Endpoint destination;  ///< the receiver's address and port, or its DNS-SD name
  TransportKind transport = TransportKind::automatic;
  std::string stream_name;  ///< empty: the sender's own
  std::string receiver_id;  ///< the NMOS receiver it sends to, when the controller said
};
/// What an IS-05 activation asks of a receiver.
struct ReceiverActivation {
  bool enable = false;
  std::string sender_id;  ///< the NMOS sender it takes, when the controller said
};

class Node {
 public:
  /// Serves the APIs and starts registering (or advertising, peer-to-peer).
  static Result<std::unique_ptr<Node>> start(NodeOptions options);
  /// Withdraws from the registry (DELETE of every resource) and stops serving.
  virtual ~Node() = default;

  /// A sender: its source, flow and sender (and an audio source and flow where it sends
  /// sound). `activate` is called on the activation's thread, for each activation, with what
  /// is now active; it returns an error to refuse (the controller is told 500, and nothing
  /// becomes active). Returns the sender's id.
  virtual std::string add_sender(const std::string& label, const VideoFormat& video,
                                 const std::optional<AudioFormat>& audio,
                                 std::function<Result<void>(const SenderActivation&)> activate) = 0;
  /// A receiver that takes a stream on `listening` (the service's port, which its transport
  /// parameters show). Returns its id.
  virtual std::string add_receiver(
      const std::string& label, const Endpoint& listening, TransportKind transport,
      std::function<Result<void>(const ReceiverActivation&)> activate) = 0;
  /// The sender's stream ended by itself (its receiver went): it is no longer active.
  virtual void sender_stopped(const std::string& sender_id) = 0;

  /// Where the APIs are served.
  virtual Endpoint local_endpoint() const = 0;
  virtual std::string node_id() const = 0;
  /// "registered with http://...", "peer-to-peer (no registry found)", ...
  virtual std::string registration() const = 0;
};

}  // namespace rdmavideo::nmos
