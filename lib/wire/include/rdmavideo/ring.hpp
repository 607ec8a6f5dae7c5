// SPDX-License-Identifier: Apache-2.0
// The ring's credit state machine, with no memory and no I/O, so every transition is unit
// tested. docs/protocol.md, "Ring and credits", is the specification.
//
// Receiver side, RingCredits: each slot is held by the receiver, granted to the sender, or
// filled (a frame arrived and a consumer holds it). grant_pending() hands every slot the
// receiver holds to the sender; frame_arrived() accepts a FrameWritten only for a granted
// slot; release() gives a filled slot back to the receiver and says whether the credits
// should be sent now (batching). reclaim() takes every slot back from a dead sender.
//
// Sender side, CreditPool: the slots the sender may write, oldest first. add() rejects a
// slot out of range or one already held, which only a broken receiver would send.
//
// Neither class locks; the transports call them under their own lock.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "rdmavideo/result.hpp"

namespace rdmavideo::ring {

enum class SlotState : uint8_t { receiver, granted, filled };
std::string_view to_string(SlotState state);

class RingCredits {
 public:
  explicit RingCredits(uint32_t slot_count);

  uint32_t slot_count() const { return static_cast<uint32_t>(states_.size()); }
  SlotState state(uint32_t slot) const { return states_.at(slot); }
  uint32_t granted() const { return granted_; }  ///< slots the sender may write now
  uint32_t filled() const { return filled_; }    ///< slots consumers hold
  uint32_t pending() const { return static_cast<uint32_t>(pending_.size()); }

  /// Marks every slot the receiver holds as granted and returns them, oldest release first.
  std::vector<uint32_t> grant_pending();

  /// A FrameWritten named `slot`: it must be granted. The error names the slot and state.
  Result<void> frame_arrived(uint32_t slot);

  /// A consumer is done with a filled slot. Returns true when the pending credits should be
  /// sent now: a batch has gathered, or the sender is running low.
  bool release(uint32_t slot);

  /// True when pending credits should be sent now: a batch has gathered, or the sender is
  /// down to its low-water mark. Checked after frame_arrived() too, so credits never sit here
  /// while the sender starves and consumers hold the rest of the ring.
  bool flush_due() const;

  /// The sender is gone: every slot not held by a consumer returns to the receiver.
  void reclaim();

 private:
  std::vector<SlotState> states_;
  std::vector<uint32_t> pending_;  // receiver-held slots not yet granted, in release order
  uint32_t granted_ = 0;           // count of granted slots; <= slot_count
  uint32_t filled_ = 0;            // count of filled slots; <= slot_count
  uint32_t batch_;                 // credits gathered before a CreditReturn; >= 1
  uint32_t low_water_;             // send at once when the sender holds this many or fewer
};

class CreditPool {
 public:
  explicit CreditPool(uint32_t slot_count) : slot_count_(slot_count), held_(slot_count, false) {}

  uint32_t slot_count() const { return slot_count_; }
  size_t available() const { return queue_.size(); }

  /// Credits from a CreditReturn. On error nothing is added.
  Result<void> add(std::span<const uint32_t> slots);

  /// The oldest credit, now owned by the caller; nullopt when none is held.
  std::optional<uint32_t> take();

 private:
  uint32_t slot_count_;
  std::vector<bool> held_;      // held_[slot]: the sender holds a credit for slot
  std::deque<uint32_t> queue_;  // held slots, oldest first
};

}  // namespace rdmavideo::ring
