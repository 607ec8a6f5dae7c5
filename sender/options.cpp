// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <cstdlib>
#include <sstream>

#include "cli.hpp"
#include "nmos_options.hpp"
#include "rdmavideo/discovery.hpp"

namespace rdmavideo::send_cli {
namespace {

// --max-lateness: "50ms" or "50" (milliseconds), "3f" (frame periods); {value, in frames}.
std::optional<std::pair<double, bool>> parse_lateness(std::string_view text) {
  bool frames = false;
  if (text.ends_with("ms")) {
    text.remove_suffix(2);
  } else if (text.ends_with("f")) {
    text.remove_suffix(1);
    frames = true;
  }
  const std::string number(text);
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(v >= 0) || v > 1e6) {
    return std::nullopt;
  }
  return std::pair{v, frames};
}

}  // namespace

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"rdmavideo-send: send raw video frames into a receiver's ring (RDMA or TCP)",
               "rdmavideo-send"};
  app.set_config("--config", "", "Read options from a TOML file (see configs/)");
  std::vector<std::string> connect;
  std::string transport = "auto", size, rate, pix_fmt = "uyvy422", colour;
  app.add_option("--connect", connect,
                 "Receiver address, HOST:PORT, or the name a receiver advertises by DNS-SD "
                 "(rdmavideo-doctor --discover lists them); repeat it to send every frame to "
                 "several receivers (fan-out), each on its own connection");
  app.add_option("--transport", transport, "auto, tcp or verbs")->capture_default_str();
  app.add_option("--rdma-device", o.rdma_device,
                 "verbs: the RDMA device the route must go through (e.g. mlx5_0)");
  auto* testsrc = app.add_flag("--testsrc", o.testsrc, "Send the built-in moving test pattern");
  auto* input = app.add_option("-i", o.input,
                               "Input: - reads raw frames from stdin; else a file, URL or device "
                               "opened with FFmpeg (width, height, rate, format from the input)");
  testsrc->excludes(input);
  auto* tone = app.add_option("--tone", o.tone,
                              "With --testsrc: send a test tone of HZ beside the pattern (48 kHz "
                              "stereo): a beep at every whole second, on the instant the pattern "
                              "flashes white, so a recording's audio/video sync can be measured")
                   ->check(CLI::Range(20.0, 20000.0));
  tone->needs(testsrc);
  app.add_option("--tone-channels", o.tone_channels,
                 "Channels of the test tone, the same sine on each (1..16, default 2: stereo; 6: "
                 "5.1, 8: 7.1)")
      ->check(CLI::Range(1, 16))
      ->needs(tone);
  std::string audio = "first";
  app.add_option("--audio", audio,
                 "An FFmpeg input's audio beside the picture: first (the default), all, none, or "
                 "the streams N[,M] (0-based among its audio streams, as ffmpeg's 0:a:N)")
      ->capture_default_str();
  app.add_option("--audio-i", o.audio_input,
                 "An audio input of its own beside the picture, as ffmpeg opens one: a capture "
                 "device (with --audio-f alsa or pulse), a filter graph (--audio-f lavfi), a file; "
                 "its clock is mapped onto the picture's");
  app.add_option("--audio-f", o.audio_input_format, "FFmpeg input format or device for --audio-i");
  auto* input_format = app.add_option("-f", o.input_format,
                                      "FFmpeg input format or device: v4l2, x11grab, lavfi, ...");
  input_format->needs(input);
  auto* loop = app.add_flag("--loop", o.loop, "Repeat a file input from its start at its end");
  loop->needs(input);
  app.add_option("-s", size, "Frame size WxH (default 1920x1080)");
  app.add_option("-r", rate, "Frame rate: 60, 59.94, 30000/1001 (default 60)");
  app.add_option("--pix-fmt", pix_fmt, "Pixel format: " + pixel_format_names())
      ->capture_default_str();
  app.add_option("--colour,--color", colour,
                 "The frames' colour, sent to the receiver: bt601, bt709, srgb, bt2100-pq, "
                 "bt2100-hlg, each with \" full\" or \" limited\", or FFmpeg's names "
                 "PRIMARIES/TRANSFER/MATRIX [RANGE] (bt2020/smpte2084/bt2020nc limited). "
                 "Default: an FFmpeg input's own; the test pattern's BT.709 (sRGB for RGB)");
  auto* frames = app.add_option("--frames", o.frames, "Stop after N source frames");
  // Said in words: CLI11's PositiveNumber names its range up to the largest double.
  const CLI::Validator more_than_zero(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0') return "\"" + value + "\" is not a number";
        return v > 0 ? "" : "must be more than 0 seconds, not " + value;
      },
      "SEC>0");
  app.add_option("--duration", o.duration_s, "Stop after SEC seconds")->check(more_than_zero);
  auto* realtime = app.add_flag("--realtime", o.realtime,
                                "Pace at -r and drop frames when the receiver has no free slot");
  auto* nodrop =
      app.add_flag("--no-drop", o.no_drop, "Never drop: wait for the receiver (the default)");
  realtime->excludes(nodrop);
  app.add_option("--readrate", o.readrate,
                 "With --realtime: pace at F times -r, as ffmpeg's -readrate (1.001: a sender "
                 "whose clock runs 0.1% fast), 0.1..10")
      ->check(CLI::Range(0.1, 10.0))
      ->needs(realtime);
  app.add_option_function<std::string>(
         "--max-lateness",
         [&o](const std::string& value) {
           const auto bound = parse_lateness(value);  // checked below
           (bound->second ? o.max_lateness_frames : o.max_lateness_ms) = bound->first;
         },
         "With --realtime: how late a frame may still go, as MS milliseconds (50ms, or a bare "
         "number) or N frame periods (3f); later, it is dropped as late, or as no credit when "
         "the receiver had no free slot for it by then. Default 4f (67 ms at 60 fps)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            return parse_lateness(value) ? "" : "\"" + value + "\" is not MSms or Nf (50ms, 3f)";
          },
          "MS|Nf"))
      ->needs(realtime);
  app.add_flag("--checksum", o.checksum, "Send an XXH3-64 checksum with every frame");
  app.add_option("--stats-json", o.stats_json, "Write the summary as JSON to FILE");
  std::string metrics;
  app.add_option("--metrics", metrics,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (frames, drops by cause, "
                 "latency and state, in all and per receiver)");
  app.add_option("--trace", o.trace,
                 "Write every frame's timing to FILE, a JSON line each: when it was due, woken "
                 "for, filled, given a credit and written, for each receiver (where a late "
                 "frame's time went)");
  app.add_option("--name", o.name, "Stream name shown by the receiver");
  app.add_flag("--advertise", o.advertise,
               "Advertise this sender by DNS-SD under its --name (_rdmavideo-send._tcp, with "
               "its format and receivers), so rdmavideo-doctor --discover lists it");
  cli::NmosOptions nmos(app,
                        "with this sender: it waits for a controller's activation to stream, "
                        "and stops when it is disabled (--connect not needed)");
  app.add_flag("--reconnect", o.reconnect,
               "When a receiver's connection is lost (or it is not there yet), connect again "
               "with back-off (0.5 s to 5 s) until SIGINT, and go on in a new stream there; "
               "the other receivers go on meanwhile");
  app.add_flag("--require-all", o.require_all,
               "With several --connect: a receiver that fails ends the run (exit 1), instead of "
               "being dropped while the others go on");
  app.add_flag("--quiet", o.quiet, "No status line");
  (void)frames;

  std::string hwaccel;
  app.add_option("--hwaccel", hwaccel,
                 "Decode -i FILE on the GPU: cuda or cuda:N (NVDEC through FFmpeg; the GPU of "
                 "--memory cuda:N by default). Into GPU memory frames stay in GPU memory, in the "
                 "decoder's format (nv12, p010); into host memory they are downloaded");
  cli::EndOptions both_ends(app, "the frame buffers");
  if (auto code = cli::parse(app, argc, argv)) return code;
  if (auto code = both_ends.apply(app, o.key, o.memory, o.gpu_path)) return code;
  auto fail = [&](const std::string& message) { return cli::usage_error(app, message); };
  if (!o.testsrc && o.input.empty()) return fail("no source: give --testsrc or -i -");
  if (!metrics.empty()) {
    auto at = parse_endpoint(metrics, true);
    if (!at) return fail("--metrics " + at.error().message());
    o.metrics = *at;
  }
  if (!ffmpeg_input(o) && (!o.input_format.empty() || o.loop || !hwaccel.empty())) {
    return fail(
        "-f, --loop and --hwaccel apply to FFmpeg inputs (a file, URL or device), not to "
        "--testsrc or -i -");
  }
  if (!hwaccel.empty() && hwaccel != "none") {
    const auto spec = memory::parse_memory(hwaccel);
    if (!spec || spec->kind != memory::MemoryKind::cuda) {
      return fail("--hwaccel \"" + hwaccel +
                  "\" unknown (cuda or cuda:N; NVDEC is the decoder there is)");
    }
    const bool ordinal_given = hwaccel != "cuda";
    o.hwaccel =
        ordinal_given || o.memory.kind != memory::MemoryKind::cuda ? spec->device : o.memory.device;
    if (o.memory.kind == memory::MemoryKind::cuda && *o.hwaccel != o.memory.device) {
      return fail("--hwaccel cuda:" + std::to_string(*o.hwaccel) +
                  " decodes on another GPU than --memory cuda:" + std::to_string(o.memory.device) +
                  " holds the frames in: give both the same GPU");
    }
  }
  if (audio == "first") {
    o.audio = av::SourceOptions::Audio::first;
  } else if (audio == "all") {
    o.audio = av::SourceOptions::Audio::all;
  } else if (audio == "none") {
    o.audio = av::SourceOptions::Audio::none;
  } else {
    o.audio = av::SourceOptions::Audio::listed;
    std::stringstream list(audio);
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const long n = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || n < 0 || n > 255) {
        return fail("--audio \"" + audio + "\" is not first, all, none or stream numbers N[,M]");
      }
      o.audio_streams.push_back(static_cast<int>(n));
    }
  }
  if (!o.audio_input_format.empty() && o.audio_input.empty())
    return fail("--audio-f needs --audio-i");
  if (app.count("--audio") > 0 && !ffmpeg_input(o)) {
    return fail("--audio chooses an FFmpeg input's audio streams (-i FILE); --testsrc has --tone");
  }
  o.size_given = !size.empty();
  o.rate_given = !rate.empty();
  o.pix_fmt_given = app.count("--pix-fmt") > 0;
  if (auto code = nmos.apply(app, "sender", "rdmavideo-send", o.nmos)) return code;
  if (connect.empty() && !o.nmos)
    return fail("--connect is required (or --nmos, for a controller to say where)");
  for (const auto& address : connect) {
    auto endpoint = parse_destination(address);
    if (!endpoint) return fail("--connect " + endpoint.error().message());
    o.connect.push_back(*endpoint);
  }
  auto kind = parse_transport(transport);
  if (!kind) return fail("--transport \"" + transport + "\" unknown (auto, tcp or verbs)");
  o.transport = *kind;
  if (!size.empty()) {
    auto wh = parse_size(size);
    if (!wh) return fail("-s \"" + size + "\" is not WIDTHxHEIGHT");
    std::tie(o.width, o.height) = *wh;
  }
  if (!rate.empty()) {
    auto r = parse_frame_rate(rate);
    if (!r) return fail("-r \"" + rate + "\" is not a frame rate (60, 59.94, 30000/1001)");
    o.rate = *r;
  }
  auto format = parse_pixel_format(pix_fmt);
  if (!format) return fail("--pix-fmt \"" + pix_fmt + "\" unknown; known: " + pixel_format_names());
  o.pix_fmt = *format;
  if (!colour.empty()) {
    o.colour = parse_colour(colour);
    if (!o.colour) {
      return fail("--colour \"" + colour +
                  "\" unknown: bt601, bt709, srgb, bt2100-pq, bt2100-hlg "
                  "(optionally \" full\" or \" limited\"), or PRIMARIES/TRANSFER/MATRIX [RANGE] in "
                  "FFmpeg's names");
    }
  }
  if (auto layout = canonical_layout(o.pix_fmt, o.width, o.height); !layout) {
    return fail("-s " + layout.error().message());
  }
  if (o.name.empty()) {
    if (o.testsrc) {
      o.name = "testsrc";
    } else if (ffmpeg_input(o)) {
      const auto slash = o.input.find_last_of('/');
      o.name = (slash == std::string::npos ? o.input : o.input.substr(slash + 1)).substr(0, 63);
    } else {
      o.name = "stdin";
    }
  }
  return std::nullopt;
}

SenderSessionOptions session_options(const Options& o, const proto::StreamStart& format,
                                     const std::atomic<bool>* stop) {
  SenderSessionOptions so;
  so.transport = o.transport;
  so.destinations = o.connect;
  so.connect.endpoint = o.connect.front();
  so.connect.rdma_device = o.rdma_device;
  so.connect.key = o.key;
  so.connect.max_frame_bytes = format.layout.frame_bytes;
  so.connect.stop = stop;  // only SIGINT/SIGTERM stop a write; other signals do not
  so.policy.live = o.realtime;
  so.policy.checksum = o.checksum;
  so.policy.readrate = o.readrate;
  if (o.max_lateness_ms) {
    so.policy.max_lateness = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double, std::milli>(*o.max_lateness_ms));
  } else if (o.max_lateness_frames) {
    so.policy.max_lateness_periods = *o.max_lateness_frames;
  }
  so.interrupt = stop;
  so.memory = o.memory;
  so.gpu_path = o.gpu_path;
  so.reconnect = o.reconnect;
  so.require_all = o.require_all;
  so.resolve = discovery::receiver_resolver(so.connect.timeouts.connect);  // --connect NAME
  return so;
}

}  // namespace rdmavideo::send_cli
