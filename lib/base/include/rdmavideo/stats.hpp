// SPDX-License-Identifier: Apache-2.0
// Transfer statistics: counters, a latency histogram, the once-a-second status line and the
// JSON summary that --stats-json writes.
//
// TransferStats is owned by one thread (the one moving frames); the status line is printed
// from that thread too, by calling StatusLine::maybe_print() in its loop.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace rdmavideo::stats {

/// Log-linear histogram of durations in nanoseconds: 64 sub-buckets per power of two, so a
/// percentile is within about 1.6% of the true value. Constant memory, O(1) record.
class LatencyHistogram {
 public:
  void record_ns(uint64_t ns);
  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_; }
  uint64_t sum_ns() const { return sum_; }
  /// Samples at or below `ns`, to the histogram's resolution (a sample in the bucket that
  /// holds `ns` counts, though it may exceed `ns` by up to 1.6%): Prometheus buckets.
  uint64_t count_at_or_below(uint64_t ns) const;
  /// The value at or below which `fraction` (0..1) of the samples lie; 0 when empty.
  uint64_t percentile_ns(double fraction) const;
  void reset() { *this = LatencyHistogram(); }
  /// Adds another histogram's samples (totals over several streams).
  void merge(const LatencyHistogram& other);

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static size_t index_of(uint64_t ns);
  static uint64_t upper_bound_of(size_t index);

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
  uint64_t sum_ = 0;
};

/// CPU time (user + system) this process has used, in seconds.
double process_cpu_seconds();
/// CPU time (user + system) the calling thread has used, in seconds.
double thread_cpu_seconds();
/// CLOCK_REALTIME in nanoseconds, the clock FrameWritten.sent_ns is stamped with.
uint64_t realtime_ns();

/// Why a sender dropped a frame, for one destination or for the source.
enum class DropCause : uint8_t {
  late,       ///< due longer ago than the lateness bound when it could go: this side was busy
  no_credit,  ///< the receiver had no free slot for it within the lateness bound
  behind,     ///< live fan-out: frames were queued for this destination still (its link busy)
  not_up,     ///< no connection to send it on (connecting, reconnecting, lost, another format)
  no_buffer,  ///< the pool had no free buffer for it, or the source could not deliver it
};
inline constexpr size_t kDropCauses = 5;
/// "late", "no_credit", "behind", "not_up", "no_buffer": the JSON keys and metric labels.
std::string_view to_string(DropCause cause);

struct TransferStats {
  uint64_t frames = 0;  ///< frames moved (sent or received)
  uint64_t bytes = 0;   ///< payload bytes moved
  uint64_t dropped = 0;
  /// A sender's `dropped` by cause (they add up to it); a receiver knows only the sender's
  /// total, and leaves these zero.
  std::array<uint64_t, kDropCauses> drops{};
  uint64_t checksum_failures = 0;  ///< checksum or pattern mismatches (receiver --verify)
  /// Copies of whole frames between GPU memory and host memory (staging, a download to
  /// verify or record): what GPUDirect saves.
  uint64_t gpu_copies = 0;
  LatencyHistogram latency;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point end{};  ///< set by finish()
  double cpu_start = process_cpu_seconds();
  double cpu_end = 0;

  /// Counts one dropped frame and its cause.
  void count_drop(DropCause cause) {
    ++dropped;
    ++drops[static_cast<size_t>(cause)];
  }
  uint64_t drops_of(DropCause cause) const { return drops[static_cast<size_t>(cause)]; }
  void finish();
  /// Adds another transfer's counters (frames, bytes, drops, checksum failures) and latency
  /// samples; the time span and CPU are the caller's to combine.
  void add(const TransferStats& other);
  double seconds() const;
  /// Process CPU seconds from cpu_start to cpu_end (or now, before finish()).
  double cpu_seconds() const;
};

/// How RDMA writes into a receiving GPU's memory become visible to its reads.
struct GpuRdmaWrites {
  int ordering = 0;           ///< CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: 0, 100, 200
  bool flush_needed = false;  ///< ordering below 100: cuFlushGPUDirectRDMAWrites before a read
  bool flush_supported = false;  ///< the flush options' host bit and the driver's entry point
};

/// Facts about the stream that go into the summary.
struct StreamFacts {
  std::string transport;  ///< "tcp" or "verbs"
  uint32_t width = 0;
  uint32_t height = 0;
  std::string pix_fmt;
  std::string frame_rate;
  std::string peer;
  std::string memory = "host";  ///< where the frames live on this end: "host", "cuda:0"
  std::string gpu_path = {};    ///< for GPU memory: the ladder's decision, with its reasons
  std::optional<GpuRdmaWrites> gpu_rdma_writes = {};  ///< a receiver's GPU ring
};

/// The summary's keys for one transfer: counters, rates, latency, `cpu_seconds` (given, for
/// a figure other than the process's since stats.cpu_start) and the facts.
nlohmann::json summary_json(const TransferStats& stats, const StreamFacts& facts,
                            std::optional<double> cpu_seconds = std::nullopt);
/// Writes `summary` to `path`; returns false and logs on failure.
bool write_json(const std::string& path, const nlohmann::json& summary);
/// Writes summary_json() to `path`; returns false and logs on failure.
bool write_summary(const std::string& path, const TransferStats& stats, const StreamFacts& facts);
/// The human summary printed at the end.
std::string summary_text(const TransferStats& stats, const StreamFacts& facts,
                         std::optional<double> cpu_seconds = std::nullopt);

/// "late 2, no credit 1": the causes of a sender's drops that occurred; empty when none is
/// known (no drops, or a receiver's counters).
std::string drop_causes_text(const TransferStats& stats);
/// "3 (late 2, no credit 1)", or "3" where the causes are not known.
std::string dropped_text(const TransferStats& stats);

/// The one status line of every program: "frames fps GB/s dropped latency" (or the caller's
/// own line) to stderr once a second; on a terminal it rewrites one line, otherwise it prints
/// a line each time.
class StatusLine {
 public:
  StatusLine(std::string prefix, bool enabled);
  /// A line is due (a second has passed): the caller need not gather the stats otherwise.
  bool due() const;
  /// `suffix` follows the totals (a receiver's or destination's own parts).
  void maybe_print(const TransferStats& stats, const std::string& suffix = {});
  /// Prints a line the caller made (a receiver's, over its streams) as maybe_print() prints
  /// its own, and starts the next second; nothing when disabled or `line` is empty.
  void print(const std::string& line);
  void finish();  ///< ends a rewritten terminal line

 private:
  std::string prefix_;
  bool enabled_;
  bool tty_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point last_;
  uint64_t last_frames_ = 0;
  uint64_t last_bytes_ = 0;
};

}  // namespace rdmavideo::stats
