// SPDX-License-Identifier: Apache-2.0
// A build without the metrics endpoint (Windows): --metrics is refused, saying so.
#include "metrics.hpp"

namespace rdmavideo::send_cli {

std::string render_metrics(const SenderSession&, const std::string&) { return {}; }

Result<std::unique_ptr<MetricsEndpoint>> serve_metrics(const Endpoint& at, const SenderSession&,
                                                       std::string) {
  return make_error(ErrorCode::unsupported, "--metrics {}: this build has no metrics endpoint",
                    at.to_string());
}

}  // namespace rdmavideo::send_cli
