// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rdmavideo/format.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::doctor {

struct Options {
  std::optional<Endpoint> peer;  // --peer: try an rdma_cm connect to this receiver
  uint32_t ring = 8;             // slots of the ring the memlock check sizes
  uint32_t width = 3840;
  uint32_t height = 2160;
  PixelFormat pix_fmt = PixelFormat::rgba;
  bool json = false;
  bool quiet = false;
  std::string new_key;
  bool discover = false;       // --discover: list what DNS-SD shows, and do nothing else
  double discover_wait_s = 2;  // --wait: how long to listen  // --new-key FILE: write a new shared
                               // key there and do nothing else
};

/// Parses the command line. Returns the exit code when the program should stop now (help,
/// or a bad flag reported on one line).
std::optional<int> parse_options(int argc, char** argv, Options& options);

}  // namespace rdmavideo::doctor
