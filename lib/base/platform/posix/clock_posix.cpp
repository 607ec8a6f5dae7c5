// SPDX-License-Identifier: Apache-2.0
// CPU time and the wall clock (rdmavideo/stats.hpp) from getrusage and clock_gettime.
#include <sys/resource.h>
#include <time.h>

#include "rdmavideo/stats.hpp"

namespace rdmavideo::stats {
namespace {

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

double cpu_seconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

double process_cpu_seconds() { return cpu_seconds(RUSAGE_SELF); }

double thread_cpu_seconds() { return cpu_seconds(RUSAGE_THREAD); }

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace rdmavideo::stats
