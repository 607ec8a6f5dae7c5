// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/av/source.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/nmos.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/sender_session.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::send_cli {

struct Options {
  std::vector<Endpoint> connect;  // --connect, once per receiver
  TransportKind transport = TransportKind::automatic;
  std::string rdma_device;
  bool testsrc = false;
  std::optional<double> tone;  // --tone HZ: the test tone beside the pattern, which flashes
  uint32_t tone_channels = 2;  // --tone-channels
  // --audio: which of an FFmpeg input's audio streams go beside the picture
  av::SourceOptions::Audio audio = av::SourceOptions::Audio::first;
  std::vector<int> audio_streams;  // --audio N[,M]
  std::string audio_input;         // --audio-i URL: an audio input of its own (a microphone)
  std::string audio_input_format;  // --audio-f: alsa, pulse, lavfi, ...
  std::string input;         // "-" for raw frames on stdin; else a file, URL or device (FFmpeg)
  std::string input_format;  // -f: v4l2, x11grab, lavfi, ... (FFmpeg inputs only)
  bool loop = false;         // --loop: repeat a file input
  // Which of -s, -r, --pix-fmt were given: an FFmpeg input converts only to those.
  bool size_given = false;
  bool rate_given = false;
  bool pix_fmt_given = false;
  uint32_t width = 1920;
  uint32_t height = 1080;
  Rational rate{60, 1};
  PixelFormat pix_fmt = PixelFormat::uyvy;
  std::optional<Colour> colour;  // --colour; else the input's, or the test pattern's
  std::optional<uint64_t> frames;
  std::optional<double> duration_s;
  bool realtime = false;  // pace at rate, drop when no credit
  double readrate = 1.0;  // --readrate: pace at this many times the rate
  // --max-lateness: how late a live frame may still go, in milliseconds or in frame periods
  // (one of the two); neither: the session's default.
  std::optional<double> max_lateness_ms;
  std::optional<double> max_lateness_frames;
  bool no_drop = false;  // --no-drop given (an FFmpeg capture input is live otherwise)
  bool checksum = false;
  std::string stats_json;
  std::string trace;                // --trace FILE: every frame's timing, a JSON line each
  std::optional<Endpoint> metrics;  // --metrics HOST:PORT: Prometheus text at /metrics
  std::string name;
  bool advertise = false;  // --advertise: as `name`, by DNS-SD (_rdmavideo-send._tcp)
  // --nmos: an NMOS node; its controller's activations say where to send
  std::optional<nmos::NodeOptions> nmos;
  bool quiet = false;
  bool reconnect = false;    // --reconnect: a lost connection is made again, with back-off
  bool require_all = false;  // --require-all: a receiver that fails ends the run
  std::shared_ptr<const auth::SharedKey> key;  // --key-file
  memory::MemorySpec memory;                   // --memory: where the frame buffers live
  std::optional<int> hwaccel;                  // --hwaccel cuda[:N]: the GPU that decodes
  gpu::PathChoice gpu_path = gpu::PathChoice::automatic;  // --gpu-path
};

/// An FFmpeg input (file, URL, device) rather than the test pattern or raw stdin.
inline bool ffmpeg_input(const Options& o) {
  return !o.testsrc && !o.input.empty() && o.input != "-";
}

/// Parses the command line. Returns the exit code when the program should stop now (help,
/// a bad flag: the error is printed on one line).
std::optional<int> parse_options(int argc, char** argv, Options& options);

// The session the options ask for, sending `format`; `stop` (SIGINT, SIGTERM) ends waits and
// writes.
SenderSessionOptions session_options(const Options& o, const proto::StreamStart& format,
                                     const std::atomic<bool>* stop);

}  // namespace rdmavideo::send_cli
