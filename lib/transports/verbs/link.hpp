// SPDX-License-Identifier: Apache-2.0
// One RC connection made with rdma_cm, and everything it owns: event channel, cm id, PD,
// completion channel, CQ, QP and the registered buffers of its control messages.
//
// Control messages (the protocol's messages, docs/protocol.md) travel as SENDs from a pool
// of registered send buffers into pre-posted receive buffers. Frame payloads travel as RDMA
// WRITEs chained in front of the FrameWritten SEND, so the receiver's one completion for the
// SEND means the payload is in place (RC delivers in order).
//
// A Link is driven by one thread: progress() polls the CQ and the cm channel (waiting on
// their fds), queues received messages for take_message(), and retires send buffers. Only
// wake() may be called from another thread: it ends a wait in progress().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/handshake.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/transport.hpp"
#include "rdmavideo/unique_handle.hpp"
#include "verbs/cm.hpp"
#include "verbs/handles.hpp"

namespace rdmavideo::verbs {

inline constexpr size_t kControlBytes = 4096;  // one control message buffer
inline constexpr uint32_t kRecvDepth = 256;    // receives posted per connection
inline constexpr uint32_t kSendBuffers = 64;   // control messages in flight per connection
// Every CreditReturn fits one control buffer, and the credits in flight fit the receives.
static_assert(proto::kHeaderBytes + 8 + 4 * proto::kMaxRingSlots + auth::ControlMac::kTagBytes <=
              kControlBytes);
// So does every Error, tag included.
static_assert(proto::kHeaderBytes + 8 + proto::kMaxErrorText + auth::ControlMac::kTagBytes <=
              kControlBytes);
static_assert(proto::kMaxRingSlots < kRecvDepth);

class Link {
 public:
  using Clock = std::chrono::steady_clock;

  /// Active side: resolves address and route, builds the QP and connects. `device`, when
  /// not empty, must be the device the route goes through.
  static Result<std::unique_ptr<Link>> connect(const Endpoint& endpoint, const std::string& device,
                                               const ConnectRequest& request,
                                               const Timeouts& timeouts);
  /// Passive side, first step: takes a CONNECT_REQUEST's id onto an event channel of its
  /// own. Quick; the listener's thread does it.
  static Result<std::unique_ptr<Link>> adopt(UniqueCmId id, const Timeouts& timeouts);
  /// Passive side, second step: builds the QP, accepts, and waits for ESTABLISHED until
  /// `deadline`. The connection's own thread does it.
  Result<void> accept(Clock::time_point deadline);

  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  const std::string& peer() const { return peer_; }
  std::string device_name() const;
  uint32_t qp_num() const;
  const SharedPd& pd() const { return pd_; }
  uint64_t max_message_bytes() const { return max_message_bytes_; }

  /// Posts a message as a signaled SEND, waiting for a free send buffer if need be.
  Result<void> send(const proto::Message& message);
  /// Posts RDMA WRITEs of `local` (registered under `lkey`) to remote_addr/rkey, in chunks of
  /// at most max_message_bytes(), and `message` as a SEND after them, as one chain. Returns
  /// a ticket; send_done(ticket) tells when the chain is complete (`local` is free again).
  Result<uint64_t> write_and_send(std::span<const std::byte> local, uint32_t lkey,
                                  uint64_t remote_addr, uint32_t rkey,
                                  const proto::Message& message);
  bool send_done(uint64_t ticket) const { return completed_ticket_ >= ticket; }

  /// Acts on completions and cm events; waits up to `wait` when there is nothing to do.
  Result<void> progress(std::chrono::milliseconds wait);
  /// The next message received, decoded now (and its tag opened once protect() was called);
  /// a message that does not decode or open is an error.
  Result<std::optional<proto::Message>> take_message();
  /// From now on every message sent is sealed and every message taken must open.
  void protect(std::shared_ptr<auth::ControlMac> mac) { mac_ = std::move(mac); }
  /// The version the handshake chose: every later message is written with it.
  void set_version(uint16_t version) { version_ = version; }

  /// The peer disconnected (or the connection failed); queued messages stay readable.
  bool disconnected() const { return disconnected_; }
  void disconnect();  // idempotent
  /// Thread-safe: ends a wait in progress().
  void wake();
  /// The owner's stop flag (ListenOptions/ConnectOptions::stop): when given, a signal that
  /// interrupts progress() is an error only once the flag is set.
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }

  Clock::time_point last_heard() const { return last_heard_; }
  Clock::time_point last_sent() const { return last_sent_; }

 private:
  struct SendBuffer {
    uint64_t ticket = 0;  // the send's ticket while in flight
    bool busy = false;
  };

  // Whose protection domain the QP is made in: the device's, shared by every connection this
  // process makes through it (the connecting side: its memory is local access only, so
  // sharing lets no peer reach more), or the connection's own (the accepting side, whose
  // ring is remote-writable by that one peer).
  enum class PdScope { device, connection };

  Link(UniqueEventChannel channel, UniqueCmId id, const Timeouts& timeouts);
  Result<void> make_wake_fd();
  Result<void> build_qp(PdScope scope);
  Result<void> post_recv(uint32_t index);
  Result<uint32_t> acquire_send_buffer();
  Result<void> handle_completion(const ibv_wc& wc);
  Result<void> handle_cm_event();
  // QP, CQ, port and device events from the device's async fd. Fatal ones for this QP, its
  // CQ, the port or the device end this connection, naming the event. The fd belongs to the
  // device context, which every connection of the process shares: whichever link reads an
  // event for another connection's QP acks it and only logs it, so with many connections a
  // fatal QP event may be noticed by its own connection only through the flushed completions
  // and DISCONNECTED event that follow it (or the keepalive watchdog). One thread
  // dispatching these per device would route each to its QP.
  Result<void> handle_async_event();
  Result<size_t> drain_cq();

  // Declared in creation order so members are destroyed in reverse; the destructor destroys
  // the QP first, as rdma_cm requires, before the CQ it uses.
  UniqueEventChannel channel_;          // this connection's cm events
  UniqueCmId id_;                       // owns the QP (rdma_create_qp)
  SharedPd pd_;                         // the device's (connect) or its own (accept)
  UniqueCompChannel comp_channel_;      // CQ notifications
  UniqueCq cq_;                         // sends and receives
  std::vector<std::byte> send_memory_;  // kSendBuffers * kControlBytes
  std::vector<std::byte> recv_memory_;  // kRecvDepth * kControlBytes
  UniqueMr send_mr_;
  UniqueMr recv_mr_;
  UniqueFd wake_fd_;  // eventfd for wake()

  Timeouts timeouts_;
  std::string peer_;                // "host:port" for messages
  const char* peer_role_ = "peer";  // "receiver" for the side that connected, else "sender"
  uint64_t max_message_bytes_ = 0;  // port's max_msg_sz
  std::vector<SendBuffer> send_buffers_;
  std::vector<uint32_t> free_send_;           // indices of idle send buffers
  uint64_t next_ticket_ = 1;                  // ticket of the next SEND posted
  uint64_t completed_ticket_ = 0;             // every SEND up to this ticket has completed
  std::deque<std::vector<std::byte>> inbox_;  // received, not yet taken
  std::shared_ptr<auth::ControlMac> mac_;     // once authenticated
  uint16_t version_ = proto::kVersion;        // as negotiated
  bool disconnected_ = false;
  bool disconnect_sent_ = false;
  const std::atomic<bool>* stop_ = nullptr;  // the owner's stop flag, or none
  Clock::time_point last_heard_ = Clock::now();
  Clock::time_point last_sent_ = Clock::now();
};

}  // namespace rdmavideo::verbs
