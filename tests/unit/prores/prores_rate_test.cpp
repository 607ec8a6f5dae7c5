// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's rate control (slices/prores_rate.hpp) against its definition: the
// search's passes against the binary search they replaced, the rows its last step needs always
// among those it counted, and the one-block phases that place the slices against plain loops.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "encoder/frame_writer.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

// The definition the passes replaced: a binary search for the finest quantiser whose total
// fits, on 1..kMaxQuantiser (the coarsest where none does).
int binary_search(const std::function<bool(int)>& fits) {
  int lo = 1, hi = kMaxQuantiser;
  while (lo < hi) {
    const int q = (lo + hi) / 2;
    if (fits(q)) {
      hi = q;
    } else {
      lo = q + 1;
    }
  }
  return lo;
}

// The search's passes as a GPU runs them: every row of a pass counted (here: `fits` asked),
// the phases run thread after thread. The rows counted, and where the search ends.
struct Searched {
  int found;
  std::vector<int> counted;
};
Searched search_by_passes(const std::function<bool(int)>& fits) {
  const uint32_t count = 300;
  RateState rate = rate_start(1000 * uint64_t{count});
  std::vector<uint64_t> sizes(kSizeRows * count);
  Searched out{};
  auto shared = std::make_unique<RateShared>();
  for (int pass = 0; pass < kSearchPasses; ++pass) {
    EXPECT_EQ(rate.pass, pass);
    for (int r = pass_row(pass); r < pass_row(pass + 1); ++r) {
      if (rate.q[r] == 0) continue;
      out.counted.push_back(rate.q[r]);
      // Every slice 1000 bytes where it fits, one more where not.
      for (uint32_t i = 0; i < count; ++i)
        sizes[r * count + i] = fits(rate.q[r]) ? 1000 : (i == 7 ? 1001 : 1000);
    }
    for (uint32_t t = 0; t < kRateThreads; ++t) search_sums(t, sizes.data(), count, rate, *shared);
    search_pass(*shared, rate);
  }
  EXPECT_EQ(rate.pass, kSearchPasses);
  EXPECT_EQ(rate.lo, rate.hi);
  out.found = rate.hi;
  // What the last step reads: the sizes at the quantiser found, and at the next finer.
  EXPECT_GE(rate_row(rate, rate.hi), 0) << "the search did not count where it ended";
  if (rate.hi > 1) {
    EXPECT_GE(rate_row(rate, rate.hi - 1), 0) << "nor the next finer";
  }
  return out;
}

// Sizes fall as the quantiser grows: whatever the finest that fits, the passes find what the
// binary search finds, counting 16 quantisers in three passes.
TEST(ProresRate, ThePassesFindWhatTheBinarySearchFinds) {
  for (int want = 1; want <= kMaxQuantiser + 1; ++want) {  // kMaxQuantiser + 1: none fits
    SCOPED_TRACE("the finest that fits: " + std::to_string(want));
    const auto fits = [want](int q) { return q >= want; };
    const Searched s = search_by_passes(fits);
    EXPECT_EQ(s.found, binary_search(fits));
    EXPECT_LE(s.counted.size(), 16u);
  }
}

// Where sizes do not fall with the quantiser (a picture can make that happen by a byte or
// two), the passes still end at a quantiser they counted, with the next finer counted too.
TEST(ProresRate, TheLastStepsRowsAreCountedWhateverFits) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<bool> fit(kMaxQuantiser + 1);
    const int density = 1 + trial % 7;
    for (int q = 1; q <= kMaxQuantiser; ++q) fit[q] = random() % 8 < unsigned(density);
    const Searched s = search_by_passes([&](int q) { return bool(fit[q]); });
    // It ends at one that fits, or at the coarsest.
    EXPECT_TRUE(fit[s.found] || s.found == kMaxQuantiser) << s.found;
  }
}

// The twin's search (detail::choose_quantisers) counts a pass's candidates finest first and
// stops at the first that fits: the same end as counting all of them, with fewer counts.
TEST(ProresRate, TheTwinsSearchIsThePasses) {
  const uint32_t count = 1000;
  auto sizes_at = [&](int q) {
    std::vector<uint64_t> v(count);
    for (uint32_t i = 0; i < count; ++i) v[i] = q < 3 && i == 7 ? 0 : 40000 / q + i % 13;
    return v;
  };
  for (int want : {1, 2, 3, 15, 16, 17, 31, 64, 65, 113, 127, 128}) {
    SCOPED_TRACE(want);
    uint64_t budget = 0;
    for (uint64_t b : sizes_at(want)) budget += b;
    if (want == 128) budget = 1;  // nothing fits: the coarsest
    int counts = 0;
    auto chosen = detail::choose_quantisers(
        count, budget, [&](int q, std::vector<uint64_t>& sizes) -> Result<void> {
          ++counts;
          sizes = sizes_at(q);
          return {};
        });
    ASSERT_TRUE(chosen);
    // Slice 7 does not fit its cap below 3: a quantiser under 3 never fits.
    const int found = want < 3 ? 3 : want;
    EXPECT_EQ(chosen->quantisers.back(), found);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(chosen->quantisers[i] == found || chosen->quantisers[i] == found - 1) << i;
      EXPECT_EQ(chosen->sizes[i], sizes_at(chosen->quantisers[i])[i]) << i;
    }
    EXPECT_LE(counts, 16);
  }
}

// The one-block phases that place the slices (what a GPU's threads run, a barrier between
// phases) give what their definition gives, written here as plain loops over the slices: the
// quantisers (hi - 1 for the slices, in order, that the budget still pays for, stopping at the
// first that does not fit its cap at hi - 1), their sizes, and the offsets behind the table.
// Many slices to a thread and fewer slices than threads, slices over their cap, budgets that
// run out early, late and never, and no finer quantiser.
TEST(ProresRate, ThePlacingPhasesGiveTheQuantisersSizesAndOffsetsOfTheDefinition) {
  std::mt19937 random(7);
  auto shared = std::make_unique<RateShared>();
  for (uint32_t count : {1u, 5u, 255u, 256u, 257u, 1020u, 4080u, 16320u}) {
    for (int trial = 0; trial < 7; ++trial) {
      SCOPED_TRACE(std::to_string(count) + " slices, trial " + std::to_string(trial));
      std::vector<uint64_t> found(count), finer(count);
      uint64_t at_hi = 0;
      for (uint32_t i = 0; i < count; ++i) {
        found[i] = 100 + random() % 900;
        finer[i] = found[i] + random() % 300;
        if (trial == 4 && random() % 200 == 0) finer[i] = 0;  // over its cap at hi - 1
        at_hi += found[i];
      }
      if (trial == 3) found[count / 2] = 0;  // over its cap at hi
      // Budgets: none spare, a little, half the extra, all of it and more.
      const uint64_t spare[7] = {0, 500, count * 75ull, count * 150ull, count * 400ull, 123, 0};
      RateState rate = rate_start(at_hi + spare[trial]);
      rate.lo = rate.hi = trial == 5 ? 1 : 40;  // the search ended there
      const bool has_finer = rate.hi > 1 && trial != 6;
      // The definition.
      std::vector<int32_t> want(count, rate.hi);
      std::vector<uint64_t> want_sizes = found;
      if (has_finer) {
        uint64_t spent = 0;  // a slice over its cap counts so much that nothing more fits
        for (uint64_t b : found) spent += rate_bytes(b, count);
        for (uint32_t i = 0; i < count && finer[i] != 0; ++i) {
          const uint64_t more = finer[i] > found[i] ? finer[i] - found[i] : 0;
          if (spent + more > rate.budget) break;
          spent += more;
          want[i] = rate.hi - 1;
          want_sizes[i] = finer[i];
        }
      }
      // The phases, thread after thread.
      const uint64_t* finer_at = has_finer ? finer.data() : nullptr;
      std::vector<int32_t> got(count, -1);
      std::vector<uint64_t> sizes(count), offsets(count);
      for (uint32_t t = 0; t < kRateThreads; ++t)
        finer_sums(t, found.data(), finer_at, count, *shared);
      finer_scan(finer_at, *shared);
      for (uint32_t t = 0; t < kRateThreads; ++t)
        finer_stop(t, found.data(), finer_at, count, rate, *shared);
      for (uint32_t t = 0; t < kRateThreads; ++t)
        place_sums(t, found.data(), finer_at, count, rate, *shared, got.data(), sizes.data());
      offsets_scan(count, *shared, rate);
      for (uint32_t t = 0; t < kRateThreads; ++t)
        offsets_place(t, sizes.data(), count, *shared, rate, offsets.data());
      ASSERT_EQ(got, want);
      ASSERT_EQ(sizes, want_sizes);
      // Offsets: the table (2 bytes a slice) first, then each slice after the last.
      uint64_t at = 2 * uint64_t{count};
      uint32_t bad = kNoSlice;
      for (uint32_t i = 0; i < count; ++i) {
        ASSERT_EQ(offsets[i], at) << i;
        at += want_sizes[i];
        if (want_sizes[i] == 0 && bad == kNoSlice) bad = i;
      }
      EXPECT_EQ(rate.end, at);
      EXPECT_EQ(rate.bad, bad);
      if (trial == 3) {
        EXPECT_NE(rate.bad, kNoSlice);
      }
    }
  }
}

}  // namespace
}  // namespace rdmavideo::prores
