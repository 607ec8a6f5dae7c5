// SPDX-License-Identifier: Apache-2.0
// What the doctor found, and the two ways it prints it: text for a person (a section per
// subject, one line per check, a "fix:" line under each failure or warning) and JSON for a
// script (every check with name, status, ok, detail and fix, plus the facts gathered).
//
// Status: ok, fail (this stops video over RDMA; the exit status becomes 1), warn (works,
// but degraded or only for some users), skip (not applicable here, or not testable; said
// why). Only fail changes the exit status.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace rdmavideo::doctor {

enum class Status { ok, warn, fail, skip };
std::string_view to_string(Status status);  // "ok", "warn", "fail", "skip"

struct Check {
  std::string name;   // stable id for --json: "rdma_devices", "port:rxe0/1", "memlock"
  std::string label;  // what the line is about: "RDMA devices", "rxe0 port 1"
  Status status = Status::ok;
  std::string detail;             // what was found, with the numbers
  std::string fix;                // what to do about it; set for fail and warn
  std::vector<std::string> info;  // lines shown under the check (a GID table, steps tried)
};

struct Section {
  std::string title;  // "RDMA devices", "Device rxe0", "Locked memory", ...
  std::string key;    // where its facts go in the JSON: "devices", "memlock", ...
  std::vector<Check> checks;
  nlohmann::json facts;  // structured findings for --json; null when none
};

struct Report {
  std::vector<Section> sections;
  bool failed() const;
};

/// Text: every section, or with `quiet` only failed checks and their fixes.
void print_text(const Report& report, bool quiet, std::FILE* out);
/// {"ok": bool, "checks": [{name, section, status, ok, detail, fix, info}], <key>: facts...}
nlohmann::json to_json(const Report& report);

/// "8 MiB", "253.1 MiB", "4 KiB", "512 bytes": sizes for people.
std::string format_bytes(uint64_t bytes);

}  // namespace rdmavideo::doctor
