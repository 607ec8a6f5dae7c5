// SPDX-License-Identifier: Apache-2.0
// What the window showed, said at the receiver's end: with or without SDL2 (the stand-in
// display never opens, so never reports).
#include <nlohmann/json.hpp>

#include "display.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::recv_cli {

nlohmann::json finish_display(Display& display) {
  display.stop();
  const auto counts = display.counts();
  log().info("[recv] display: {} frames shown, {} dropped (window busy)", counts.shown,
             counts.dropped);
  nlohmann::json display_json = {{"shown", counts.shown}, {"dropped", counts.dropped}};
  if (!counts.audio.empty()) {
    const auto& a = counts.sound;
    log().info(
        "[recv] display sound: {}; {} frames shown on its clock, |A/V| p50 {:.2f} ms, "
        "p99 {:.2f} ms, max {:.2f} ms; latency {:.0f} ms, correction {:+.0f} ppm, "
        "{} underruns, {} ms of silence put in, {} ms dropped, {} restarts",
        counts.audio, counts.paced, counts.offset_p50_ms, counts.offset_p99_ms,
        counts.offset_max_ms, a.latency_ms, a.correction_ppm, a.underruns, a.gaps_ms, a.dropped_ms,
        a.restarts);
    display_json["audio"] = {{"device", counts.audio},
                             {"paced", counts.paced},
                             {"offset_p50_ms", counts.offset_p50_ms},
                             {"offset_p99_ms", counts.offset_p99_ms},
                             {"offset_max_ms", counts.offset_max_ms},
                             {"chunks", a.chunks},
                             {"latency_ms", a.latency_ms},
                             {"correction_ppm", a.correction_ppm},
                             {"underruns", a.underruns},
                             {"silence_ms", a.gaps_ms},
                             {"dropped_ms", a.dropped_ms},
                             {"restarts", a.restarts}};
  }
  return display_json;
}

}  // namespace rdmavideo::recv_cli
