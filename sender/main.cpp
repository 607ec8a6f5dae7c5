// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send: reads or generates frames and sends them into one receiver's ring or
// several (fan-out), through a SenderSession that lends it frame buffers, paces it, applies
// the live/no-drop policy, reconnects and keeps the connections alive. This file parses,
// builds, feeds frames and reports; the policy is the library's.
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/av/capture_feed.hpp"
#include "rdmavideo/destination_report.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/sender_session.hpp"
#include "rdmavideo/test_tone.hpp"
#include "rdmavideo/version.hpp"
#include "source.hpp"
#include "stream.hpp"
#include "trace.hpp"

namespace rdmavideo::send_cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string_view outcome_name(SenderSession::Outcome outcome) {
  switch (outcome) {
    case SenderSession::Outcome::sent: return "sent";
    case SenderSession::Outcome::dropped: return "dropped";
    case SenderSession::Outcome::receiver_ended: return "receiver_ended";
    case SenderSession::Outcome::interrupted: return "interrupted";
  }
  return "unknown";
}

// --advertise: the sender by DNS-SD, with what it sends and where; its port is its metrics
// endpoint's, or 0 (nothing to connect to: a sender connects out).
std::unique_ptr<discovery::Advertiser> advertise(const Options& o, TransportKind chosen) {
  if (!o.advertise) return nullptr;
  std::string destinations;
  for (const auto& d : o.connect) destinations += (destinations.empty() ? "" : ",") + d.to_string();
  if (destinations.size() > 200) destinations = destinations.substr(0, 197) + "...";
  discovery::Txt txt{{"txtvers", "1"},
                     {"format", fmt::format("{}x{} {}", o.width, o.height, name(o.pix_fmt))},
                     {"rate", to_string(o.rate)},
                     {"transport", std::string(to_string(chosen))},
                     {"destinations", destinations},
                     {"version", std::string(version())}};
  auto advertiser = discovery::Advertiser::start(
      {o.name, discovery::kSenderType, o.metrics ? o.metrics->port : uint16_t{0}, txt});
  if (!advertiser) {
    log().warn("rdmavideo-send: --advertise: {}", advertiser.error().message());
    return nullptr;
  }
  log().info("advertised as \"{}\" ({})", (*advertiser)->name(), discovery::kSenderType);
  return std::move(*advertiser);
}

}  // namespace

int run_stream(Options o, const std::atomic<bool>& stop) {
  auto ffmpeg = open_ffmpeg(o);
  if (!ffmpeg) {
    log().error("rdmavideo-send: {}", ffmpeg.error().message());
    return cli::kExitFailed;
  }
  auto opened = open_audio_capture(o);
  if (!opened) {
    log().error("rdmavideo-send: {}", opened.error().message());
    return cli::kExitFailed;
  }
  std::unique_ptr<av::AudioCapture> capture = std::move(*opened);
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
  // Live and checksums are stamped by the session from its policy; what only this program
  // knows is stamped here.
  if (o.testsrc) format->flags |= proto::kStreamTestPattern;
  if (o.tone) format->flags |= proto::kStreamFlash;  // the beeps' instants, in the picture
  Source source(o, std::move(*ffmpeg));

  std::unique_ptr<FrameTrace> trace;  // outlives the session, whose threads write to it
  if (!o.trace.empty()) {
    auto opened_trace = FrameTrace::open(o.trace);
    if (!opened_trace) {
      log().error("rdmavideo-send: {}", opened_trace.error().message());
      return cli::kExitFailed;
    }
    trace = std::move(*opened_trace);
  }
  auto options = session_options(o, *format, &stop);
  if (trace) options.on_frame = [t = trace.get()](const FrameTiming& f) { t->destination(f); };
  auto connected = SenderSession::connect(std::move(options));
  if (!connected) {
    log().error("{}", connected.error().message());
    return cli::kExitFailed;
  }
  SenderSession& session = **connected;
  const std::string who = fmt::format("send {} \"{}\"", session.peer(), o.name);
  std::unique_ptr<MetricsEndpoint> metrics;  // before the session goes, it goes
  if (o.metrics) {
    auto served = serve_metrics(*o.metrics, session, o.name);
    if (!served) {
      log().error("rdmavideo-send: {}", served.error().message());
      return cli::kExitFailed;
    }
    metrics = std::move(*served);
  }
  auto advert = advertise(o, session.kind());
  // `auto` says why it took TCP where verbs could not be tried.
  std::string chosen;
  if (o.transport == TransportKind::automatic) {
    const auto why = why_not_verbs();
    chosen = session.kind() == TransportKind::tcp && why ? " (auto: " + *why + ")" : " (auto)";
  }
  log().info("[{}] connected over {}{}; {}x{} {} ({}) at {} fps, {} bytes a frame, {}", who,
             to_string(session.kind()), chosen, o.width, o.height, name(o.pix_fmt),
             describe(format->colour), to_string(o.rate), format->layout.frame_bytes,
             o.realtime ? (o.connect.size() > 1 ? "real time, dropping where a receiver is behind"
                                                : "real time, dropping when the receiver is behind")
                        : "no drops");
  int exit_code = 0;
  auto failed = [&](const Error& error) {
    std::string said = error.message();
    // The library's words for --require-all, in this program's.
    if (const auto at = said.find(kEveryDestinationRequired); at != std::string::npos) {
      said.replace(at, kEveryDestinationRequired.size(),
                   "--require-all: every destination or none");
    }
    log().error("{}", said);
    exit_code = cli::kExitFailed;
  };
  bool receiver_ended = false;
  // Audio beside the picture, the test tone or the input's tracks, started before the
  // stream so every receiver has them from the first frame. The tone's samples for a frame's
  // period go out just before the frame; an input's as they were decoded with its frames.
  std::optional<TestTone> tone;
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
    const uint64_t until = frame_end * TestTone::kRate * o.rate.den / o.rate.num;
    if (!tone || until <= tone_sent) return {};
    const auto count = static_cast<uint32_t>(until - tone_sent);
    const auto pts = static_cast<int64_t>(tone_sent * 1'000'000'000 / TestTone::kRate);
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
  std::optional<av::CaptureFeed> capture_feed;
  if (capture && exit_code == 0) {  // every track started, the capture's the last
    capture_feed.emplace(*capture, session, tracks.back(), Clock::now(), &stop);
  }
  stats::StatusLine status(fmt::format("[{}]", who), !o.quiet);
  DestinationRates parts;
  const auto start = Clock::now();
  const double period_s = 1.0 / o.rate.value();
  for (uint64_t sequence = 0; exit_code == 0 && !stop; ++sequence) {
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
    const auto woke = Clock::now();
    auto traced = [&](std::string_view outcome, Clock::time_point filled) {
      if (trace) trace->source(sequence, ready, woke, filled, Clock::now(), outcome);
    };
    // The frame's period of the tone, even for a late frame: the sound goes on.
    if (auto ok = send_tone_until(sequence + 1); !ok) {
      failed(ok.error());
      break;
    }
    if (late) {  // dropped and counted
      traced("late", woke);
      continue;
    }
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
    const auto filled_at = Clock::now();
    auto outcome = session.submit(*buffer, {sequence, source.pts_ns(), ready});
    if (outcome) traced(outcome_name(*outcome), filled_at);
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
  // Asked before this end sends its EndOfStream, which the receiver answers with its own.
  receiver_ended = receiver_ended || session.receiver_ended();
  // Also after a bad input frame: the receivers keep every frame sent so far.
  if (auto ok = session.end_stream(); !ok && exit_code == 0) failed(ok.error());
  if (receiver_ended) log().info("[{}] the receiver ended the stream", who);
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
                 to_string(d.state), d.stats.frames, stats::dropped_text(d.stats),
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

}  // namespace rdmavideo::send_cli

int main(int argc, char** argv) {
  using namespace rdmavideo::send_cli;
  // Everything in run_main, option parsing too: nothing thrown leaves main.
  return rdmavideo::cli::run_main("rdmavideo-send", [&] {
    Options options;
    if (auto code = parse_options(argc, argv, options)) return *code;
    rdmavideo::cli::install_stop_signals();
    const auto& stop = rdmavideo::cli::stop_requested();  // SIGINT or SIGTERM arrived
    return options.nmos ? run_nmos(options, stop) : run_stream(options, stop);
  });
}
