// SPDX-License-Identifier: Apache-2.0
#include "found_receivers.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace rdmavideo::obs {

namespace {

std::string trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return std::string(text);
}

// The stand-in: the receivers of a `rdmavideo-doctor --discover --json` listing.
Result<std::vector<discovery::Service>> read_stand_in(const char* path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::system, "stand-in browse result {}: cannot read it", path);
  const auto listing = nlohmann::json::parse(in, nullptr, false);
  if (listing.is_discarded() || !listing.contains("receivers") ||
      !listing["receivers"].is_array()) {
    return make_error(ErrorCode::invalid_argument,
                      "stand-in browse result {}: not a --discover --json listing", path);
  }
  std::vector<discovery::Service> out;
  for (const auto& r : listing["receivers"]) {
    discovery::Service s;
    s.name = r.value("name", "");
    s.type = discovery::kReceiverType;
    s.address = r.value("address", "");
    s.port = r.value("port", uint16_t{0});
    s.host = r.value("host", "");
    if (r.contains("txt") && r["txt"].is_object()) {
      for (const auto& [key, value] : r["txt"].items()) {
        if (value.is_string()) s.txt.emplace_back(key, value.get<std::string>());
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<FoundReceiver> found_receivers(const Result<std::vector<discovery::Service>>& browsed) {
  if (!browsed) return {{"No receivers found: " + browsed.error().message(), ""}};
  if (browsed->empty()) return {{"No receivers found on the network", ""}};
  std::vector<FoundReceiver> rows;
  for (const auto& s : *browsed) {
    std::string label = fmt::format("{} ({}", s.name, s.endpoint().to_string());
    if (auto r = discovery::parse_receiver_txt(s.txt)) {
      label += fmt::format(", {} of {} stream{} free", r->streams_free, r->max_streams,
                           r->max_streams == 1 ? "" : "s");
      label += r->key_required ? fmt::format(", key {}", r->key_id) : ", no key";
    } else {
      label += ", " + r.error().message();
    }
    rows.push_back({label + ")", s.name});
  }
  return rows;
}

Result<std::vector<discovery::Service>> browse_receivers() {
  if (const char* stand_in = std::getenv("RDMAVIDEO_OBS_BROWSE_STAND_IN"); stand_in && *stand_in)
    return read_stand_in(stand_in);
  return discovery::browse(discovery::kReceiverType, std::chrono::milliseconds(1500));
}

std::string with_receiver(const std::string& destinations, const std::string& entry) {
  std::string_view rest = destinations;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    if (trimmed(rest.substr(0, comma)) == entry) return destinations;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  const std::string kept = trimmed(destinations);
  return kept.empty() ? entry : kept + ", " + entry;
}

}  // namespace rdmavideo::obs
