// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::recv_cli {
std::string render_metrics(const ReceiverService& service, const Streams& streams) {
  const auto reports = service.reports();
  const auto refusals = service.refusals();
  const auto& budget = service.budget();
  cli::MetricsWriter w;
  uint64_t active = 0;
  for (const auto& r : reports) active += r.state == StreamReport::State::running;
  w.family("rdmavideo_receiver_streams", "gauge", "Streams being received now.");
  w.sample("rdmavideo_receiver_streams", "", static_cast<double>(active));
  w.family("rdmavideo_receiver_streams_admitted_total", "counter", "Streams admitted so far.");
  w.sample("rdmavideo_receiver_streams_admitted_total", "", static_cast<double>(reports.size()));
  w.family("rdmavideo_receiver_connections_in_handshake", "gauge",
           "Connections taken that have not passed their handshake (Hello, and with a key the "
           "proof) yet.");
  w.sample("rdmavideo_receiver_connections_in_handshake", "",
           static_cast<double>(service.connections_in_handshake()));
  w.family("rdmavideo_receiver_connections_pending", "gauge",
           "Connections past their handshake that have not started a stream yet.");
  w.sample("rdmavideo_receiver_connections_pending", "",
           static_cast<double>(service.connections_pending()));
  w.family("rdmavideo_receiver_accept_failures_total", "counter",
           "accept() failures for want of descriptors or memory; the listener backs off.");
  w.sample("rdmavideo_receiver_accept_failures_total", "",
           static_cast<double>(service.accept_failures()));
  w.family("rdmavideo_receiver_connections_refused_total", "counter",
           "Connections that ended before they were a stream, by reason.");
  for (const auto& [reason, count] : refusals) {
    w.sample("rdmavideo_receiver_connections_refused_total", fmt::format("reason=\"{}\"", reason),
             static_cast<double>(count));
  }
  w.family("rdmavideo_receiver_memory_budget_bytes", "gauge", "The --max-memory budget.");
  w.sample("rdmavideo_receiver_memory_budget_bytes", "", static_cast<double>(budget.limit()));
  w.family("rdmavideo_receiver_memory_used_bytes", "gauge",
           "Memory held against the budget (rings, encoders, tiles, verification frames).");
  w.sample("rdmavideo_receiver_memory_used_bytes", "", static_cast<double>(budget.used()));

  struct Stream {
    std::string labels;
    const StreamReport* report;
    std::shared_ptr<media::StreamOutput> output;
  };
  std::vector<Stream> all;
  all.reserve(reports.size());
  for (const auto& r : reports) {
    all.push_back({fmt::format("stream=\"{}\",name=\"{}\",peer=\"{}\",transport=\"{}\"",
                               r.info.number, cli::metric_label(r.info.name),
                               cli::metric_label(r.info.peer), to_string(r.info.transport)),
                   &r, streams.output_of(r.info.number)});
  }
  auto per_stream = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& s : all) w.sample(name, s.labels, static_cast<double>(value(s)));
  };
  per_stream("rdmavideo_stream_up", "gauge", "1 while the stream runs, 0 once it has ended.",
             [](const Stream& s) { return s.report->state == StreamReport::State::running; });
  per_stream("rdmavideo_stream_frames_total", "counter", "Frames received.",
             [](const Stream& s) { return s.report->stats.frames; });
  per_stream("rdmavideo_stream_bytes_total", "counter", "Payload bytes received.",
             [](const Stream& s) { return s.report->stats.bytes; });
  w.family("rdmavideo_stream_dropped_frames_total", "counter",
           "Frames dropped, by cause: 'sender' (gaps in the sender's sequence: a live sender "
           "with no free slot, or its source).");
  for (const auto& s : all) {
    w.sample("rdmavideo_stream_dropped_frames_total", s.labels + ",cause=\"sender\"",
             static_cast<double>(s.report->stats.dropped));
  }
  per_stream("rdmavideo_stream_checksum_failures_total", "counter",
             "Frames that failed --verify (checksum or test pattern).",
             [](const Stream& s) { return s.output ? s.output->checksum_failures.load() : 0; });
  per_stream("rdmavideo_stream_ring_slots", "gauge", "Slots in the stream's ring.",
             [](const Stream& s) { return s.report->ring_slots; });
  per_stream("rdmavideo_stream_ring_slots_filled", "gauge",
             "Slots holding frames the receiver has not let go yet (ring occupancy).",
             [](const Stream& s) { return s.report->slots_filled; });
  per_stream("rdmavideo_stream_encoder_realtime_factor", "gauge",
             "Encoding speed over real time (1 is just in time); 0 when not recording.",
             [](const Stream& s) { return s.output ? s.output->encode_speed.load() : 0.0; });
  per_stream("rdmavideo_stream_encoder_gpu_seconds", "gauge",
             "The GPU's time for the last frame where the encoder runs on one; 0 elsewhere.",
             [](const Stream& s) { return s.output ? s.output->encode_gpu_ms.load() / 1e3 : 0.0; });
  w.family("rdmavideo_stream_latency_seconds", "histogram",
           "From the sender's write to the frame's arrival (sender and receiver clocks).");
  for (const auto& s : all) {
    w.histogram("rdmavideo_stream_latency_seconds", s.labels, s.report->stats.latency);
  }
  // Audio tracks, under their stream's labels (they are no streams of their own).
  auto per_track = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& s : all) {
      for (const auto& a : s.report->audio) {
        w.sample(name,
                 s.labels + fmt::format(",track=\"{}\",track_name=\"{}\"", a.track.index,
                                        cli::metric_label(a.track.format.name)),
                 static_cast<double>(value(a)));
      }
    }
  };
  per_track("rdmavideo_stream_audio_samples_total", "counter",
            "Audio samples (per channel) received.",
            [](const AudioReport& a) { return a.samples; });
  per_track(
      "rdmavideo_stream_audio_dropped_samples_total", "counter",
      "Audio samples dropped: the stream's audio queue full, or an output that holds no audio.",
      [](const AudioReport& a) { return a.dropped_samples; });
  per_track(
      "rdmavideo_stream_audio_offset_seconds", "gauge",
      "The track's pts minus the picture's at the last chunk's arrival (positive: audio ahead).",
      [](const AudioReport& a) { return a.av_offset_ms / 1000.0; });
  if (auto canvas = streams.composite()) {
    w.family("rdmavideo_canvas_frames_total", "counter",
             "Composite canvas frames handed to its output.");
    w.sample("rdmavideo_canvas_frames_total", "", static_cast<double>(canvas->frames));
    w.family(
        "rdmavideo_canvas_late_total", "counter",
        "Canvas ticks skipped: its output was behind, or composing took longer than a period.");
    w.sample("rdmavideo_canvas_late_total", "", static_cast<double>(canvas->late));
    w.family("rdmavideo_canvas_info", "gauge",
             "The composite's canvas: its size, format and where it is (memory).");
    w.sample("rdmavideo_canvas_info",
             fmt::format("width=\"{}\",height=\"{}\",pix_fmt=\"{}\",memory=\"{}\"", canvas->width,
                         canvas->height, canvas->pix_fmt, canvas->memory),
             1.0);
    w.family("rdmavideo_canvas_tile_frames_total", "counter",
             "Each tile's frames: 'composited' into the canvas, 'sampled' (let go unseen), "
             "'repeats' (canvas "
             "frames that showed its previous frame again), 'uploaded' (from host memory to a "
             "canvas in GPU "
             "memory), 'downloaded' (from GPU memory to a canvas in host memory).");
    for (size_t i = 0; i < canvas->tiles.size(); ++i) {
      const auto& t = canvas->tiles[i];
      const std::string labels =
          fmt::format("tile=\"{}\",name=\"{}\"", i + 1, cli::metric_label(t.name));
      w.sample("rdmavideo_canvas_tile_frames_total", labels + ",what=\"composited\"",
               static_cast<double>(t.composited));
      w.sample("rdmavideo_canvas_tile_frames_total", labels + ",what=\"sampled\"",
               static_cast<double>(t.sampled));
      w.sample("rdmavideo_canvas_tile_frames_total", labels + ",what=\"repeats\"",
               static_cast<double>(t.repeats));
      w.sample("rdmavideo_canvas_tile_frames_total", labels + ",what=\"uploaded\"",
               static_cast<double>(t.uploads));
      w.sample("rdmavideo_canvas_tile_frames_total", labels + ",what=\"downloaded\"",
               static_cast<double>(t.downloads));
    }
    w.family("rdmavideo_canvas_tile_up", "gauge",
             "1 while a stream is in the tile, 0 while it shows no signal.");
    for (size_t i = 0; i < canvas->tiles.size(); ++i) {
      w.sample(
          "rdmavideo_canvas_tile_up",
          fmt::format("tile=\"{}\",name=\"{}\"", i + 1, cli::metric_label(canvas->tiles[i].name)),
          canvas->tiles[i].live ? 1.0 : 0.0);
    }
  }
  return w.take();
}

}  // namespace rdmavideo::recv_cli
