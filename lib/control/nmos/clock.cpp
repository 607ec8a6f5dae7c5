// SPDX-License-Identifier: Apache-2.0
#include "nmos/clock.hpp"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <regex>

#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::nmos {

std::string TaiTime::to_string() const { return fmt::format("{}:{}", seconds, nanoseconds); }

TaiTime tai_now() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count() +
                  kTaiMinusUtcSeconds * 1'000'000'000;
  return TaiTime::from_ns(ns);
}

// Beyond this the nanoseconds since the epoch leave int64 (the year 2262).
constexpr int64_t kMaxTaiSeconds = 9'000'000'000;

std::optional<TaiTime> parse_tai(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return std::nullopt;
  TaiTime t;
  auto s = text.substr(0, colon), n = text.substr(colon + 1);
  auto [p1, e1] = std::from_chars(s.data(), s.data() + s.size(), t.seconds);
  auto [p2, e2] = std::from_chars(n.data(), n.data() + n.size(), t.nanoseconds);
  if (e1 != std::errc() || p1 != s.data() + s.size() || e2 != std::errc() ||
      p2 != n.data() + n.size() || t.seconds < 0 || t.nanoseconds < 0 ||
      t.nanoseconds >= 1'000'000'000 || t.seconds > kMaxTaiSeconds) {
    return std::nullopt;
  }
  return t;
}

std::string next_version() {
  static std::atomic<int64_t> last{0};
  int64_t now = tai_now().total_ns();
  int64_t prev = last.load();
  do {
    if (now <= prev) now = prev + 1;
  } while (!last.compare_exchange_weak(prev, now));
  return TaiTime::from_ns(now).to_string();
}

std::string make_id(std::string_view seed) {
  static constexpr std::string_view kLabel = "rdmavideo nmos id";
  const auto digest =
      crypto::hmac_sha256(std::as_bytes(std::span(kLabel)), {std::as_bytes(std::span(seed))});
  uint8_t b[16];
  for (size_t i = 0; i < 16; ++i) b[i] = std::to_integer<uint8_t>(digest[i]);
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x50);  // version 5: name-based
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);  // the RFC 4122 variant
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
}

bool is_id(std::string_view text) {
  static const std::regex kId(
      "^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  return std::regex_match(text.begin(), text.end(), kId);
}

}  // namespace rdmavideo::nmos
