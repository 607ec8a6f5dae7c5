// SPDX-License-Identifier: Apache-2.0
// CPU time and the wall clock (rdmavideo/stats.hpp) from GetProcessTimes, GetThreadTimes and
// GetSystemTimePreciseAsFileTime (100 ns units; the file time's epoch is 1601).
#include <windows.h>

#include "rdmavideo/stats.hpp"

namespace rdmavideo::stats {
namespace {

uint64_t ticks(const FILETIME& t) {
  return (static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime;
}

double cpu_seconds(const FILETIME& kernel, const FILETIME& user) {
  return static_cast<double>(ticks(kernel) + ticks(user)) / 1e7;
}

}  // namespace

double process_cpu_seconds() {
  FILETIME created{}, exited{}, kernel{}, user{};
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) return 0;
  return cpu_seconds(kernel, user);
}

double thread_cpu_seconds() {
  FILETIME created{}, exited{}, kernel{}, user{};
  if (!GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user)) return 0;
  return cpu_seconds(kernel, user);
}

uint64_t realtime_ns() {
  constexpr uint64_t kUnixEpochTicks = 116444736000000000ull;  // 1970-01-01 in 1601 ticks
  FILETIME now{};
  GetSystemTimePreciseAsFileTime(&now);
  return (ticks(now) - kUnixEpochTicks) * 100;
}

}  // namespace rdmavideo::stats
