// SPDX-License-Identifier: Apache-2.0
// A connection's credit state, shared with its frames' leases: they release slots from any
// thread. While the connection is open, a release that makes credits due sends them at once
// where the channel allows sends from any thread (TCP), else wakes the connection thread to
// send them (verbs). Lock order: this mutex, then the connection's send lock.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "channel/receiver_channel.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/ring.hpp"

namespace rdmavideo::receiver {

class ConnectionCredits final : public detail::SlotOwner {
 public:
  // `send` sends credits on `channel` under the connection's send lock, and says where it
  // cannot.
  ConnectionCredits(ReceiverChannel& channel, std::function<void(const proto::CreditReturn&)> send)
      : channel_(&channel), send_(std::move(send)) {}

  void release_slot(uint32_t ring_epoch, uint32_t slot) noexcept override;
  // A new ring: every slot pending, to be granted in its first CreditReturn.
  proto::CreditReturn start_ring(uint32_t epoch, uint32_t slots);
  Result<void> frame_arrived(uint32_t slot);
  // Where the ring's occupancy is published (the stream's record), once admitted.
  void publish_to(std::shared_ptr<std::atomic<uint32_t>> gauge);
  // The credits to send now, if a batch is due.
  std::optional<proto::CreditReturn> due();
  // The connection is closing: leases let their slots go silently from now on.
  void detach();

 private:
  void publish();

  std::mutex mu_;
  ReceiverChannel* channel_;                              // null once closed
  std::function<void(const proto::CreditReturn&)> send_;  // the connection's send
  uint32_t epoch_ = 0;                                    // the current ring's epoch
  std::optional<ring::RingCredits> credits_;              // the current ring's credits
  std::shared_ptr<std::atomic<uint32_t>> gauge_;          // slots filled, for reports
};

}  // namespace rdmavideo::receiver
