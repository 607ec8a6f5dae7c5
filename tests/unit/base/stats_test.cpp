// SPDX-License-Identifier: Apache-2.0
// The latency histogram's percentiles on known distributions, and the keys of the JSON
// summary that --stats-json writes (scripts and bench/ read them by name).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "rdmavideo/stats.hpp"

namespace rdmavideo::stats {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

/// Within `tolerance` (a fraction) of `want`.
::testing::AssertionResult near(uint64_t got, uint64_t want, double tolerance) {
  const double error =
      (static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(want);
  if (error <= tolerance && error >= -tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " is " << error * 100 << "% off " << want;
}

TEST(TransferStats, AddSumsCountersAndMergesLatency) {
  TransferStats a, b;
  a.frames = 3, a.bytes = 300, a.dropped = 1, a.checksum_failures = 2;
  a.latency.record_ns(1'000);
  b.frames = 5, b.bytes = 500, b.dropped = 4;
  b.latency.record_ns(2'000'000);
  b.latency.record_ns(3'000'000);
  a.add(b);
  EXPECT_EQ(a.frames, 8u);
  EXPECT_EQ(a.bytes, 800u);
  EXPECT_EQ(a.dropped, 5u);
  EXPECT_EQ(a.checksum_failures, 2u);
  EXPECT_EQ(a.latency.count(), 3u);
  EXPECT_EQ(a.latency.sum_ns(), 5'001'000u);
  EXPECT_EQ(a.latency.max_ns(), 3'000'000u);
}

// A sender's drops carry their causes into the sum, the JSON and the summary line; a
// receiver's (no causes known) say only the count.
TEST(TransferStats, DropsKeepTheirCausesEverywhere) {
  TransferStats a, b;
  a.count_drop(DropCause::late);
  a.count_drop(DropCause::late);
  b.count_drop(DropCause::no_credit);
  b.count_drop(DropCause::behind);
  a.add(b);
  EXPECT_EQ(a.dropped, 4u);
  EXPECT_EQ(a.drops_of(DropCause::late), 2u);
  EXPECT_EQ(a.drops_of(DropCause::no_credit), 1u);
  EXPECT_EQ(a.drops_of(DropCause::behind), 1u);
  EXPECT_EQ(dropped_text(a), "4 (late 2, no credit 1, behind 1)");
  const nlohmann::json j = summary_json(a, StreamFacts{});
  EXPECT_EQ(j["dropped"], 4);
  EXPECT_EQ(j["dropped_late"], 2);
  EXPECT_EQ(j["drops"]["late"], 2);
  EXPECT_EQ(j["drops"]["no_credit"], 1);
  EXPECT_EQ(j["drops"]["behind"], 1);
  EXPECT_EQ(j["drops"]["not_up"], 0);
  EXPECT_EQ(j["drops"]["no_buffer"], 0);
  EXPECT_NE(summary_text(a, StreamFacts{}).find("dropped 4 (late 2, no credit 1, behind 1)"),
            std::string::npos);
  TransferStats receiver;
  receiver.dropped = 3;  // gaps in the sender's sequence: no cause known here
  EXPECT_EQ(dropped_text(receiver), "3");
  EXPECT_FALSE(summary_json(receiver, StreamFacts{}).contains("drops"));
}

TEST(LatencyHistogram, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
  EXPECT_EQ(h.percentile_ns(0.0), 0u);
  EXPECT_EQ(h.percentile_ns(0.5), 0u);
  EXPECT_EQ(h.percentile_ns(1.0), 0u);
}

TEST(LatencyHistogram, UniformMicroseconds) {
  LatencyHistogram h;
  // 1..10000 us, recorded in a scrambled order (7919 is prime, so every value comes once).
  for (uint64_t i = 0; i < 10000; ++i) h.record_ns(((i * 7919) % 10000 + 1) * kUs);
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_EQ(h.max_ns(), 10000 * kUs);
  EXPECT_TRUE(near(h.percentile_ns(0.5), 5000 * kUs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.9), 9000 * kUs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.99), 9900 * kUs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.999), 9990 * kUs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.01), 100 * kUs, 0.02));
  EXPECT_EQ(h.percentile_ns(1.0), h.max_ns());
  // A percentile never exceeds the largest sample.
  EXPECT_LE(h.percentile_ns(0.9999), h.max_ns());
}

TEST(LatencyHistogram, Bimodal) {
  LatencyHistogram h;
  for (int i = 0; i < 900; ++i) h.record_ns(1 * kMs);
  for (int i = 0; i < 100; ++i) h.record_ns(50 * kMs);
  EXPECT_TRUE(near(h.percentile_ns(0.5), 1 * kMs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.9), 1 * kMs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.95), 50 * kMs, 0.02));
  EXPECT_TRUE(near(h.percentile_ns(0.99), 50 * kMs, 0.02));
  EXPECT_EQ(h.max_ns(), 50 * kMs);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t ns = 0; ns < 64; ++ns) h.record_ns(ns);
  EXPECT_EQ(h.percentile_ns(0.5), 31u);  // rank 32 of 0..63
  EXPECT_EQ(h.percentile_ns(1.0 / 64), 0u);
  EXPECT_EQ(h.percentile_ns(1.0), 63u);
}

TEST(LatencyHistogram, MaxIsExactAndPercentilesWithinBucketWidth) {
  // A single sample at awkward values: every percentile is that value within 1/64.
  for (uint64_t ns : {uint64_t{64}, uint64_t{65}, uint64_t{127}, uint64_t{128}, uint64_t{129},
                      uint64_t{1'234'567}, uint64_t{999'999'999}, uint64_t{1} << 40,
                      (uint64_t{1} << 40) + 12345}) {
    SCOPED_TRACE(ns);
    LatencyHistogram h;
    h.record_ns(ns);
    EXPECT_EQ(h.max_ns(), ns);
    EXPECT_EQ(h.percentile_ns(0.5), ns);  // capped at the max
    h.record_ns(1);
    EXPECT_EQ(h.max_ns(), ns);
    EXPECT_EQ(h.percentile_ns(0.25), 1u);
  }
}

TEST(LatencyHistogram, ExtremeValuesDoNotOverflow) {
  LatencyHistogram h;
  h.record_ns(std::numeric_limits<uint64_t>::max());
  h.record_ns(0);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.max_ns(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(h.percentile_ns(0.25), 0u);
  EXPECT_EQ(h.percentile_ns(1.0), std::numeric_limits<uint64_t>::max());
}

TEST(LatencyHistogram, ResetEmptiesIt) {
  LatencyHistogram h;
  for (int i = 1; i <= 100; ++i) h.record_ns(static_cast<uint64_t>(i) * kMs);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
  EXPECT_EQ(h.percentile_ns(0.5), 0u);
  h.record_ns(7 * kUs);
  EXPECT_EQ(h.max_ns(), 7 * kUs);
  EXPECT_TRUE(near(h.percentile_ns(0.5), 7 * kUs, 0.02));
}

TransferStats sample_stats() {
  TransferStats s;
  s.frames = 600;
  s.bytes = 600ull * 3840 * 2160 * 2;
  s.dropped = 3;
  s.checksum_failures = 1;
  for (uint64_t i = 1; i <= 1000; ++i) s.latency.record_ns(i * 10 * kUs);  // 10 us .. 10 ms
  s.finish();
  return s;
}

StreamFacts sample_facts() {
  StreamFacts f;
  f.transport = "tcp";
  f.width = 3840;
  f.height = 2160;
  f.pix_fmt = "uyvy422";
  f.frame_rate = "60000/1001";
  f.peer = "127.0.0.1:5000";
  return f;
}

TEST(SummaryJson, HasEveryKey) {
  const nlohmann::json j = summary_json(sample_stats(), sample_facts());
  ASSERT_TRUE(j.is_object());
  for (const char* key :
       {"frames", "bytes", "seconds", "fps", "gbytes_per_s", "dropped", "checksum_failures",
        "latency_ms", "cpu_seconds", "transport", "width", "height", "pix_fmt"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(j.contains(key));
  }
  ASSERT_TRUE(j["latency_ms"].is_object());
  for (const char* key : {"p50", "p99", "max"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(j["latency_ms"].contains(key));
    EXPECT_TRUE(j["latency_ms"][key].is_number());
  }
  for (const char* key : {"seconds", "fps", "gbytes_per_s", "cpu_seconds"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(j[key].is_number());
    EXPECT_GE(j[key].get<double>(), 0.0);
  }
}

TEST(SummaryJson, CarriesTheValues) {
  const TransferStats stats = sample_stats();
  const nlohmann::json j = summary_json(stats, sample_facts());
  EXPECT_EQ(j["frames"].get<uint64_t>(), 600u);
  EXPECT_EQ(j["bytes"].get<uint64_t>(), 600ull * 3840 * 2160 * 2);
  EXPECT_EQ(j["dropped"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["checksum_failures"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["transport"].get<std::string>(), "tcp");
  EXPECT_EQ(j["width"].get<uint32_t>(), 3840u);
  EXPECT_EQ(j["height"].get<uint32_t>(), 2160u);
  EXPECT_EQ(j["pix_fmt"].get<std::string>(), "uyvy422");
  EXPECT_DOUBLE_EQ(j["latency_ms"]["max"].get<double>(), 10.0);
  EXPECT_NEAR(j["latency_ms"]["p50"].get<double>(), 5.0, 5.0 * 0.02);
  EXPECT_NEAR(j["latency_ms"]["p99"].get<double>(), 9.9, 9.9 * 0.02);
  // fps and throughput follow from the counters and the (untimed) duration.
  const double seconds = j["seconds"].get<double>();
  if (seconds > 0) {
    EXPECT_NEAR(j["fps"].get<double>(), 600 / seconds, 1e-6 * (600 / seconds));
    EXPECT_NEAR(j["gbytes_per_s"].get<double>(), static_cast<double>(stats.bytes) / seconds / 1e9,
                1e-6 * static_cast<double>(stats.bytes) / seconds / 1e9);
  }
}

TEST(SummaryJson, EmptyStatsHaveZeroLatency) {
  TransferStats s;
  s.finish();
  const nlohmann::json j = summary_json(s, StreamFacts{});
  EXPECT_EQ(j["frames"].get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["p50"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["p99"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["max"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["gbytes_per_s"].get<double>(), 0.0);
}

TEST(SummaryText, NamesTheStream) {
  const std::string text = summary_text(sample_stats(), sample_facts());
  EXPECT_NE(text.find("600 frames"), std::string::npos) << text;
  EXPECT_NE(text.find("3840x2160"), std::string::npos) << text;
  EXPECT_NE(text.find("uyvy422"), std::string::npos) << text;
  EXPECT_NE(text.find("tcp"), std::string::npos) << text;
  EXPECT_NE(text.find("dropped 3"), std::string::npos) << text;
  EXPECT_NE(text.find("max 10.00 ms"), std::string::npos) << text;
}

}  // namespace
}  // namespace rdmavideo::stats
