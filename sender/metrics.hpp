// SPDX-License-Identifier: Apache-2.0
// --metrics HOST:PORT: the sender's counters at http://HOST:PORT/metrics (served by
// cli/metrics_server.hpp; a build without it refuses the flag). What is exposed
// (docs/operations.md): the source's frames and its drops by cause, and per receiver its
// state, frames, bytes, drops by cause, latency histogram, connections and audio.
#pragma once

#include <memory>
#include <string>

#include "rdmavideo/result.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo::send_cli {

/// The exposition text for one scrape.
std::string render_metrics(const SenderSession& session, const std::string& name);

/// Serves render_metrics() until destroyed; says where it listens.
class MetricsEndpoint {
 public:
  virtual ~MetricsEndpoint() = default;
};
/// Starts serving at `at` (port 0: any free port), for `session`, which must outlive it.
Result<std::unique_ptr<MetricsEndpoint>> serve_metrics(const Endpoint& at,
                                                       const SenderSession& session,
                                                       std::string name);

}  // namespace rdmavideo::send_cli
