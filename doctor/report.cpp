// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rdmavideo::doctor {
namespace {

std::string_view tag(Status status) {
  switch (status) {
    case Status::ok: return "[ ok ]";
    case Status::warn: return "[warn]";
    case Status::fail: return "[FAIL]";
    case Status::skip: return "[skip]";
  }
  return "[ ?? ]";
}

constexpr std::string_view kIndent = "  ";
constexpr std::string_view kUnder = "         ";  // under the text after the tag

void print_check(const Check& c, std::FILE* out) {
  fmt::print(out, "{}{} {}: {}\n", kIndent, tag(c.status), c.label, c.detail);
  for (const auto& line : c.info) fmt::print(out, "{}{}\n", kUnder, line);
  if (!c.fix.empty() && (c.status == Status::fail || c.status == Status::warn)) {
    fmt::print(out, "{}fix: {}\n", kUnder, c.fix);
  }
}

}  // namespace

std::string_view to_string(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::warn: return "warn";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
  }
  return "?";
}

bool Report::failed() const {
  return std::any_of(sections.begin(), sections.end(), [](const Section& s) {
    return std::any_of(s.checks.begin(), s.checks.end(),
                       [](const Check& c) { return c.status == Status::fail; });
  });
}

void print_text(const Report& report, bool quiet, std::FILE* out) {
  size_t failed = 0, warned = 0;
  for (const auto& section : report.sections) {
    for (const auto& c : section.checks) {
      failed += c.status == Status::fail;
      warned += c.status == Status::warn;
    }
  }
  if (!quiet) fmt::print(out, "rdmavideo-doctor {}\n", RDMAVIDEO_VERSION);
  for (const auto& section : report.sections) {
    const bool any_failed = std::any_of(section.checks.begin(), section.checks.end(),
                                        [](const Check& c) { return c.status == Status::fail; });
    if (quiet && !any_failed) continue;
    fmt::print(out, "\n{}\n", section.title);
    for (const auto& c : section.checks) {
      if (quiet && c.status != Status::fail) continue;
      print_check(c, out);
    }
  }
  if (quiet) return;
  fmt::print(out, "\n");
  if (failed > 0) {
    fmt::print(out, "{} check{} failed{}: see the fix: lines above\n", failed,
               failed == 1 ? "" : "s",
               warned > 0 ? fmt::format(", {} warning{}", warned, warned == 1 ? "" : "s") : "");
  } else {
    fmt::print(out, "no check failed{}\n",
               warned > 0 ? fmt::format(" ({} warning{})", warned, warned == 1 ? "" : "s") : "");
  }
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json out;
  out["tool"] = "rdmavideo-doctor";
  out["version"] = RDMAVIDEO_VERSION;
  out["ok"] = !report.failed();
  auto& checks = out["checks"] = nlohmann::json::array();
  for (const auto& section : report.sections) {
    for (const auto& c : section.checks) {
      checks.push_back({{"name", c.name},
                        {"section", section.title},
                        {"label", c.label},
                        {"status", to_string(c.status)},
                        {"ok", c.status != Status::fail},
                        {"detail", c.detail},
                        {"fix", c.fix},
                        {"info", c.info}});
    }
    if (!section.key.empty() && !section.facts.is_null()) out[section.key] = section.facts;
  }
  return out;
}

std::string format_bytes(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
  auto scaled = [&](uint64_t unit, std::string_view name) {
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, name);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit), name);
  };
  if (bytes >= kTiB) return scaled(kTiB, "TiB");
  if (bytes >= kGiB) return scaled(kGiB, "GiB");
  if (bytes >= kMiB) return scaled(kMiB, "MiB");
  if (bytes >= kKiB) return scaled(kKiB, "KiB");
  return fmt::format("{} bytes", bytes);
}

}  // namespace rdmavideo::doctor
