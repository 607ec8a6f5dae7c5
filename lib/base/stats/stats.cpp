// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/stats.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rdmavideo/log.hpp"

namespace rdmavideo::stats {

size_t LatencyHistogram::index_of(uint64_t ns) {
  // Values below 2^kSubBits map one to one; above, each power of two has 2^kSubBits buckets.
  if (ns < (1u << kSubBits)) return ns;
  const int top = 63 - std::countl_zero(ns);  // >= kSubBits
  const int shift = top - kSubBits;
  const uint64_t sub = (ns >> shift) & ((1u << kSubBits) - 1);
  return (static_cast<size_t>(shift + 1) << kSubBits) + sub;
}

uint64_t LatencyHistogram::upper_bound_of(size_t index) {
  if (index < (1u << kSubBits)) return index;
  const int shift = static_cast<int>(index >> kSubBits) - 1;
  const uint64_t sub = index & ((1u << kSubBits) - 1);
  return (((uint64_t{1} << kSubBits) + sub + 1) << shift) - 1;
}

void LatencyHistogram::record_ns(uint64_t ns) {
  ++buckets_[index_of(ns)];
  ++count_;
  sum_ += ns;
  max_ = std::max(max_, ns);
}

uint64_t LatencyHistogram::count_at_or_below(uint64_t ns) const {
  const size_t last = std::min(index_of(ns), buckets_.size() - 1);
  uint64_t n = 0;
  for (size_t i = 0; i <= last; ++i) n += buckets_[i];
  return n;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

uint64_t LatencyHistogram::percentile_ns(double fraction) const {
  if (count_ == 0) return 0;
  const auto rank =
      static_cast<uint64_t>(std::max(1.0, fraction * static_cast<double>(count_) + 0.5));
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(upper_bound_of(i), max_);
  }
  return max_;
}

void TransferStats::add(const TransferStats& other) {
  frames += other.frames;
  bytes += other.bytes;
  dropped += other.dropped;
  for (size_t i = 0; i < kDropCauses; ++i) drops[i] += other.drops[i];
  checksum_failures += other.checksum_failures;
  gpu_copies += other.gpu_copies;
  latency.merge(other.latency);
}

void TransferStats::finish() {
  end = std::chrono::steady_clock::now();
  cpu_end = process_cpu_seconds();
}

double TransferStats::cpu_seconds() const {
  return (cpu_end ? cpu_end : process_cpu_seconds()) - cpu_start;
}

double TransferStats::seconds() const {
  const auto stop =
      end == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now() : end;
  return std::chrono::duration<double>(stop - start).count();
}

std::string_view to_string(DropCause cause) {
  switch (cause) {
    case DropCause::late: return "late";
    case DropCause::no_credit: return "no_credit";
    case DropCause::behind: return "behind";
    case DropCause::not_up: return "not_up";
    case DropCause::no_buffer: return "no_buffer";
  }
  return "unknown";
}

std::string drop_causes_text(const TransferStats& s) {
  std::string text;
  for (size_t i = 0; i < kDropCauses; ++i) {
    if (s.drops[i] == 0) continue;
    std::string name(to_string(static_cast<DropCause>(i)));
    std::replace(name.begin(), name.end(), '_', ' ');
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, s.drops[i]);
  }
  return text;
}

std::string dropped_text(const TransferStats& s) {
  const auto causes = drop_causes_text(s);
  return causes.empty() ? std::to_string(s.dropped) : fmt::format("{} ({})", s.dropped, causes);
}

nlohmann::json summary_json(const TransferStats& s, const StreamFacts& facts,
                            std::optional<double> cpu_seconds) {
  const double secs = s.seconds();
  const double cpu = cpu_seconds.value_or(s.cpu_seconds());
  auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  nlohmann::json j{
      {"frames", s.frames},
      {"bytes", s.bytes},
      {"seconds", secs},
      {"fps", secs > 0 ? static_cast<double>(s.frames) / secs : 0.0},
      {"gbytes_per_s", secs > 0 ? static_cast<double>(s.bytes) / secs / 1e9 : 0.0},
      {"dropped", s.dropped},
      {"dropped_late", s.drops_of(DropCause::late)},
      {"checksum_failures", s.checksum_failures},
      {"latency_ms",
       {{"p50", ms(s.latency.percentile_ns(0.5))},
        {"p99", ms(s.latency.percentile_ns(0.99))},
        {"max", ms(s.latency.max_ns())}}},
      {"cpu_seconds", cpu},
      {"cpu_seconds_per_gb", s.bytes ? cpu / (static_cast<double>(s.bytes) / 1e9) : 0.0},
      {"transport", facts.transport},
      {"width", facts.width},
      {"height", facts.height},
      {"pix_fmt", facts.pix_fmt},
      {"frame_rate", facts.frame_rate},
      {"peer", facts.peer},
      {"memory", facts.memory},
  };
  if (std::any_of(s.drops.begin(), s.drops.end(), [](uint64_t n) { return n > 0; })) {
    nlohmann::json causes = nlohmann::json::object();
    for (size_t i = 0; i < kDropCauses; ++i)
      causes[to_string(static_cast<DropCause>(i))] = s.drops[i];
    j["drops"] = std::move(causes);
  }
  if (!facts.gpu_path.empty()) {
    j["gpu_path"] = facts.gpu_path;
    j["gpu_copies"] = s.gpu_copies;
    j["gpu_copies_per_frame"] =
        s.frames ? static_cast<double>(s.gpu_copies) / static_cast<double>(s.frames) : 0.0;
  }
  if (facts.gpu_rdma_writes) {
    j["gpu_rdma_writes"] = {{"ordering", facts.gpu_rdma_writes->ordering},
                            {"flush_needed", facts.gpu_rdma_writes->flush_needed},
                            {"flush_supported", facts.gpu_rdma_writes->flush_supported}};
  }
  return j;
}

bool write_json(const std::string& path, const nlohmann::json& summary) {
  std::ofstream out(path, std::ios::trunc);
  // A peer's stream name need not be UTF-8: write what is not as U+FFFD rather than throw.
  out << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.close();
  if (!out) {
    log().error("{}: could not write the summary", path);
    return false;
  }
  return true;
}

bool write_summary(const std::string& path, const TransferStats& stats, const StreamFacts& facts) {
  return write_json(path, summary_json(stats, facts));
}

std::string summary_text(const TransferStats& s, const StreamFacts& facts,
                         std::optional<double> cpu_seconds) {
  const double secs = s.seconds();
  const double cpu = cpu_seconds.value_or(s.cpu_seconds());
  std::string text = fmt::format(
      "{} frames {}x{} {} over {} in {:.2f} s: {:.1f} fps, {:.3f} GB/s, dropped {}, "
      "checksum failures {}, latency p50 {:.2f} ms p99 {:.2f} ms max {:.2f} ms, cpu {:.2f} s",
      s.frames, facts.width, facts.height, facts.pix_fmt, facts.transport, secs,
      secs > 0 ? s.frames / secs : 0.0, secs > 0 ? s.bytes / secs / 1e9 : 0.0, dropped_text(s),
      s.checksum_failures, s.latency.percentile_ns(0.5) / 1e6, s.latency.percentile_ns(0.99) / 1e6,
      s.latency.max_ns() / 1e6, cpu);
  if (!facts.gpu_path.empty()) {
    text += fmt::format(", {} {}, {} GPU copies", facts.memory, facts.gpu_path, s.gpu_copies);
  }
  return text;
}

StatusLine::StatusLine(std::string prefix, bool enabled)
    : prefix_(std::move(prefix)),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) == 1),
      last_(std::chrono::steady_clock::now()) {}

bool StatusLine::due() const {
  return enabled_ && std::chrono::steady_clock::now() - last_ >= std::chrono::seconds(1);
}

void StatusLine::maybe_print(const TransferStats& s, const std::string& suffix) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_).count();
  if (dt < 1.0) return;
  const double fps = (s.frames - last_frames_) / dt;
  const double gbps = (s.bytes - last_bytes_) / dt / 1e9;
  print(fmt::format("{} frames {} fps {:.1f} {:.3f} GB/s dropped {} latency p50 {:.2f} ms{}",
                    prefix_, s.frames, fps, gbps, dropped_text(s),
                    s.latency.percentile_ns(0.5) / 1e6, suffix));
  last_frames_ = s.frames;
  last_bytes_ = s.bytes;
}

void StatusLine::print(const std::string& line) {
  if (!enabled_) return;
  last_ = std::chrono::steady_clock::now();
  if (line.empty()) return;
  std::fprintf(stderr, tty_ ? "\r%s\033[K" : "%s\n", line.c_str());
  std::fflush(stderr);
  printed_ = true;
}

void StatusLine::finish() {
  if (enabled_ && tty_ && printed_) std::fputc('\n', stderr);
  printed_ = false;
}

}  // namespace rdmavideo::stats
