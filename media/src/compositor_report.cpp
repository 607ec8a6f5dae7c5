// SPDX-License-Identifier: Apache-2.0
// What the compositor reports: the canvas and each tile, and the same as JSON.
#include "compositor_tile.hpp"

namespace rdmavideo::media {

CompositeReport Compositor::report() const {
  CompositeReport r;
  r.width = format_->width;
  r.height = format_->height;
  r.pix_fmt = std::string(name(format_->pixel_format));
  r.frame_rate = to_string(format_->frame_rate);
  r.memory = memory::to_string(canvas_->memory());
  std::lock_guard lock(mu_);
  r.frames = frames_;
  r.late = late_;
  r.audio_tile = canvas_track_ && !options_.audio_mix ? options_.audio_tile : 0;
  r.audio_mix = canvas_track_ && options_.audio_mix;
  for (const auto& t : tiles_) {
    r.tiles.push_back({t->name, t->stream, t->taken, t->received, t->composited, t->sampled,
                       t->repeats, t->audio_samples, t->uploads, t->downloads,
                       t->clock.audio_jumps(), t->clock.audio_error_ms(), t->stalls});
  }
  return r;
}

nlohmann::json CompositeReport::json() const {
  nlohmann::json tiles_json = nlohmann::json::array();
  for (size_t i = 0; i < tiles.size(); ++i) {
    const Tile& t = tiles[i];
    tiles_json.push_back({{"tile", i + 1},
                          {"name", t.name},
                          {"stream", t.stream},
                          {"live", t.live},
                          {"received", t.received},
                          {"composited", t.composited},
                          {"sampled", t.sampled},
                          {"repeats", t.repeats},
                          {"audio_samples", t.audio_samples},
                          {"uploads", t.uploads},
                          {"downloads", t.downloads},
                          {"audio_placed_again", t.audio_placed_again},
                          {"audio_error_ms", t.audio_error_ms},
                          {"stalls", t.stalls}});
  }
  return {{"width", width},         {"height", height},
          {"pix_fmt", pix_fmt},     {"frame_rate", frame_rate},
          {"memory", memory},       {"frames", frames},
          {"late", late},           {"audio_tile", audio_tile},
          {"audio_mix", audio_mix}, {"tiles", tiles_json}};
}

}  // namespace rdmavideo::media
