// SPDX-License-Identifier: Apache-2.0
// A fan-out sender's destinations as its front ends report them: each one's part of the
// status line, and its counters and state in the summary JSON.
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "rdmavideo/sender_session.hpp"
#include "rdmavideo/stats.hpp"

namespace rdmavideo {

/// " | 10.0.0.2:5000 tcp 59.9 fps drop 1 | 10.0.0.3:5000 verbs ...": each destination's part
/// of the status line, from rates since the last call; empty for a single destination.
class DestinationRates {
 public:
  std::string line(const std::vector<DestinationReport>& all);

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<uint64_t> frames_;
};

/// The summary's `destinations`: each receiver's own counters and state, with the stream's
/// facts (`facts`) as each one saw them.
nlohmann::json destinations_json(const std::vector<DestinationReport>& all,
                                 const stats::StreamFacts& facts);

}  // namespace rdmavideo
