// SPDX-License-Identifier: Apache-2.0
#include "receiver/connection_credits.hpp"

namespace rdmavideo::receiver {

void ConnectionCredits::release_slot(uint32_t ring_epoch, uint32_t slot) noexcept {
  std::lock_guard lock(mu_);
  if (!channel_ || ring_epoch != epoch_ || !credits_) return;  // closed, or an old ring
  if (!credits_->release(slot)) return;
  publish();
  if (!channel_->sends_from_any_thread()) {
    channel_->wake();
    return;
  }
  send_(proto::CreditReturn{epoch_, credits_->grant_pending()});
}

proto::CreditReturn ConnectionCredits::start_ring(uint32_t epoch, uint32_t slots) {
  std::lock_guard lock(mu_);
  epoch_ = epoch;
  credits_.emplace(slots);
  publish();
  return proto::CreditReturn{epoch, credits_->grant_pending()};
}

Result<void> ConnectionCredits::frame_arrived(uint32_t slot) {
  std::lock_guard lock(mu_);
  auto ok = credits_->frame_arrived(slot);
  publish();
  return ok;
}

void ConnectionCredits::publish_to(std::shared_ptr<std::atomic<uint32_t>> gauge) {
  std::lock_guard lock(mu_);
  gauge_ = std::move(gauge);
  publish();
}

std::optional<proto::CreditReturn> ConnectionCredits::due() {
  std::lock_guard lock(mu_);
  if (!channel_ || !credits_ || !credits_->flush_due()) return std::nullopt;
  return proto::CreditReturn{epoch_, credits_->grant_pending()};
}

void ConnectionCredits::detach() {
  std::lock_guard lock(mu_);
  channel_ = nullptr;
  send_ = nullptr;  // it sends through the connection, which may go before the leases
  if (credits_) credits_->reclaim();
}

void ConnectionCredits::publish() {
  if (gauge_) *gauge_ = credits_ ? credits_->filled() : 0;
}

}  // namespace rdmavideo::receiver
