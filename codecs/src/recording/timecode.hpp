// SPDX-License-Identifier: Apache-2.0
// Time stamps a recording carries: its creation time and a time-of-day timecode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rdmavideo/format.hpp"

namespace rdmavideo::av {

// "2026-11-23T22:28:05.123456Z": the form FFmpeg writes and reads as creation_time.
std::string iso8601_utc(uint64_t wall_ns);

// The time of day of `wall_ns` (local time zone) as a timecode at `rate`, drop-frame at 29.97
// and 59.94 as cameras do; nullopt (and a warning naming `who`) for a rate timecode cannot
// count.
std::optional<std::string> time_of_day_timecode(uint64_t wall_ns, Rational rate,
                                                const std::string& who);

}  // namespace rdmavideo::av
