// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include "cli.hpp"

namespace rdmavideo::receiver {

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"rdmavideo-recv: receive raw video frames into a ring of frame buffers",
               "rdmavideo-recv"};
  app.set_config("--config", "", "Read options from a TOML file (see configs/)");
  std::string listen, transport = "auto";
  app.add_option("--listen", listen, "Address to listen on, HOST:PORT (port 0: any free port)")
      ->required();
  app.add_option("--transport", transport, "auto, tcp or verbs")->capture_default_str();
  app.add_option("--rdma-device", o.rdma_device,
                 "verbs: accept only connections arriving on this RDMA device");
  app.add_option("--ring", o.ring, "Slots in the frame ring")
      ->check(CLI::Range(1u, proto::kMaxRingSlots))
      ->capture_default_str();
  app.add_option("--output", o.output,
                 "Write raw frames to FILE (.yuv or .raw) or - for stdout; default: discard");
  app.add_flag("--verify", o.verify, "Check every frame's checksum and the test pattern");
  app.add_option("--frames", o.frames, "Stop after N frames");
  app.add_option("--stats-json", o.stats_json, "Write the summary as JSON to FILE");
  app.add_flag("--quiet", o.quiet, "No status line");
  if (auto code = cli::parse(app, argc, argv)) return code;
  auto fail = [&](const std::string& message) { return cli::usage_error(app, message); };
  auto endpoint = parse_endpoint(listen, true);
  if (!endpoint) return fail("--listen " + endpoint.error().message());
  o.listen = *endpoint;
  auto kind = parse_transport(transport);
  if (!kind) return fail("--transport \"" + transport + "\" unknown (auto, tcp or verbs)");
  o.transport = *kind;
  if (!o.output.empty() && o.output != "-") {
    const auto dot = o.output.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : o.output.substr(dot);
    if (ext != ".yuv" && ext != ".raw") {
      return fail("--output " + o.output +
                  ": this build writes raw frames only (.yuv, .raw or -); encoded recordings "
                  "need the FFmpeg sink");
    }
  }
  return std::nullopt;
}

}  // namespace rdmavideo::receiver
