// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/media/composite_layout.hpp"
#include "rdmavideo/media/engine_options.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/nmos.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::recv_cli {

/// --metrics: the connections its endpoint keeps open at once (one more sheds the oldest),
/// each a descriptor the receiver's streams cannot have.
inline constexpr uint32_t kMetricsConnections = 32;

struct Options {
  Endpoint listen;
  TransportKind transport = TransportKind::automatic;
  std::string rdma_device;
  uint32_t ring = 8;
  uint32_t max_streams = 1;  // streams served at once
  bool serve = false;        // keep serving after streams end, until SIGINT/SIGTERM
  // "" null sink, "-" stdout, .yuv/.raw raw frames, else a recording; may be a template
  // ({name}, {n}, {peer}, {date}, {time}: output_template.hpp)
  std::string output;
  std::string audio_output;  // --audio-output: a .wav per audio track beside raw frames; a template
  std::string codec;         // --codec for a recording; empty: the container's default
  std::string encoder;       // --encoder for a recording (prores_aw, prores_ks); empty: default
  bool verify = false;
  std::optional<uint64_t> frames;        // per stream
  std::optional<double> idle_timeout_s;  // end a stream that sends no frame for this long
  std::optional<uint64_t> max_memory;    // --max-memory: the budget of every stream's memory
  std::optional<Endpoint> metrics;       // --metrics HOST:PORT: Prometheus text over HTTP
  std::string stats_json;
  // DNS-SD: advertised as --name (default: the host's name) unless --no-advertise
  std::string name;
  bool advertise = true;
  std::optional<nmos::NodeOptions> nmos;  // --nmos: an NMOS node, a receiver per stream
  bool quiet = false;
  bool display = false;       // show the stream in an SDL2 window
  double audio_delay_ms = 0;  // --audio-delay: the window's sound that much later than its picture
  std::shared_ptr<const auth::SharedKey> key;  // --key-file
  memory::MemorySpec memory;                   // --memory: where frames are received into
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;  // --gpu-path
  // --composite / --layout: every stream a tile of one canvas (compositor.hpp)
  bool composite_on = false;
  media::CompositeKind composite = media::CompositeKind::grid;
  std::string layout_file;  // --layout: the tiles from a TOML file instead
  media::CompositeLayout
      layout;  // --layout's tiles, read while parsing (a bad file is a usage error)
  uint32_t canvas_width = 1920, canvas_height = 1080;  // --canvas
  Rational canvas_rate{30, 1};
  PixelFormat canvas_format = PixelFormat::nv12;  // --pix-fmt
  uint32_t composite_audio =
      1;  // --composite-audio: the tile whose first track the canvas carries; 0: none
  bool composite_mix = false;  // --composite-audio mix: every tile's first track, mixed
};

/// Parses the command line. Returns the exit code when the program should stop now.
std::optional<int> parse_options(int argc, char** argv, Options& options);

/// What the media layer is asked for each stream, and for the composite's canvas, with this
/// program's flags as the names of its settings.
media::WriterOptions writer_options(const Options& options);
media::CompositeOptions composite_options(const Options& options);

}  // namespace rdmavideo::recv_cli
