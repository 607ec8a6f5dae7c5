// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send: reads or generates frames and sends them into one receiver's ring or
// several (fan-out), through a SenderSession that lends it frame buffers, paces it, applies
// the live/no-drop policy, reconnects and keeps the connections alive. This file parses,
// builds, feeds frames and reports; the policy is the library's.
#include <pthread.h>

#include <csignal>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli.hpp"
#include "options.hpp"
#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/sender_session.hpp"
#include "source.hpp"
#include "tone.hpp"

namespace rdmavideo::sender {
namespace {

using Clock = std::chrono::steady_clock;
const std::atomic<bool>& g_stop = cli::stop_requested();  // SIGINT or SIGTERM arrived

SenderSessionOptions session_options(const Options& o, const proto::StreamStart& format) {
  SenderSessionOptions so;
  so.transport = o.transport;
  so.destinations = o.connect;
  so.connect.endpoint = o.connect.front();
  so.connect.rdma_device = o.rdma_device;
  so.connect.key = o.key;
  so.connect.max_frame_bytes = format.layout.frame_bytes;
  so.connect.stop = &g_stop;  // only SIGINT/SIGTERM stop a write; other signals do not
  so.policy = {o.realtime, o.checksum, o.readrate};
  so.interrupt = &g_stop;
  so.memory = o.memory;
  so.gpu_path = o.gpu_path;
  so.reconnect = o.reconnect;
  so.require_all = o.require_all;
  return so;
}

// " | 10.0.0.2:5000 tcp 59.9 fps drop 1 | 10.0.0.3:5000 verbs ...": each destination's part
// of the status line, from rates since the last call.
class DestinationParts {
 public:
  std::string line(const std::vector<DestinationReport>& all) {
    if (all.size() < 2) return {};
    const auto now = Clock::now();
    const double dt = std::max(1e-3, std::chrono::duration<double>(now - last_).count());
    last_ = now;
    frames_.resize(all.size());
    std::string out;
    for (size_t i = 0; i < all.size(); ++i) {
      const auto& d = all[i];
      out += fmt::format(
          " | {} {} {:.1f} fps", d.endpoint.to_string(),
          d.state == DestinationReport::State::streaming ? d.transport : to_string(d.state),
          (d.stats.frames - frames_[i]) / dt);
      if (d.stats.dropped) out += fmt::format(" drop {}", d.stats.dropped);
      frames_[i] = d.stats.frames;
    }
    return out;
  }

 private:
  Clock::time_point last_ = Clock::now();
  std::vector<uint64_t> frames_;
};

// The summary's `destinations`: each receiver's own counters and state.
nlohmann::json destinations_json(const std::vector<DestinationReport>& all,
                                 const stats::StreamFacts& facts) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : all) {
    stats::StreamFacts f = facts;
    f.transport = d.transport;
    f.peer = d.endpoint.to_string();
    f.gpu_path = d.gpu_path;
    auto entry = stats::summary_json(d.stats, f);
    entry["address"] = d.endpoint.to_string();
    entry["state"] = to_string(d.state);
    entry["connections"] = d.connections;
    entry["registrations"] = d.registrations;
    entry["registrations_shared"] = d.registrations - d.registrations_made;
    if (d.error) entry["error"] = d.error->message();
    list.push_back(std::move(entry));
  }
  return list;
}

// --audio-i: the input's samples into `track` on a thread of their own, their clock mapped
// onto the picture's, whose pts 0 is `origin`. A capture device's chunk is placed by when it
// was read, less its own length (its first sample was captured that long before), and kept
// continuous with the chunk before while the two agree within kResync; an input that is no
// device (lavfi, a file) is placed by its sample count and paced in real time.
class CaptureFeed {
 public:
  static constexpr std::chrono::milliseconds kResync{20};

  CaptureFeed(av::AudioCapture& capture, SenderSession& session, uint32_t track,
              Clock::time_point origin)
      : capture_(capture), session_(session), track_(track), origin_(origin) {
    thread_ = std::thread([this] { run(); });
  }
  ~CaptureFeed() { stop(); }
  CaptureFeed(const CaptureFeed&) = delete;
  CaptureFeed& operator=(const CaptureFeed&) = delete;
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::optional<Error> error() const {
    std::lock_guard lock(mu_);
    return error_;
  }
  uint64_t resyncs() const { return resyncs_; }

 private:
  void run() {
    // SIGINT and SIGTERM are the main thread's.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    const double rate = capture_.format().sample_rate;
    std::optional<int64_t> next_ns;  // where the next chunk continues
    while (!stop_ && !g_stop) {
      auto chunk = capture_.read();
      if (!chunk) return fail(chunk.error());
      if (!*chunk) return;  // the input ended: the picture goes on
      const auto& c = **chunk;
      const auto length_ns = static_cast<int64_t>(c.samples / rate * 1e9);
      int64_t pts = 0;
      if (capture_.live()) {
        const int64_t read_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(c.read_at - origin_).count();
        const int64_t estimate = read_ns - length_ns;
        pts = estimate;
        if (next_ns &&
            std::llabs(estimate - *next_ns) <= std::chrono::nanoseconds(kResync).count()) {
          pts = *next_ns;
        } else if (next_ns) {
          ++resyncs_;
        }
      } else {
        pts = static_cast<int64_t>(static_cast<double>(c.first_sample) / rate * 1e9);
        std::this_thread::sleep_until(origin_ + std::chrono::nanoseconds(pts));
      }
      next_ns = pts + length_ns;
      if (auto ok = session_.submit_audio(track_, pts, c.samples, c.data); !ok)
        return fail(ok.error());
    }
  }
  void fail(const Error& error) {
    std::lock_guard lock(mu_);
    error_ = error;
  }

  av::AudioCapture& capture_;
  SenderSession& session_;
  uint32_t track_;
  Clock::time_point origin_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> resyncs_{0};
  mutable std::mutex mu_;
  std::optional<Error> error_;
  std::thread thread_;
};

int run(Options o) {
  auto ffmpeg = open_ffmpeg(o);
  if (!ffmpeg) {
    log().error("rdmavideo-send: {}", ffmpeg.error().message());
    return cli::kExitFailed;
  }
  std::unique_ptr<av::AudioCapture> capture;
  if (!o.audio_input.empty()) {
    auto opened = av::AudioCapture::open(o.audio_input, o.audio_input_format);
    if (!opened) {
      log().error("rdmavideo-send: {}", opened.error().message());
      return cli::kExitFailed;
    }
    capture = std::move(*opened);
    log().info("[send] audio input: {}", capture->describe());
  }
  // A capture device delivers frames at its own pace; the test pattern, stdin, lavfi and a
  // file sent with --realtime are paced here.
  const bool paced_here = o.realtime && !(*ffmpeg && (*ffmpeg)->paced_by_input());
  auto format = proto::make_stream_start(o.pix_fmt, o.width, o.height, o.rate);
  if (!format) {
    log().error("rdmavideo-send: {}", format.error().message());
    return cli::kExitUsage;
  }
  format->name = o.name;
  // The test pattern is rendered in BT.709, limited range (RGB: sRGB); raw frames from
  // stdin are what --colour says, or not said.
  format->colour = o.colour.value_or(!o.testsrc              ? Colour{}
                                     : traits(o.pix_fmt).rgb ? *parse_colour("srgb")
                                                             : *parse_colour("bt709"));
  if (o.realtime) format->flags |= proto::kStreamLive;
  if (o.checksum) format->flags |= proto::kStreamChecksums;
  if (o.testsrc) format->flags |= proto::kStreamTestPattern;
  if (o.tone) format->flags |= proto::kStreamFlash;  // the beeps' instants, in the picture
  Source source(o, std::move(*ffmpeg));

  auto connected = SenderSession::connect(session_options(o, *format));
  if (!connected) {
    log().error("{}", connected.error().message());
    return cli::kExitFailed;
  }
  SenderSession& session = **connected;
  const std::string who = fmt::format("send {} \"{}\"", session.peer(), o.name);
  log().info("[{}] connected over {}{}; {}x{} {} ({}) at {} fps, {} bytes a frame, {}", who,
             to_string(session.kind()), o.transport == TransportKind::automatic ? " (auto)" : "",
             o.width, o.height, name(o.pix_fmt), describe(format->colour), to_string(o.rate),
             format->layout.frame_bytes,
             o.realtime ? (o.connect.size() > 1 ? "real time, dropping where a receiver is behind"
                                                : "real time, dropping when the receiver is behind")
                        : "no drops");
  int exit_code = 0;
  auto failed = [&](const Error& error) {
    log().error("{}", error.message());
    exit_code = cli::kExitFailed;
  };
  bool receiver_ended = false;
  // Audio beside the picture, the test tone or the input's tracks, started before the
  // stream so every receiver has them from the first frame. The tone's samples for a frame's
  // period go out just before the frame; an input's as they were decoded with its frames.
  std::optional<Tone> tone;
  if (o.tone) tone.emplace(*o.tone, o.tone_channels);
  std::vector<proto::AudioStart> audio_formats =
      tone ? std::vector<proto::AudioStart>{tone->format()} : source.audio_tracks();
  if (capture) audio_formats.push_back(capture->format());  // the last track
  std::vector<uint32_t> tracks;
  for (const auto& audio_format : audio_formats) {
    auto track = session.start_audio(audio_format);
    if (!track) {
      failed(track.error());
      break;
    }
    tracks.push_back(*track);
  }
  uint64_t tone_sent = 0;  // samples so far
  auto send_input_audio = [&]() -> Result<void> {
    for (auto& a : source.take_audio()) {
      if (auto ok = session.submit_audio(tracks.at(a.track), a.pts_ns, a.samples, a.data); !ok)
        return ok;
    }
    return {};
  };
  auto send_tone_until = [&](uint64_t frame_end) -> Result<void> {
    // Samples up to the end of frame `frame_end - 1`: frame_end / rate seconds.
    const uint64_t until = frame_end * Tone::kRate * o.rate.den / o.rate.num;
    if (!tone || until <= tone_sent) return {};
    const auto count = static_cast<uint32_t>(until - tone_sent);
    const auto pts = static_cast<int64_t>(tone_sent * 1'000'000'000 / Tone::kRate);
    auto ok = session.submit_audio(tracks.front(), pts, count, tone->samples(tone_sent, count));
    tone_sent = until;
    return ok;
  };
  if (exit_code == 0) {
    if (auto ring = session.start_stream(*format, source.pool_buffers(*format)); !ring) {
      failed(ring.error());
    } else if (auto ok = source.prepare(session, *format); !ok) {
      failed(ok.error().context("rdmavideo-send"));
    }
  }
  std::optional<CaptureFeed> capture_feed;
  if (capture && exit_code == 0) {  // every track started, the capture's the last
    capture_feed.emplace(*capture, session, tracks.back(), Clock::now());
  }
  stats::StatusLine status(fmt::format("[{}]", who), !o.quiet);
  DestinationParts parts;
  const auto start = Clock::now();
  const double period_s = 1.0 / o.rate.value();
  for (uint64_t sequence = 0; exit_code == 0 && !g_stop; ++sequence) {
    if (o.frames && sequence >= *o.frames) break;
    if (o.duration_s) {
      // Paced: frames due before the end (60 fps for 5 s is 300 frames). Otherwise: time.
      const double t = paced_here ? period_s * static_cast<double>(sequence)
                                  : std::chrono::duration<double>(Clock::now() - start).count();
      if (t >= *o.duration_s - 1e-9) break;
    }
    auto ready = Clock::now();
    bool late = false;
    if (paced_here) {
      auto due = session.pace(sequence);
      if (!due) {
        failed(due.error());
        break;
      }
      if (due->what == SenderSession::Pacing::What::interrupted) break;
      late = due->what == SenderSession::Pacing::What::late;
      ready = due->due;
    }
    // The frame's period of the tone, even for a late frame: the sound goes on.
    if (auto ok = send_tone_until(sequence + 1); !ok) {
      failed(ok.error());
      break;
    }
    if (late) continue;  // dropped and counted
    auto buffer = source.buffer_for(session, sequence);
    if (!buffer) {
      failed(buffer.error());
      break;
    }
    auto filled = source.fill(*buffer, sequence);
    if (!filled) {
      failed(Error(filled.error().code(), "rdmavideo-send: " + filled.error().message()));
      break;
    }
    if (auto ok = send_input_audio(); !ok) {
      failed(ok.error());
      break;
    }
    if (!*filled) break;  // end of input
    auto outcome = session.submit(*buffer, {sequence, source.pts_ns(), ready});
    if (!outcome) {
      failed(outcome.error());
      break;
    }
    if (*outcome == SenderSession::Outcome::receiver_ended) {
      receiver_ended = true;
      break;
    }
    if (*outcome == SenderSession::Outcome::interrupted) break;
    if (status.due()) status.maybe_print(session.stats(), parts.line(session.destinations()));
  }
  status.finish();
  if (capture_feed) {
    capture_feed->stop();
    if (auto e = capture_feed->error(); e && exit_code == 0) failed(*e);
    if (capture_feed->resyncs() > 0) {
      log().info(
          "[{}] the audio input's clock was placed again {} times (it drifts from the picture's)",
          who, capture_feed->resyncs());
    }
  }
  // Also after a bad input frame: the receivers keep every frame sent so far.
  if (auto ok = session.end_stream(); !ok && exit_code == 0) failed(ok.error());
  if (receiver_ended || session.receiver_ended())
    log().info("[{}] the receiver ended the stream", who);
  const auto destinations = session.destinations();
  const auto stats = session.stats();
  stats::StreamFacts facts{
      std::string(to_string(session.kind())), o.width,           o.height,
      std::string(name(o.pix_fmt)),           to_string(o.rate), session.peer()};
  facts.memory = memory::to_string(o.memory);
  facts.gpu_path = session.gpu_path();
  uint32_t connections = 0;
  for (const auto& d : destinations) connections += d.connections;
  log().info(
      "[{}] sent {}{}", who, stats::summary_text(stats, facts),
      connections > destinations.size() ? fmt::format(", over {} connections", connections) : "");
  for (const auto& d : destinations) {
    if (destinations.size() > 1 || d.state == DestinationReport::State::failed) {
      log().info("[send {}] {}: {} frames, dropped {}{}", d.endpoint.to_string(),
                 to_string(d.state), d.stats.frames, d.stats.dropped,
                 d.error ? ": " + d.error->message() : "");
    }
  }
  if (!o.stats_json.empty()) {
    auto summary = stats::summary_json(stats, facts);
    summary["destinations"] = destinations_json(destinations, facts);
    uint32_t registrations = 0;  // made, for all destinations: once per RDMA device
    for (const auto& d : destinations) registrations += d.registrations_made;
    summary["registrations"] = registrations;
    if (!stats::write_json(o.stats_json, summary)) exit_code = cli::kExitFailed;
  }
  return exit_code;
}

}  // namespace
}  // namespace rdmavideo::sender

int main(int argc, char** argv) {
  using namespace rdmavideo::sender;
  Options options;
  if (auto code = parse_options(argc, argv, options)) return *code;
  rdmavideo::cli::install_stop_signals();
  return rdmavideo::cli::run_main("rdmavideo-send", [&] { return run(options); });
}
