// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <algorithm>

#include "cli.hpp"
#include "display.hpp"
#include "nmos_options.hpp"
#include "rdmavideo/media/output_template.hpp"
#include "rdmavideo/media/recording.hpp"
#include "rdmavideo/memory.hpp"

namespace rdmavideo::recv_cli {

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
  app.add_option("--max-streams", o.max_streams,
                 "Streams served at once; one more sender is refused as busy")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_flag("--serve", o.serve,
               "Keep serving after streams end, until SIGINT/SIGTERM (default: exit once "
               "--max-streams streams have ended)");
  app.add_option("--output", o.output,
                 "Write raw frames to FILE (.yuv or .raw) or - for stdout, or record into "
                 ".mov (ProRes 422 HQ), .mkv (FFV1), .mp4 (H.264), .nut, .y4m; default: discard. "
                 "A template names a file per stream: {name} {n} {peer} {date} {time}");
  app.add_option("--audio-output", o.audio_output,
                 "Beside raw or .y4m frames (or none): each audio track to FILE.wav (24-bit PCM, "
                 "from the first frame, as long as the frames; further tracks FILE-track2.wav, "
                 "...); a template as --output")
      ->type_name("FILE.wav");
  app.add_option("--codec", o.codec,
                 "Recording codec: prores_proxy, prores_lt, prores, prores_hq, prores_4444, "
                 "dnxhr_hq, ffv1, h264, hevc, "
                 "rawvideo (default: by the --output extension)");
  app.add_option("--encoder", o.encoder,
                 "Encoder for --codec: an FFmpeg encoder (prores_ks, h264_nvenc, ...), or "
                 "rdmavideo_prores, this project's ProRes 422 encoder on the GPU (frames in GPU "
                 "memory are coded there; on the CPU where there is no GPU) (default: prores_aw "
                 "for ProRes)");
  app.add_flag("--verify", o.verify, "Check every frame's checksum and the test pattern");
  app.add_option("--frames", o.frames, "End each stream after N frames (the sender is told)");
  app.add_option("--idle-timeout", o.idle_timeout_s,
                 "End a stream that sends no frame for SEC seconds, telling its sender (default: "
                 "off, as a paused sender sends only keepalives)")
      ->check(CLI::Range(0.1, 86400.0));
  std::string max_memory;
  app.add_option("--max-memory", max_memory,
                 "Memory all streams may hold at once (rings, recordings' encoders, tiles, "
                 "verification frames), e.g. 512M or 8G; a stream asking for more is refused "
                 "(default: half of RAM, and on "
                 "verbs at most ulimit -l unless the process has CAP_IPC_LOCK)");
  std::string metrics;
  app.add_option("--metrics", metrics,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (per stream frames, "
                 "drops, latency, ring occupancy, encoder speed; refusals by reason)");
  app.add_option("--stats-json", o.stats_json, "Write the summary as JSON to FILE");
  app.add_option("--name", o.name,
                 "The name this receiver advertises by DNS-SD (_rdmavideo._tcp), which senders "
                 "connect to instead of HOST:PORT (default: the host's name; taken on the "
                 "network, it becomes \"NAME #2\")");
  app.add_flag("--advertise,!--no-advertise", o.advertise,
               "Advertise by DNS-SD through avahi-daemon (default on; where none runs the "
               "receiver says so once and is reached by address)");
  cli::NmosOptions nmos(app,
                        "with an NMOS receiver per stream it takes (--max-streams), so a "
                        "facility's controller sees and routes it");
  app.add_flag("--quiet", o.quiet, "No status line");
  auto* display =
      app.add_flag("--display", o.display,
                   "Show the stream in a window (f: fullscreen, q/Esc: stop) and play its first "
                   "audio track, the picture following the sound; a slow window skips frames, "
                   "the output never does");
  app.add_option("--audio-delay", o.audio_delay_ms,
                 "With --display: play the sound MS later than the picture (negative: earlier), "
                 "-1000..1000")
      ->check(CLI::Range(-1000.0, 1000.0))
      ->needs(display);
  std::string composite, canvas, canvas_pix_fmt;
  auto* composite_option = app.add_option(
      "--composite", composite,
      "Every stream a tile of one canvas, written, recorded or shown as one stream: grid, "
      "row, or pip (the first stream full size, the others small in front of it); with "
      "--memory cuda the canvas is in GPU memory, drawn by the library's CUDA kernels");
  auto* layout_option =
      app.add_option("--layout", o.layout_file,
                     "The composite's tiles from a TOML file ([[tile]] with x, y, width, "
                     "height, and name or stream)")
          ->check(CLI::ExistingFile);
  layout_option->excludes(composite_option);
  app.add_option("--canvas", canvas,
                 "The composite's canvas: WIDTHxHEIGHT@RATE (default 1920x1080@30)");
  app.add_option(
      "--pix-fmt", canvas_pix_fmt,
      "The composite's pixel format (default nv12; a canvas in GPU memory is nv12, another format "
      "puts it in host memory)");
  std::string composite_audio;
  app.add_option(
      "--composite-audio", composite_audio,
      "The composite's sound: N, the first audio track of the stream in tile N (default 1), mix "
      "(every tile's first track, mixed), or none");
  cli::EndOptions both_ends(app, "received frames");
  if (auto code = cli::parse(app, argc, argv)) return code;
  if (auto code = both_ends.apply(app, o.key, o.memory, o.gpu_path)) return code;
  auto fail = [&](const std::string& message) { return cli::usage_error(app, message); };
  auto endpoint = parse_endpoint(listen, true);
  if (!endpoint) return fail("--listen " + endpoint.error().message());
  o.listen = *endpoint;
  if (auto code = nmos.apply(app, "receiver", "rdmavideo-recv", o.nmos)) return code;
  if (!max_memory.empty()) {
    o.max_memory = memory::parse_bytes(max_memory);
    if (!o.max_memory || *o.max_memory == 0) {
      return fail("--max-memory \"" + max_memory + "\" is not a size (e.g. 512M, 8G)");
    }
  }
  if (!metrics.empty()) {
    auto at = parse_endpoint(metrics, true);
    if (!at) return fail("--metrics " + at.error().message());
    o.metrics = *at;
  }
  auto kind = parse_transport(transport);
  if (!kind) return fail("--transport \"" + transport + "\" unknown (auto, tcp or verbs)");
  o.transport = *kind;
  if (o.display && !Display::available()) {
    return fail("--display: this build has no SDL2 (install libsdl2-dev and reconfigure)");
  }
  o.composite_on = !composite.empty() || !o.layout_file.empty();
  if (!composite.empty()) {
    auto chosen = media::parse_composite_kind(composite);
    if (!chosen)
      return fail("--composite \"" + composite +
                  "\" unknown (grid, row or pip; --layout FILE for others)");
    o.composite = *chosen;
  }
  if (!o.composite_on && (!canvas.empty() || !canvas_pix_fmt.empty())) {
    return fail("--canvas and --pix-fmt describe a composite: add --composite or --layout");
  }
  if (!canvas.empty()) {
    const auto at = canvas.find('@');
    auto size = parse_size(canvas.substr(0, at));
    auto rate = at == std::string::npos ? std::optional<Rational>(Rational{30, 1})
                                        : parse_frame_rate(canvas.substr(at + 1));
    if (!size || !rate)
      return fail("--canvas \"" + canvas +
                  "\" is not WIDTHxHEIGHT@RATE (1280x720@30, 1920x1080@59.94)");
    std::tie(o.canvas_width, o.canvas_height) = *size;
    o.canvas_rate = *rate;
    if (o.canvas_width % 2 || o.canvas_height % 2 ||
        !canonical_layout(PixelFormat::nv12, o.canvas_width, o.canvas_height)) {
      return fail("--canvas \"" + canvas +
                  "\": width and height must be even, from 2 to the protocol's limits");
    }
  }
  if (!o.layout_file.empty()) {
    auto loaded = media::CompositeLayout::load(o.layout_file, o.canvas_width, o.canvas_height);
    if (!loaded) return fail("--layout " + loaded.error().message());
    o.layout = std::move(*loaded);
  }
  if (!canvas_pix_fmt.empty()) {
    auto format = parse_pixel_format(canvas_pix_fmt);
    if (!format)
      return fail("--pix-fmt \"" + canvas_pix_fmt + "\" unknown; known: " + pixel_format_names());
    if (*format == PixelFormat::v210)
      return fail(
          "--pix-fmt v210: a canvas cannot be drawn in it (FFmpeg has no v210 pixel format)");
    o.canvas_format = *format;
  }
  if (!composite_audio.empty()) {
    if (!o.composite_on)
      return fail("--composite-audio chooses a composite's sound: add --composite or --layout");
    if (composite_audio == "none") {
      o.composite_audio = 0;
    } else if (composite_audio == "mix") {
      o.composite_mix = true;
    } else {
      char* end = nullptr;
      const unsigned long n = std::strtoul(composite_audio.c_str(), &end, 10);
      if (end == composite_audio.c_str() || *end || n < 1 || n > 64) {
        return fail("--composite-audio \"" + composite_audio +
                    "\" is not a tile number (1..64), mix or none");
      }
      o.composite_audio = static_cast<uint32_t>(n);
    }
  }
  if (o.composite_on && o.verify) {
    return fail(
        "--verify checks each stream's test pattern: a composite's canvas has none (leave out one "
        "or the other)");
  }
  if (o.composite_on && !o.audio_output.empty()) {
    return fail("--audio-output with --composite: the canvas carries no audio yet");
  }
  // A composite is one output, whatever the streams: no template is needed for it.
  if (auto ok = media::OutputTemplate::check(o.output, o.composite_on ? 1 : o.max_streams,
                                             o.serve && !o.composite_on, "--output");
      !ok) {
    return fail(ok.error().message());
  }
  if (!o.audio_output.empty()) {
    std::string ext =
        o.audio_output.size() >= 4 ? o.audio_output.substr(o.audio_output.size() - 4) : "";
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (ext != ".wav")
      return fail("--audio-output \"" + o.audio_output + "\" must name a .wav file");
    if (media::Recording::holds_audio(o.output)) {
      return fail("--audio-output is for raw and .y4m outputs: --output " + o.output +
                  " records every audio track itself");
    }
    if (auto ok =
            media::OutputTemplate::check(o.audio_output, o.max_streams, o.serve, "--audio-output");
        !ok) {
      return fail(ok.error().message());
    }
  }
  if (media::Recording::is_recording_path(o.output)) {
    if (auto ok = media::Recording::check(media::recording_options(writer_options(o), o.output));
        !ok) {
      return fail(ok.error().message());
    }
  } else if (!o.codec.empty() || !o.encoder.empty()) {
    return fail(
        "--codec and --encoder apply to recordings (--output FILE.mov, .mkv, ...), not "
        "to raw output");
  }
  return std::nullopt;
}

media::WriterOptions writer_options(const Options& o) {
  media::WriterOptions w;
  w.output = o.output;
  w.audio_output = o.audio_output;
  w.codec = o.codec;
  w.encoder = o.encoder;
  w.verify = o.verify;
  w.monitored = o.display;
  w.names.output = "--output";
  w.names.audio_output = "--audio-output";
  w.names.codec = "--codec";
  w.names.encoder = "--encoder";
  w.names.monitor = "--display";
  w.names.canvas_size = "--canvas";
  w.names.canvas_format = "--pix-fmt";
  w.names.audio_mix = "--composite-audio mix";
  return w;
}

media::CompositeOptions composite_options(const Options& o) {
  media::CompositeOptions c;
  c.width = o.canvas_width;
  c.height = o.canvas_height;
  c.rate = o.canvas_rate;
  c.format = o.canvas_format;
  c.memory = o.memory;
  c.kind = o.composite;
  c.tiles = o.max_streams;
  c.layout_name = o.layout_file;
  c.layout = o.layout;
  c.audio_tile = o.composite_audio;
  c.audio_mix = o.composite_mix;
  c.writer = writer_options(o);
  return c;
}

}  // namespace rdmavideo::recv_cli
