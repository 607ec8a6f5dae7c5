// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include <httplib.h>

#include <thread>

#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::receiver {
namespace {

// Latency buckets (seconds) for the histogram: 100 µs to 1 s.
constexpr double kLatencyBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025,  0.05,    0.1,    0.25,  0.5,    1.0};

// A label value: printable (a peer's name), then escaped as the text format asks.
std::string label(const std::string& value) {
  std::string out;
  for (char c : printable(value)) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(std::string_view name, const std::string& labels, double value) {
    text_ += labels.empty() ? fmt::format("{} {}\n", name, value)
                            : fmt::format("{}{{{}}} {}\n", name, labels, value);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

}  // namespace

std::string render_metrics(const ReceiverService& service, const Streams& streams) {
  const auto reports = service.reports();
  const auto refusals = service.refusals();
  const auto& budget = service.budget();
  Writer w;
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
  w.family("rdmavideo_receiver_connections_refused_total", "counter",
           "Connections that ended before they were a stream, by reason.");
  for (const auto& [reason, count] : refusals) {
    w.sample("rdmavideo_receiver_connections_refused_total", fmt::format("reason=\"{}\"", reason),
             static_cast<double>(count));
  }
  w.family("rdmavideo_receiver_memory_budget_bytes", "gauge", "The --max-memory budget.");
  w.sample("rdmavideo_receiver_memory_budget_bytes", "", static_cast<double>(budget.limit()));
  w.family("rdmavideo_receiver_memory_used_bytes", "gauge",
           "Memory held against the budget (rings, verification frames).");
  w.sample("rdmavideo_receiver_memory_used_bytes", "", static_cast<double>(budget.used()));

  struct Stream {
    std::string labels;
    const StreamReport* report;
    std::shared_ptr<StreamOutput> output;
  };
  std::vector<Stream> all;
  for (const auto& r : reports) {
    all.push_back({fmt::format("stream=\"{}\",name=\"{}\",peer=\"{}\",transport=\"{}\"",
                               r.info.number, label(r.info.name), label(r.info.peer),
                               to_string(r.info.transport)),
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
  w.family("rdmavideo_stream_latency_seconds", "histogram",
           "From the sender's write to the frame's arrival (sender and receiver clocks).");
  for (const auto& s : all) {
    const auto& h = s.report->stats.latency;
    for (double le : kLatencyBuckets) {
      w.sample("rdmavideo_stream_latency_seconds_bucket", s.labels + fmt::format(",le=\"{}\"", le),
               static_cast<double>(h.count_at_or_below(static_cast<uint64_t>(le * 1e9))));
    }
    w.sample("rdmavideo_stream_latency_seconds_bucket", s.labels + ",le=\"+Inf\"",
             static_cast<double>(h.count()));
    w.sample("rdmavideo_stream_latency_seconds_sum", s.labels, static_cast<double>(h.sum_ns()) / 1e9);
    w.sample("rdmavideo_stream_latency_seconds_count", s.labels, static_cast<double>(h.count()));
  }
  return w.take();
}

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, Endpoint endpoint)
    : impl_(std::move(impl)), endpoint_(std::move(endpoint)) {}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const Endpoint& endpoint,
                                                            std::function<std::string()> render) {
  auto impl = std::make_unique<Impl>();
  impl->server.Get("/metrics", [render](const httplib::Request&, httplib::Response& response) {
    response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  impl->server.set_read_timeout(5, 0);
  impl->server.set_write_timeout(5, 0);
  Endpoint bound = endpoint;
  if (endpoint.port == 0) {
    const int port = impl->server.bind_to_any_port(endpoint.host);
    if (port <= 0) {
      return make_error(ErrorCode::system, "--metrics {}: cannot listen", endpoint.to_string());
    }
    bound.port = static_cast<uint16_t>(port);
  } else if (!impl->server.bind_to_port(endpoint.host, endpoint.port)) {
    return make_error(ErrorCode::system, "--metrics {}: cannot listen (in use, or not an "
                      "address of this machine)", endpoint.to_string());
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl), bound));
}

}  // namespace rdmavideo::receiver
