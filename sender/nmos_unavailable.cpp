// SPDX-License-Identifier: Apache-2.0
// Windows: no NMOS node (its HTTP server and registration are the Linux build's).
#include "cli.hpp"
#include "rdmavideo/log.hpp"
#include "stream.hpp"

namespace rdmavideo::send_cli {

int run_nmos(const Options& /*o*/, const std::atomic<bool>& /*stop*/) {
  log().error("rdmavideo-send: --nmos: this build has no NMOS node (Linux has)");
  return cli::kExitUsage;
}

}  // namespace rdmavideo::send_cli
