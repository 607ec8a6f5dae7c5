// SPDX-License-Identifier: Apache-2.0
// What both ends of every transport share: the transport kinds, endpoints, timeouts and the
// options a receiver listens and a sender connects with. The services built on them are
// ReceiverService (receiver_service.hpp) and SenderSession (sender_session.hpp); the
// transports themselves (TCP, verbs) and the receiver core they share are private to the
// library.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo {

enum class TransportKind { automatic, tcp, verbs };
std::string_view to_string(TransportKind kind);
std::optional<TransportKind> parse_transport(std::string_view text);
/// Why `auto` cannot try verbs first here (this build has none, or this machine has no RDMA
/// device), in words for the user; nullopt when it can.
std::optional<std::string> why_not_verbs();

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  /// `host` is a receiver's name, to be found by DNS-SD when it is connected to
  /// (SenderSessionOptions::resolve); `port` is then 0.
  bool named = false;
  std::string to_string() const;
};
/// "HOST:PORT", "[v6addr]:PORT"; port 0 is allowed only when listening.
Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero);
/// Where a sender connects: "HOST:PORT", "[v6addr]:PORT", or a receiver's name as it
/// advertises itself (anything that does not end in ":PORT": "studio recorder"), found by
/// DNS-SD at connect.
Result<Endpoint> parse_destination(std::string_view text);
/// The most receivers one sender sends to (a fan-out; its frames' destinations are a 64-bit
/// mask).
inline constexpr size_t kMaxDestinations = 64;
/// A fan-out's receivers as one setting spells them: "HOST:PORT,HOST:PORT" (or names, see
/// parse_destination), spaces around each ignored. Errors quote the whole list and name the bad
/// entry; an empty list and one of more than kMaxDestinations are refused.
Result<std::vector<Endpoint>> parse_endpoints(std::string_view list);

struct Timeouts {
  std::chrono::milliseconds connect{5000};    ///< connect and handshake, as a whole
  std::chrono::milliseconds keepalive{1000};  ///< send a Keepalive after this much silence
  std::chrono::milliseconds peer{5000};       ///< the peer is dead after this much silence
};

struct ListenOptions {
  Endpoint endpoint;
  std::string rdma_device;                ///< verbs: only accept on this device; empty: any
  uint32_t ring_size = 8;                 ///< slots in each ring, 1..proto::kMaxRingSlots
  uint64_t max_frame_bytes = 1ull << 30;  ///< largest frame accepted
  Timeouts timeouts;
  /// When set, every sender must prove this key before it is told anything about a ring,
  /// and this end proves it back (docs/security.md).
  std::shared_ptr<const auth::SharedKey> key;
  /// The highest protocol version offered (proto::kMinVersion..proto::kVersion): 2 makes a
  /// receiver of the previous version, which takes video only (--protocol-version).
  uint16_t max_version = proto::kVersion;
};

struct ConnectOptions {
  Endpoint endpoint;
  std::string rdma_device;  ///< verbs: the device the route must use; empty: any
  /// Largest frame this sender will send; 0 when not known yet (a GStreamer sink before
  /// caps): each StreamStart's frame size is then left to the receiver to judge.
  uint64_t max_frame_bytes = 0;
  uint32_t credits_requested = 0;
  Timeouts timeouts;
  /// When set, the receiver must prove this key before a frame is sent, and this end proves
  /// it too; a receiver that cannot is refused.
  std::shared_ptr<const auth::SharedKey> key;
  /// When set and it becomes true, a frame write blocked on a receiver that does not read
  /// gives up within one keepalive interval (errno EINTR). A signal that interrupts a call
  /// is then not a stop unless the flag is set.
  const std::atomic<bool>* stop = nullptr;
  /// The highest protocol version offered in Hello (proto::kMinVersion..proto::kVersion).
  uint16_t max_version = proto::kVersion;
};

}  // namespace rdmavideo
