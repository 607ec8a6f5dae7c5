// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/destination_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace rdmavideo {

std::string DestinationRates::line(const std::vector<DestinationReport>& all) {
  if (all.size() < 2) return {};
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::max(1e-3, std::chrono::duration<double>(now - last_).count());
  last_ = now;
  frames_.resize(all.size());
  std::string out;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& d = all[i];
    out += fmt::format(
        " | {} {} {:.1f} fps", d.endpoint.to_string(),
        d.state == DestinationReport::State::streaming ? d.transport : to_string(d.state),
        (d.stats.frames - frames_[i]) / dt);
    if (d.stats.dropped) out += fmt::format(" drop {}", d.stats.dropped);
    frames_[i] = d.stats.frames;
  }
  return out;
}

nlohmann::json destinations_json(const std::vector<DestinationReport>& all,
                                 const stats::StreamFacts& facts) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : all) {
    stats::StreamFacts f = facts;
    f.transport = d.transport;
    f.peer = d.endpoint.to_string();
    f.gpu_path = d.gpu_path;
    auto entry = stats::summary_json(d.stats, f);
    entry["address"] = d.endpoint.to_string();
    entry["state"] = to_string(d.state);
    entry["connections"] = d.connections;
    entry["registrations"] = d.registrations;
    entry["registrations_shared"] = d.registrations - d.registrations_made;
    if (d.error) entry["error"] = d.error->message();
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace rdmavideo
