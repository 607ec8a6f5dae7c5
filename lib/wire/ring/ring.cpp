// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/ring.hpp"

#include <algorithm>

namespace rdmavideo::ring {

std::string_view to_string(SlotState state) {
  switch (state) {
    case SlotState::receiver: return "held by the receiver";
    case SlotState::granted: return "granted";
    case SlotState::filled: return "filled";
  }
  return "unknown";
}

RingCredits::RingCredits(uint32_t slot_count)
    : states_(slot_count, SlotState::receiver),
      // A quarter of the ring per CreditReturn keeps messages few; sending at once when the
      // sender holds a quarter or less keeps it from stalling on a credit that sits here.
      batch_(std::max<uint32_t>(1, slot_count / 4)),
      low_water_(slot_count / 4) {
  pending_.reserve(slot_count);
  for (uint32_t slot = 0; slot < slot_count; ++slot) pending_.push_back(slot);
}

std::vector<uint32_t> RingCredits::grant_pending() {
  std::vector<uint32_t> grants;
  grants.swap(pending_);
  for (uint32_t slot : grants) states_[slot] = SlotState::granted;
  granted_ += static_cast<uint32_t>(grants.size());
  pending_.reserve(states_.size());
  return grants;
}

Result<void> RingCredits::frame_arrived(uint32_t slot) {
  if (slot >= states_.size()) {
    return make_error(ErrorCode::protocol, "FrameWritten.slot {} out of range (ring has {} slots)",
                      slot, states_.size());
  }
  if (states_[slot] != SlotState::granted) {
    return make_error(ErrorCode::protocol, "FrameWritten.slot {} not granted (it is {})", slot,
                      to_string(states_[slot]));
  }
  states_[slot] = SlotState::filled;
  --granted_;
  ++filled_;
  return {};
}

bool RingCredits::release(uint32_t slot) {
  if (slot >= states_.size() || states_[slot] != SlotState::filled) return false;
  states_[slot] = SlotState::receiver;
  --filled_;
  pending_.push_back(slot);
  return flush_due();
}

bool RingCredits::flush_due() const {
  return !pending_.empty() && (pending_.size() >= batch_ || granted_ <= low_water_);
}

void RingCredits::reclaim() {
  for (uint32_t slot = 0; slot < states_.size(); ++slot) {
    if (states_[slot] == SlotState::granted) {
      states_[slot] = SlotState::receiver;
      pending_.push_back(slot);
    }
  }
  granted_ = 0;
}

Result<void> CreditPool::add(std::span<const uint32_t> slots) {
  std::vector<bool> seen(slot_count_, false);
  for (size_t i = 0; i < slots.size(); ++i) {
    const uint32_t slot = slots[i];
    if (slot >= slot_count_) {
      return make_error(ErrorCode::protocol,
                        "CreditReturn.slots[{}] {} out of range (ring has {} slots)", i, slot,
                        slot_count_);
    }
    if (held_[slot] || seen[slot]) {
      return make_error(ErrorCode::protocol,
                        "CreditReturn.slots[{}] {} already held (credit granted twice)", i, slot);
    }
    seen[slot] = true;
  }
  for (uint32_t slot : slots) {
    held_[slot] = true;
    queue_.push_back(slot);
  }
  return {};
}

std::optional<uint32_t> CreditPool::take() {
  if (queue_.empty()) return std::nullopt;
  const uint32_t slot = queue_.front();
  queue_.pop_front();
  held_[slot] = false;
  return slot;
}

}  // namespace rdmavideo::ring
