// SPDX-License-Identifier: Apache-2.0
// DNS-SD (RFC 6763) over the system's mDNS responder: a receiver advertises itself as
// `_rdmavideo._tcp`, a sender that is given a name as `_rdmavideo-send._tcp`, and a sender
// finds a receiver by its name instead of its address. On Linux the responder is
// avahi-daemon, through Avahi's client library; where none runs (or this build has none),
// advertising and browsing fail with an error that says so, and everything that takes an
// address goes on working by address. docs/discovery.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmavideo/result.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::discovery {

/// The service types: a receiver (its port the one senders connect to) and a sender (its
/// port its metrics endpoint, or 0 where it has none).
inline constexpr std::string_view kReceiverType = "_rdmavideo._tcp";
inline constexpr std::string_view kSenderType = "_rdmavideo-send._tcp";

/// A TXT record's keys and values, in order (RFC 6763 section 6).
using Txt = std::vector<std::pair<std::string, std::string>>;
std::optional<std::string> txt_value(const Txt& txt, std::string_view key);
/// The record as DNS-SD carries it: a list of "key=value" strings, each at most 255 bytes.
/// A pair that does not fit, or a key that is empty, has '=' or is not printable ASCII, is
/// refused, naming it.
Result<std::vector<std::string>> txt_strings(const Txt& txt);
/// The other way: strings without '=' are keys without a value (""); the first of a
/// repeated key counts (RFC 6763 6.4).
Txt parse_txt(const std::vector<std::string>& strings);

/// What a browse found: one service instance, resolved.
struct Service {
  std::string name;     ///< the instance name, as established ("studio recorder #2")
  std::string type;     ///< kReceiverType or kSenderType
  std::string domain;   ///< "local"
  std::string host;     ///< its host's name ("recorder-1.local")
  std::string address;  ///< an address of it, IPv4 first ("10.0.0.2", "fe80::1%eth0")
  uint16_t port = 0;
  std::string interface;  ///< where it was seen
  Txt txt;
  /// Where to connect: the address and the port.
  Endpoint endpoint() const { return Endpoint{address, port}; }
};

/// One service to advertise.
struct Advert {
  std::string name;  ///< the instance name wanted; taken on the network, it gets " #2", ...
  std::string_view type = kReceiverType;
  uint16_t port = 0;
  Txt txt;
};

/// An advertisement, for as long as it lives: it is withdrawn (a goodbye on the network) when
/// destroyed. Safe to use from any thread.
class Advertiser {
 public:
  /// Publishes `advert`; returns once the responder has taken it (the name may still be
  /// changed by a conflict found later, which name() then shows). Fails when no responder
  /// runs, naming it.
  static Result<std::unique_ptr<Advertiser>> start(Advert advert);
  virtual ~Advertiser() = default;
  /// Replaces the TXT record (a receiver's streams free).
  virtual Result<void> update(const Txt& txt) = 0;
  /// The name as established on the network.
  virtual std::string name() const = 0;
  /// Renames so far (conflicts with a name already on the network).
  virtual uint32_t renames() const = 0;
};

/// Every instance of `type` the network shows within `wait` (the browse ends early once the
/// responder has answered from its cache and the network and every instance is resolved).
/// Sorted by name.
Result<std::vector<Service>> browse(std::string_view type, std::chrono::milliseconds wait);

/// The instance `name` of `type`, resolved (no browse: it is asked for by name). Fails with
/// ErrorCode::timeout, naming it, when nothing answers within `wait`.
Result<Service> find(std::string_view name, std::string_view type, std::chrono::milliseconds wait);

/// Unicast DNS-SD: the instances of `type` that the system's name servers list in `domain`
/// ("studio.example"), each resolved (SRV, TXT, and its target's address); empty where the
/// domain lists none. Needs no responder. Fails where no name server answers, naming what was
/// asked.
Result<std::vector<Service>> browse_unicast(std::string_view type, std::string_view domain);
/// The domains a unicast browse looks in when none is given: the resolver's search list
/// (resolv.conf's `search` or `domain`, as DHCP set it), "local" left out.
std::vector<std::string> search_domains();

/// Whether this build can reach a responder at all (Avahi's client library built in).
bool available();

/// For SenderSessionOptions::resolve: a destination that names a receiver ("studio-recorder",
/// no port) is found by DNS-SD at each connect, waiting up to `wait`.
std::function<Result<Endpoint>(const Endpoint& named)> receiver_resolver(
    std::chrono::milliseconds wait);

/// Where a setting names a host and a port apart (rdmasink's host and port): `host` as it is
/// when it is an address or a host name the system resolves, else a receiver's name to find by
/// DNS-SD (the port is then the one it advertises).
Endpoint host_or_name(const std::string& host, uint16_t port);

// What a receiver puts in its TXT record, and reads back from one.
struct ReceiverRecord {
  uint16_t protocol = 0;                ///< the highest protocol version it takes
  std::vector<std::string> transports;  ///< "tcp", "verbs"
  bool key_required = false;
  std::string key_id;  ///< auth::key_id() of its key; never the key
  uint32_t streams_free = 0;
  uint32_t max_streams = 0;
  std::string version;  ///< rdmavideo's version
};
Txt receiver_txt(const ReceiverRecord& record);
/// Fails naming the key that is missing or not a number.
Result<ReceiverRecord> parse_receiver_txt(const Txt& txt);

}  // namespace rdmavideo::discovery
