// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::sender {

struct Options {
  Endpoint connect;
  TransportKind transport = TransportKind::automatic;
  std::string rdma_device;
  bool testsrc = false;
  std::string input;  // "-" for raw frames on stdin
  uint32_t width = 1920;
  uint32_t height = 1080;
  Rational rate{60, 1};
  PixelFormat pix_fmt = PixelFormat::uyvy;
  std::optional<uint64_t> frames;
  std::optional<double> duration_s;
  bool realtime = false;  // pace at rate, drop when no credit
  bool checksum = false;
  std::string stats_json;
  std::string name;
  bool quiet = false;
};

/// Parses the command line. Returns the exit code when the program should stop now (help,
/// a bad flag: the error is printed on one line).
std::optional<int> parse_options(int argc, char** argv, Options& options);

}  // namespace rdmavideo::sender
