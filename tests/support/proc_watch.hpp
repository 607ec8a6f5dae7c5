// SPDX-License-Identifier: Apache-2.0
// Test support: what a running process holds, read from /proc: CPU time, threads, open
// descriptors and resident memory. For tests that bound what a hostile peer can make a
// receiver spend.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rdmavideo::testing {

/// User plus system CPU seconds the process has used so far.
inline double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: fields are counted after its closing parenthesis.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// A field of /proc/PID/status ("Threads", "VmRSS" in KiB), or -1.
inline long status_field(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}

inline long threads_of(pid_t pid) { return status_field(pid, "Threads"); }
inline long rss_kib_of(pid_t pid) { return status_field(pid, "VmRSS"); }

/// Descriptors the process has open.
inline long descriptors_of(pid_t pid) {
  long n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

/// Lets this process (the test, playing many peers) open as many descriptors as the hard
/// limit allows.
inline void raise_own_descriptor_limit() {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
}

}  // namespace rdmavideo::testing
