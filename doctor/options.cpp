// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include "cli.hpp"

namespace rdmavideo::doctor {

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{
      "rdmavideo-doctor: check what sending video by RDMA needs on this machine (RDMA "
      "devices, ports, GIDs, locked memory, a receiver's rdma_cm port, CUDA and "
      "dma-buf) and say what to fix",
      "rdmavideo-doctor"};
  std::string peer, size = "3840x2160", pix_fmt = "rgba";
  app.add_option("--peer", peer,
                 "Try an rdma_cm connect to a receiver at HOST:PORT (rdmavideo-recv "
                 "--transport verbs), then disconnect");
  app.add_option("--ring", o.ring, "Slots in the receiver's ring, for the locked-memory check")
      ->check(CLI::Range(1u, proto::kMaxRingSlots))
      ->capture_default_str();
  app.add_option("-s", size, "Frame size WxH, for the locked-memory check")->capture_default_str();
  app.add_option("--pix-fmt", pix_fmt,
                 "Pixel format, for the locked-memory check: " + pixel_format_names())
      ->capture_default_str();
  app.add_flag("--json", o.json, "Print every check as JSON on stdout instead of text");
  app.add_flag("--quiet", o.quiet, "Print only the failed checks and their fixes");
  app.add_option("--new-key", o.new_key,
                 "Write a new shared key for --key-file to FILE (32 random bytes as 64 hex "
                 "digits, mode 0600; never replaces a file) and exit");
  app.add_flag("--discover", o.discover,
               "List the receivers (and the senders that advertise) DNS-SD shows on the "
               "network, with their addresses, transports, keys' ids and streams free, and "
               "exit; --json for JSON");
  app.add_option("--wait", o.discover_wait_s, "--discover: seconds to listen for answers")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  if (auto code = cli::parse(app, argc, argv)) return code;
  auto fail = [&](const std::string& message) { return cli::usage_error(app, message); };
  if (!peer.empty()) {
    auto endpoint = parse_endpoint(peer, false);
    if (!endpoint) return fail("--peer " + endpoint.error().message());
    o.peer = *endpoint;
  }
  auto wh = parse_size(size);
  if (!wh) return fail("-s \"" + size + "\" is not WIDTHxHEIGHT");
  std::tie(o.width, o.height) = *wh;
  auto format = parse_pixel_format(pix_fmt);
  if (!format) return fail("--pix-fmt \"" + pix_fmt + "\" unknown; known: " + pixel_format_names());
  o.pix_fmt = *format;
  if (auto layout = canonical_layout(o.pix_fmt, o.width, o.height); !layout) {
    return fail("-s " + layout.error().message());
  }
  return std::nullopt;
}

}  // namespace rdmavideo::doctor
