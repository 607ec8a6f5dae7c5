// SPDX-License-Identifier: Apache-2.0
#include "streams.hpp"

#include <algorithm>

#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::recv_cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string label(const StreamReport& r) {
  return r.info.name.empty() ? fmt::format("#{}", r.info.number) : printable(r.info.name);
}

stats::StreamFacts facts_of(const StreamReport& r) {
  const auto& f = r.format;
  stats::StreamFacts facts{std::string(to_string(r.info.transport)),
                           f.width,
                           f.height,
                           std::string(name(f.pixel_format)),
                           to_string(f.frame_rate),
                           r.info.peer};
  facts.memory = r.memory;
  facts.gpu_path = r.gpu_path;
  facts.gpu_rdma_writes = r.gpu_rdma_writes;
  return facts;
}

std::string_view state_name(StreamReport::State state) {
  switch (state) {
    case StreamReport::State::running: return "running";
    case StreamReport::State::ended: return "ended";
    case StreamReport::State::failed: return "failed";
  }
  return "unknown";
}

}  // namespace

Streams::Streams(const Options& options, Display* display, std::string listener_kind,
                 media::Compositor* compositor)
    : options_(options),
      writer_options_(writer_options(options)),
      display_(display),
      compositor_(compositor),
      listener_kind_(std::move(listener_kind)) {}

Result<std::unique_ptr<StreamSink>> Streams::make_sink(const StreamInfo& info) {
  auto output = std::make_shared<media::StreamOutput>();
  if (compositor_) {
    auto tile = compositor_->make_sink(info);
    if (!tile) return Unexpected(tile.error());
    std::lock_guard lock(mu_);
    if (outputs_.empty()) process_cpu_at_first_ = stats::process_cpu_seconds();
    outputs_[info.number] = output;
    return tile;
  }
  Display* display = nullptr;
  std::function<void()> release_display;
  {
    std::lock_guard lock(mu_);
    if (outputs_.empty()) process_cpu_at_first_ = stats::process_cpu_seconds();
    outputs_[info.number] = output;
    if (display_ && !display_taken_) {
      display_taken_ = true;
      display = display_;
      release_display = [this] {
        std::lock_guard inner(mu_);
        display_taken_ = false;
      };
      if (options_.max_streams > 1) {
        log().info(
            "[display] shows stream {} (\"{}\"); streams that arrive while it runs are "
            "not shown (one window, no compositor yet)",
            info.number, printable(info.name));
      }
    }
  }
  auto writer = media::StreamWriter::create(writer_options_, info, std::move(output), display,
                                            std::move(release_display));
  if (!writer) {
    if (display) {
      std::lock_guard lock(mu_);
      display_taken_ = false;
    }
    return Unexpected(writer.error());
  }
  return std::unique_ptr<StreamSink>(std::move(*writer));
}

std::shared_ptr<media::StreamOutput> Streams::output_of(uint64_t number) const {
  std::lock_guard lock(mu_);
  auto it = outputs_.find(number);
  return it == outputs_.end() ? nullptr : it->second;
}

void Streams::ended(const StreamReport& r) {
  auto output = output_of(r.info.number);
  stats::TransferStats s = r.stats;
  if (output) s.checksum_failures = output->checksum_failures;
  const double cpu = r.cpu_seconds + (output ? output->cpu_seconds.load() : 0.0);
  std::string written;
  if (output) {
    std::lock_guard lock(output->mu);
    if (!output->path.empty()) written = ", written to " + output->path;
  }
  // How fast its encoder went, as the status line says (a stream shorter than the status
  // line's period has none).
  if (!written.empty()) {
    std::string encoder;
    if (const double speed = output->encode_speed; speed > 0)
      encoder = fmt::format("encoder {:.2f}x real time", speed);
    if (const double gpu_ms = output->encode_gpu_ms; gpu_ms > 0)
      encoder += fmt::format("{}GPU {:.2f} ms a frame", encoder.empty() ? "" : ", ", gpu_ms);
    if (!encoder.empty()) written += " (" + encoder + ")";
  }
  log().info("[recv {} \"{}\"] stream {} {}: {}{}", r.info.peer, printable(r.info.name),
             r.info.number, r.end ? to_string(r.end->how) : "ended",
             stats::summary_text(s, facts_of(r), cpu), written);
}

void Streams::folded(const StreamReport& report) {
  std::lock_guard lock(mu_);
  auto it = outputs_.find(report.info.number);
  if (it == outputs_.end()) return;
  folded_checksum_failures_ += it->second->checksum_failures;
  outputs_.erase(it);
}

uint64_t Streams::checksum_failures() const {
  std::lock_guard lock(mu_);
  uint64_t n = folded_checksum_failures_;
  for (const auto& [number, output] : outputs_) n += output->checksum_failures;
  return n;
}

Result<void> Streams::check_format(const Options& options, const proto::StreamStart& format) {
  if (options.composite_on) {
    // The canvas is what is recorded; a tile needs only to be read by libswscale or the
    // GPU canvas's kernels, which read every format but v210.
    if (format.pixel_format == PixelFormat::v210) {
      return make_error(
          ErrorCode::unsupported,
          "StreamStart.pixel_format v210: a composite cannot scale it (neither FFmpeg nor the GPU "
          "canvas reads v210); send yuv422p10 or uyvy422");
    }
    return {};
  }
  if (!media::Recording::is_recording_path(options.output)) return {};
  return media::Recording::check_format(
      media::recording_options(writer_options(options), options.output), format);
}

stats::TransferStats Streams::totals(const std::vector<StreamReport>& reports,
                                     const FoldedStreams& folded) const {
  stats::TransferStats t;
  bool first = true;
  if (folded.count > 0) {
    t = folded.stats;
    first = false;
  }
  for (const auto& r : reports) {
    t.add(r.stats);
    // The totals span the first stream's start to the last one's end.
    const auto end = r.stats.end == Clock::time_point{} ? Clock::now() : r.stats.end;
    if (first || r.stats.start < t.start) t.start = r.stats.start;
    if (first || end > t.end) t.end = end;
    first = false;
  }
  // Checksum failures are the writers' count, of every stream (folded ones too).
  t.checksum_failures = checksum_failures();
  std::lock_guard lock(mu_);
  t.cpu_start = process_cpu_at_first_;
  t.cpu_end = stats::process_cpu_seconds();
  return t;
}

std::string Streams::status_line(const std::vector<StreamReport>& reports,
                                 const FoldedStreams& folded) {
  if (reports.empty()) return {};
  const auto now = Clock::now();
  const double dt = last_status_ == Clock::time_point{}
                        ? 1.0
                        : std::chrono::duration<double>(now - last_status_).count();
  last_status_ = now;
  uint64_t running = 0, total_frames = folded.stats.frames, dropped = folded.stats.dropped,
           frames_delta = 0, bytes_delta = 0;
  std::string parts;
  for (const auto& r : reports) {
    Rates& last = last_rates_[r.info.number];
    const uint64_t df = r.stats.frames - last.frames, db = r.stats.bytes - last.bytes;
    last = {r.stats.frames, r.stats.bytes};
    total_frames += r.stats.frames;
    dropped += r.stats.dropped;
    frames_delta += df;
    bytes_delta += db;
    if (r.state != StreamReport::State::running) continue;
    ++running;
    std::string part = fmt::format(" | {} {:.1f} fps", label(r), df / dt);
    if (r.stats.dropped) part += fmt::format(" drop {}", r.stats.dropped);
    if (!r.audio.empty()) {
      uint64_t audio_dropped = 0;
      for (const auto& a : r.audio) audio_dropped += a.dropped;
      part += fmt::format(" audio {} av {:+.1f} ms", r.audio.size(), r.audio.front().av_offset_ms);
      if (audio_dropped) part += fmt::format(" adrop {}", audio_dropped);
    }
    if (auto output = output_of(r.info.number)) {
      if (output->checksum_failures)
        part += fmt::format(" bad {}", output->checksum_failures.load());
      if (const double speed = output->encode_speed; speed > 0) {
        part += fmt::format(" enc {:.2f}x", speed);
      }
      if (const double gpu_ms = output->encode_gpu_ms; gpu_ms > 0) {
        part += fmt::format(" gpu {:.2f} ms", gpu_ms);
      }
    }
    parts += part;
  }
  // Rates are kept for the streams listed only: a serving receiver's map does not grow.
  std::erase_if(last_rates_, [&](const auto& entry) {
    return std::none_of(reports.begin(), reports.end(),
                        [&](const StreamReport& r) { return r.info.number == entry.first; });
  });
  std::string canvas;
  if (compositor_) {
    const media::CompositeReport c = compositor_->report();
    const double fps = last_canvas_frames_ ? (c.frames - *last_canvas_frames_) / dt : 0.0;
    last_canvas_frames_ = c.frames;
    canvas = fmt::format(" | canvas{} {} frames {:.1f} fps late {}",
                         c.memory == "host" ? "" : " on " + c.memory, c.frames, fps, c.late);
  }
  return fmt::format(
      "[recv] {} stream{} ({} running): frames {} fps {:.1f} {:.3f} GB/s dropped {}{}{}",
      reports.size(), reports.size() == 1 ? "" : "s", running, total_frames, frames_delta / dt,
      bytes_delta / dt / 1e9, dropped, canvas, parts);
}

nlohmann::json Streams::audio_json(const std::vector<AudioReport>& tracks,
                                   const std::vector<media::StreamOutput::Track>& recorded) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < tracks.size(); ++i) {
    const AudioReport& a = tracks[i];
    const auto& f = a.track.format;
    nlohmann::json t;
    t["track"] = a.track.index;
    t["name"] = f.name;
    t["sample_rate"] = f.sample_rate;
    t["channels"] = f.channels;
    t["sample_format"] = proto::to_string(f.sample_format);
    t["chunks"] = a.chunks;
    t["samples"] = a.samples;
    t["dropped_chunks"] = a.dropped;
    t["dropped_samples"] = a.dropped_samples;
    t["av_offset_ms"] = a.av_offset_ms;
    t["av_offset_max_ms"] = a.av_offset_max_ms;
    t["ended"] = a.ended;
    if (i < recorded.size()) {
      const auto& rec = recorded[i];
      t["recorded"] = rec.recorded;
      const double rate = rec.sample_rate ? rec.sample_rate : 1.0;
      t["gaps_filled_ms"] = static_cast<double>(rec.silence) * 1000.0 / rate;
      t["trimmed_ms"] = static_cast<double>(rec.trimmed) * 1000.0 / rate;
    }
    list.push_back(std::move(t));
  }
  return list;
}

nlohmann::json Streams::summary(const std::vector<StreamReport>& reports,
                                const FoldedStreams& folded) const {
  const auto t = totals(reports, folded);
  const stats::StreamFacts top_facts = reports.empty()
                                           ? stats::StreamFacts{listener_kind_, 0, 0, "", "", ""}
                                           : facts_of(reports.front());
  nlohmann::json out = stats::summary_json(t, top_facts, reports.empty() ? 0.0 : t.cpu_seconds());
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : reports) {
    auto output = output_of(r.info.number);
    stats::TransferStats s = r.stats;
    std::string path, verify;
    double cpu = r.cpu_seconds;
    uint64_t downloads = 0;
    std::vector<media::StreamOutput::Track> recorded;
    if (output) {
      s.checksum_failures = output->checksum_failures;
      cpu += output->cpu_seconds;
      downloads = output->downloads;
      std::lock_guard lock(output->mu);
      path = output->path;
      verify = output->verify;
      recorded = output->audio;
    }
    nlohmann::json entry = stats::summary_json(s, facts_of(r), cpu);
    if (!verify.empty()) entry["verify"] = verify;
    // Frames in GPU memory the receiver's outputs copied to the host (--verify, files, window).
    if (r.memory != "host") entry["downloads"] = downloads;
    entry["number"] = r.info.number;
    entry["name"] = r.info.name;
    entry["output"] = path;
    entry["state"] = state_name(r.state);
    if (r.end && r.end->error) entry["error"] = r.end->error->message();
    if (r.version) entry["protocol_version"] = r.version;
    if (!r.audio.empty()) entry["audio"] = audio_json(r.audio, recorded);
    list.push_back(std::move(entry));
  }
  out["streams"] = std::move(list);
  if (compositor_) out["canvas"] = compositor_->report().json();
  // Streams that ended long before are in the totals, not listed one by one.
  if (folded.count > 0) out["earlier_streams"] = folded.count;
  return out;
}

std::string Streams::total_text(const std::vector<StreamReport>& reports,
                                const FoldedStreams& folded) const {
  const auto t = totals(reports, folded);
  if (reports.empty() && folded.count == 0) return "no stream";
  const uint64_t n = reports.size() + folded.count;
  const stats::StreamFacts facts = reports.empty()
                                       ? stats::StreamFacts{listener_kind_, 0, 0, "", "", ""}
                                       : facts_of(reports.front());
  return fmt::format("{} stream{}: {}", n, n == 1 ? "" : "s",
                     stats::summary_text(t, facts, t.cpu_seconds()));
}

bool Streams::all_ok(const std::vector<StreamReport>& reports, const FoldedStreams& folded) {
  return folded.failed == 0 &&
         std::all_of(reports.begin(), reports.end(),
                     [](const StreamReport& r) { return r.state != StreamReport::State::failed; });
}

ReceiverServiceOptions service_options(const Options& o, Streams& streams) {
  ReceiverServiceOptions so;
  so.transport = o.transport;
  so.listen.endpoint = o.listen;
  so.listen.rdma_device = o.rdma_device;
  so.listen.ring_size = o.ring;
  so.listen.key = o.key;
  so.max_streams = o.max_streams;
  // Without --serve the receiver takes --max-streams streams and exits once they are over.
  so.stream_limit = o.serve ? 0 : o.max_streams;
  so.frames_per_stream = o.frames;
  so.max_memory = o.max_memory;
  so.memory = o.memory;
  so.gpu_path = o.gpu_path;
  if (o.idle_timeout_s) {
    so.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(*o.idle_timeout_s * 1000));
  }
  so.sink_factory = [&streams](const StreamInfo& info) { return streams.make_sink(info); };
  so.on_stream_end = [&streams](const StreamReport& report) { streams.ended(report); };
  so.on_stream_folded = [&streams](const StreamReport& report) { streams.folded(report); };
  so.format_check = [&o](const proto::StreamStart& format) {
    return Streams::check_format(o, format);
  };
  if (o.metrics) so.front_end_descriptors = kMetricsConnections;
  return so;
}

}  // namespace rdmavideo::recv_cli
