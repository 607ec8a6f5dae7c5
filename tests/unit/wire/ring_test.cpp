// SPDX-License-Identifier: Apache-2.0
// The ring's credit state machine: RingCredits on the receiver and CreditPool on the sender,
// each transition on its own and then both together over many frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/ring.hpp"

namespace rdmavideo::ring {
namespace {

using Slots = std::vector<uint32_t>;

::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

Slots iota_slots(uint32_t count) {
  Slots slots(count);
  for (uint32_t i = 0; i < count; ++i) slots[i] = i;
  return slots;
}

void expect_counts(const RingCredits& ring, uint32_t granted, uint32_t filled, uint32_t pending) {
  EXPECT_EQ(ring.granted(), granted);
  EXPECT_EQ(ring.filled(), filled);
  EXPECT_EQ(ring.pending(), pending);
}

// ---------------------------------------------------------------------------------------
// RingCredits

TEST(RingCredits, StartsWithEverySlotAtTheReceiver) {
  RingCredits ring(8);
  EXPECT_EQ(ring.slot_count(), 8u);
  expect_counts(ring, 0, 0, 8);
  for (uint32_t slot = 0; slot < 8; ++slot) EXPECT_EQ(ring.state(slot), SlotState::receiver);
}

TEST(RingCredits, InitialGrantGivesEverySlotInOrder) {
  RingCredits ring(8);
  EXPECT_EQ(ring.grant_pending(), iota_slots(8));
  expect_counts(ring, 8, 0, 0);
  for (uint32_t slot = 0; slot < 8; ++slot) EXPECT_EQ(ring.state(slot), SlotState::granted);
  EXPECT_TRUE(ring.grant_pending().empty());  // nothing more to give
  expect_counts(ring, 8, 0, 0);
}

TEST(RingCredits, FrameArrivedInGrantedSlotFillsIt) {
  RingCredits ring(8);
  ring.grant_pending();
  auto ok = ring.frame_arrived(5);
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ring.state(5), SlotState::filled);
  expect_counts(ring, 7, 1, 0);
}

TEST(RingCredits, FrameArrivedRejectsSlotHeldByReceiver) {
  RingCredits ring(8);
  auto ok = ring.frame_arrived(3);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(ok.error().message(), "FrameWritten.slot 3"));
  EXPECT_TRUE(contains(ok.error().message(), "held by the receiver"));
  EXPECT_EQ(ring.state(3), SlotState::receiver);
  expect_counts(ring, 0, 0, 8);
}

TEST(RingCredits, FrameArrivedRejectsFilledSlot) {
  RingCredits ring(8);
  ring.grant_pending();
  ASSERT_TRUE(ring.frame_arrived(2));
  auto again = ring.frame_arrived(2);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(again.error().message(), "FrameWritten.slot 2"));
  EXPECT_TRUE(contains(again.error().message(), "filled"));
  expect_counts(ring, 7, 1, 0);
}

TEST(RingCredits, FrameArrivedRejectsSlotOutOfRange) {
  RingCredits ring(8);
  ring.grant_pending();
  for (uint32_t slot : {8u, 1023u, 0xffffffffu}) {
    SCOPED_TRACE(slot);
    auto ok = ring.frame_arrived(slot);
    ASSERT_FALSE(ok);
    EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
    EXPECT_TRUE(contains(ok.error().message(), "FrameWritten.slot " + std::to_string(slot)));
    EXPECT_TRUE(contains(ok.error().message(), "8 slots"));
  }
  expect_counts(ring, 8, 0, 0);
}

// With 8 slots a batch is 2 credits and the low-water mark is 2 granted slots.
TEST(RingCredits, ReleaseBatchesCredits) {
  RingCredits ring(8);
  ring.grant_pending();

  ASSERT_TRUE(ring.frame_arrived(0));
  EXPECT_FALSE(ring.release(0));  // 1 pending < batch 2, sender holds 7 > 2
  expect_counts(ring, 7, 0, 1);
  EXPECT_EQ(ring.state(0), SlotState::receiver);

  ASSERT_TRUE(ring.frame_arrived(1));
  EXPECT_TRUE(ring.release(1));  // a batch of 2 has gathered
  EXPECT_EQ(ring.grant_pending(), (Slots{0, 1}));
  expect_counts(ring, 8, 0, 0);

  ASSERT_TRUE(ring.frame_arrived(2));
  ASSERT_TRUE(ring.frame_arrived(3));
  EXPECT_FALSE(ring.release(3));                   // 1 pending, sender holds 6
  EXPECT_TRUE(ring.release(2));                    // 2 pending
  EXPECT_EQ(ring.grant_pending(), (Slots{3, 2}));  // in release order
  expect_counts(ring, 8, 0, 0);
}

TEST(RingCredits, ReleaseSendsAtOnceWhenSenderRunsLow) {
  RingCredits ring(8);
  ring.grant_pending();
  for (uint32_t slot = 0; slot < 5; ++slot) ASSERT_TRUE(ring.frame_arrived(slot));
  expect_counts(ring, 3, 5, 0);
  EXPECT_FALSE(ring.release(0));  // 1 pending, sender holds 3 > 2
  ASSERT_TRUE(ring.frame_arrived(5));
  expect_counts(ring, 2, 5, 1);
  EXPECT_TRUE(ring.release(1));  // 2 pending: a batch anyway
  EXPECT_EQ(ring.grant_pending(), (Slots{0, 1}));
  expect_counts(ring, 4, 4, 0);

  ASSERT_TRUE(ring.frame_arrived(0));
  ASSERT_TRUE(ring.frame_arrived(1));
  expect_counts(ring, 2, 6, 0);
  EXPECT_TRUE(ring.release(2));  // 1 pending, but the sender holds only 2
  EXPECT_EQ(ring.grant_pending(), (Slots{2}));
  expect_counts(ring, 3, 5, 0);

  for (uint32_t slot : {2u, 6u, 7u}) ASSERT_TRUE(ring.frame_arrived(slot));
  expect_counts(ring, 0, 8, 0);
  EXPECT_TRUE(ring.release(4));  // the sender holds nothing
}

TEST(RingCredits, BatchIsAQuarterOfTheRing) {
  RingCredits ring(16);  // batch 4, low water 4
  ring.grant_pending();
  for (uint32_t slot = 0; slot < 4; ++slot) ASSERT_TRUE(ring.frame_arrived(slot));
  EXPECT_FALSE(ring.release(0));
  EXPECT_FALSE(ring.release(1));
  EXPECT_FALSE(ring.release(2));
  EXPECT_TRUE(ring.release(3));
  EXPECT_EQ(ring.grant_pending(), (Slots{0, 1, 2, 3}));
}

TEST(RingCredits, SmallRingsSendEveryCredit) {
  for (uint32_t count : {1u, 2u, 3u}) {
    SCOPED_TRACE(count);
    RingCredits ring(count);  // batch 1
    ring.grant_pending();
    ASSERT_TRUE(ring.frame_arrived(0));
    EXPECT_TRUE(ring.release(0));
    EXPECT_EQ(ring.grant_pending(), (Slots{0}));
  }
}

TEST(RingCredits, FlushDueWhenABatchGathersOrTheSenderRunsLow) {
  RingCredits ring(8);            // batch 2, low water 2
  EXPECT_TRUE(ring.flush_due());  // 8 pending: the initial grant
  ring.grant_pending();
  EXPECT_FALSE(ring.flush_due());  // nothing pending
  for (uint32_t slot = 0; slot < 5; ++slot) ASSERT_TRUE(ring.frame_arrived(slot));
  EXPECT_FALSE(ring.flush_due());  // sender holds 3, nothing pending
  EXPECT_FALSE(ring.release(0));   // 1 pending, sender holds 3
  EXPECT_FALSE(ring.flush_due());
  // Consumers keep slots 1..4; the sender writes one more and is down to 2 credits. The
  // credit for slot 0 must go now, not wait for a release that may be long in coming.
  ASSERT_TRUE(ring.frame_arrived(5));
  EXPECT_TRUE(ring.flush_due());
  EXPECT_EQ(ring.grant_pending(), (Slots{0}));
  EXPECT_FALSE(ring.flush_due());
  expect_counts(ring, 3, 5, 0);
}

TEST(RingCredits, FlushDueAfterReclaim) {
  RingCredits ring(8);
  ring.grant_pending();
  ASSERT_TRUE(ring.frame_arrived(0));
  ring.reclaim();
  EXPECT_TRUE(ring.flush_due());  // 7 reclaimed credits wait for the next sender
  EXPECT_EQ(ring.grant_pending().size(), 7u);
}

TEST(RingCredits, ReleaseOfSlotNotFilledIsIgnored) {
  RingCredits ring(8);
  EXPECT_FALSE(ring.release(0));  // held by the receiver
  expect_counts(ring, 0, 0, 8);
  ring.grant_pending();
  EXPECT_FALSE(ring.release(1));  // granted
  EXPECT_EQ(ring.state(1), SlotState::granted);
  EXPECT_FALSE(ring.release(8));  // out of range
  EXPECT_FALSE(ring.release(0xffffffff));
  expect_counts(ring, 8, 0, 0);

  ASSERT_TRUE(ring.frame_arrived(1));
  EXPECT_FALSE(ring.release(1));
  EXPECT_FALSE(ring.release(1));  // a second release of the same slot changes nothing
  expect_counts(ring, 7, 0, 1);
  EXPECT_EQ(ring.grant_pending(), (Slots{1}));
}

TEST(RingCredits, ReclaimTakesBackGrantedButLeavesFilled) {
  RingCredits ring(8);
  ring.grant_pending();
  ASSERT_TRUE(ring.frame_arrived(0));
  ASSERT_TRUE(ring.frame_arrived(1));
  ASSERT_TRUE(ring.frame_arrived(2));
  EXPECT_FALSE(ring.release(2));  // pending: 2
  expect_counts(ring, 5, 2, 1);

  ring.reclaim();
  expect_counts(ring, 0, 2, 6);
  EXPECT_EQ(ring.state(0), SlotState::filled);
  EXPECT_EQ(ring.state(1), SlotState::filled);
  for (uint32_t slot = 2; slot < 8; ++slot) EXPECT_EQ(ring.state(slot), SlotState::receiver);

  // A consumer still holding slot 0 can release it afterwards.
  EXPECT_TRUE(ring.release(0));
  expect_counts(ring, 0, 1, 7);
  // The next sender gets the earlier release first, then the reclaimed slots, then slot 0.
  EXPECT_EQ(ring.grant_pending(), (Slots{2, 3, 4, 5, 6, 7, 0}));
  expect_counts(ring, 7, 1, 0);
  EXPECT_FALSE(ring.frame_arrived(1));  // still filled
}

TEST(RingCredits, StateNames) {
  EXPECT_EQ(to_string(SlotState::receiver), "held by the receiver");
  EXPECT_EQ(to_string(SlotState::granted), "granted");
  EXPECT_EQ(to_string(SlotState::filled), "filled");
}

// ---------------------------------------------------------------------------------------
// CreditPool

TEST(CreditPool, HandsOutCreditsOldestFirst) {
  CreditPool pool(8);
  EXPECT_EQ(pool.slot_count(), 8u);
  EXPECT_EQ(pool.take(), std::nullopt);
  ASSERT_TRUE(pool.add(Slots{2, 0, 7}));
  ASSERT_TRUE(pool.add(Slots{5}));
  EXPECT_EQ(pool.available(), 4u);
  EXPECT_EQ(pool.take(), 2u);
  EXPECT_EQ(pool.take(), 0u);
  ASSERT_TRUE(pool.add(Slots{2}));  // taken slots may come back
  EXPECT_EQ(pool.take(), 7u);
  EXPECT_EQ(pool.take(), 5u);
  EXPECT_EQ(pool.take(), 2u);
  EXPECT_EQ(pool.take(), std::nullopt);
  EXPECT_EQ(pool.available(), 0u);
}

TEST(CreditPool, AcceptsEmptyAdd) {
  CreditPool pool(4);
  EXPECT_TRUE(pool.add(Slots{}));
  EXPECT_EQ(pool.available(), 0u);
}

TEST(CreditPool, RejectsSlotOutOfRangeAndAddsNothing) {
  CreditPool pool(8);
  ASSERT_TRUE(pool.add(Slots{1}));
  auto ok = pool.add(Slots{3, 4, 8});
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(ok.error().message(), "CreditReturn.slots[2] 8"));
  EXPECT_TRUE(contains(ok.error().message(), "8 slots"));
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_EQ(pool.take(), 1u);
  EXPECT_EQ(pool.take(), std::nullopt);
  // Nothing of the rejected add was marked held: the same slots are accepted now.
  EXPECT_TRUE(pool.add(Slots{3, 4}));
}

TEST(CreditPool, RejectsSlotAlreadyHeldAndAddsNothing) {
  CreditPool pool(8);
  ASSERT_TRUE(pool.add(Slots{3}));
  auto ok = pool.add(Slots{5, 3});
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(ok.error().message(), "CreditReturn.slots[1] 3"));
  EXPECT_TRUE(contains(ok.error().message(), "already held"));
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_EQ(pool.take(), 3u);
  EXPECT_EQ(pool.take(), std::nullopt);
}

TEST(CreditPool, RejectsDuplicateWithinOneAddAndAddsNothing) {
  CreditPool pool(8);
  auto ok = pool.add(Slots{1, 2, 1});
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(ok.error().message(), "CreditReturn.slots[2] 1"));
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_EQ(pool.take(), std::nullopt);
  EXPECT_TRUE(pool.add(Slots{1, 2}));
  EXPECT_EQ(pool.available(), 2u);
}

// ---------------------------------------------------------------------------------------
// Both ends together: a sender writing whenever it holds a credit and consumers releasing
// frames in a scrambled order, over many frames. A fixed LCG keeps it deterministic.

struct Lcg {
  uint64_t state;
  uint32_t below(uint32_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33) % bound;
  }
};

void check_invariants(const RingCredits& ring, const CreditPool& pool, const Slots& leased) {
  const uint32_t n = ring.slot_count();
  ASSERT_EQ(ring.granted() + ring.filled() + ring.pending(), n);
  ASSERT_EQ(pool.available(), ring.granted());  // credits are delivered at once here
  ASSERT_EQ(ring.filled(), leased.size());
  uint32_t receiver = 0, granted = 0, filled = 0;
  for (uint32_t slot = 0; slot < n; ++slot) {
    switch (ring.state(slot)) {
      case SlotState::receiver: ++receiver; break;
      case SlotState::granted: ++granted; break;
      case SlotState::filled: ++filled; break;
    }
  }
  ASSERT_EQ(receiver, ring.pending());
  ASSERT_EQ(granted, ring.granted());
  ASSERT_EQ(filled, ring.filled());
  for (uint32_t slot : leased) ASSERT_EQ(ring.state(slot), SlotState::filled);
}

void run_cycle(uint32_t slot_count, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "slot_count " << slot_count << " seed " << seed);
  constexpr uint64_t kFrames = 5000;
  RingCredits ring(slot_count);
  CreditPool pool(slot_count);
  ASSERT_TRUE(pool.add(ring.grant_pending()));
  Slots leased;  // slots consumers hold
  Lcg rng{seed};
  uint64_t frames = 0, credit_messages = 0, reclaims = 0;
  for (uint64_t step = 0; frames < kFrames; ++step) {
    ASSERT_LT(step, kFrames * 20) << "no progress: the ring stalled";
    ASSERT_FALSE(pool.available() == 0 && leased.empty())
        << "stalled: the sender holds no credit and no consumer holds a frame, " << ring.pending()
        << " credits pending";
    if (rng.below(2) == 0) {
      if (auto slot = pool.take()) {
        auto ok = ring.frame_arrived(*slot);
        ASSERT_TRUE(ok) << ok.error().message();
        leased.push_back(*slot);
        ++frames;
        if (ring.flush_due()) {  // as the transports do after each arrival
          ASSERT_TRUE(pool.add(ring.grant_pending()));
          ++credit_messages;
        }
        // Now and then the sender dies; a new one connects and gets every free slot.
        if (frames % 997 == 0) {
          ring.reclaim();
          pool = CreditPool(slot_count);
          ASSERT_TRUE(pool.add(ring.grant_pending()));
          ++reclaims;
        }
      }
    } else if (!leased.empty()) {
      const uint32_t at = rng.below(static_cast<uint32_t>(leased.size()));
      const uint32_t slot = leased[at];
      leased.erase(leased.begin() + at);
      if (ring.release(slot)) {
        auto ok = pool.add(ring.grant_pending());
        ASSERT_TRUE(ok) << ok.error().message();
        ++credit_messages;
      }
    }
    check_invariants(ring, pool, leased);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(frames, kFrames);
  EXPECT_GT(reclaims, 0u);
  // Batching: with a batch of a quarter ring, far fewer CreditReturns than frames.
  if (slot_count >= 8) {
    EXPECT_LT(credit_messages, kFrames * 3 / 4);
  }
}

TEST(RingCycle, InvariantHoldsOverManyFrames) {
  for (uint32_t slot_count : {1u, 2u, 3u, 4u, 5u, 8u, 16u, 64u, 1024u}) {
    for (uint64_t seed : {1ull, 42ull, 0x5eedull}) {
      run_cycle(slot_count, seed);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace rdmavideo::ring
