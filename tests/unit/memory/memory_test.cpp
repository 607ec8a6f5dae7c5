// SPDX-License-Identifier: Apache-2.0
// The memory budget (memory::Budget) and the sizes `--max-memory` takes and prints.
#include <gtest/gtest.h>

#include "rdmavideo/memory.hpp"

namespace rdmavideo::memory {
namespace {

TEST(Budget, ReservationsAreHeldUntilTheirLastOwnerLetsGo) {
  auto budget = std::make_shared<Budget>(100);
  auto a = budget->reserve(60, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(budget->used(), 60u);
  auto copy = *a;  // a lease keeping the ring
  a->reset();
  EXPECT_EQ(budget->used(), 60u);
  auto b = budget->reserve(41, "the second ring");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code(), ErrorCode::resource);
  EXPECT_EQ(b.error().message(),
            "the second ring needs 41 B, beyond the receiver's memory budget of 100 B (60 B in "
            "use; its maximum memory setting changes it)");
  copy.reset();
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_TRUE(budget->reserve(100, "all"));
  EXPECT_FALSE(budget->reserve(101, "more than all"));
  EXPECT_FALSE(budget->reserve(UINT64_MAX, "overflow"));
}

TEST(Budget, AReservationOutlivesItsBudgetsOwner) {
  auto budget = std::make_shared<Budget>(10);
  auto held = budget->reserve(5, "x");
  ASSERT_TRUE(held);
  budget.reset();  // the service is gone; a buffer still holds a slot
  held->reset();   // no use after free (ASan would say)
}

TEST(Sizes, ParseWithBinarySuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64K"), 64u << 10);
  EXPECT_EQ(parse_bytes("512M"), 512u << 20);
  EXPECT_EQ(parse_bytes("512MiB"), 512u << 20);
  EXPECT_EQ(parse_bytes("2g"), 2ull << 30);
  EXPECT_EQ(parse_bytes("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_bytes("1T"), 1ull << 40);
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("G"));
  EXPECT_FALSE(parse_bytes("-1M"));
  EXPECT_FALSE(parse_bytes("12X"));
  EXPECT_FALSE(parse_bytes("99999999T"));
}

TEST(Sizes, FormatInBinaryUnits) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(64 << 10), "64 KiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
  EXPECT_EQ(format_bytes(33177600ull * 8), "253.1 MiB");
}

TEST(Budget, TheDefaultIsHalfOfMemoryAtMost) {
  std::string why;
  const uint64_t tcp = default_budget(false, &why);
  EXPECT_EQ(tcp, physical_memory_bytes() / 2);
  EXPECT_EQ(why, "half of physical memory");
  EXPECT_LE(default_budget(true, &why), tcp);
}

}  // namespace
}  // namespace rdmavideo::memory
