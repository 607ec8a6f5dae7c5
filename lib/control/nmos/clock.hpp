// SPDX-License-Identifier: Apache-2.0
// NMOS time: TAI as "<seconds>:<nanoseconds>" (resource versions, activation times), and the
// resources' ids.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmavideo::nmos {

/// TAI is UTC plus the leap seconds since 1972 (37 since 2017).
inline constexpr int64_t kTaiMinusUtcSeconds = 37;

struct TaiTime {
  int64_t seconds = 0;
  int64_t nanoseconds = 0;
  std::string to_string() const;
  int64_t total_ns() const { return seconds * 1'000'000'000 + nanoseconds; }
  static TaiTime from_ns(int64_t ns) { return {ns / 1'000'000'000, ns % 1'000'000'000}; }
};
TaiTime tai_now();
/// "<seconds>:<nanoseconds>" with nanoseconds below 10^9 (and a time before the year 2262);
/// nullopt for anything else.
std::optional<TaiTime> parse_tai(std::string_view text);
/// A resource version: the TAI time now, and never the same twice in one process.
std::string next_version();

/// A UUID (RFC 4122 layout, version 5 bits) derived from `seed`: the same seed, the same id,
/// so a node keeps its resources' ids across restarts.
std::string make_id(std::string_view seed);
/// Whether `text` has the form IS-04's schemas give ids.
bool is_id(std::string_view text);

}  // namespace rdmavideo::nmos
