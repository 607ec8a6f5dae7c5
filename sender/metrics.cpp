// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include "metrics_server.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::send_cli {
namespace {

// Connections the endpoint keeps open at once (a scraper or two, and a person's curl).
constexpr uint32_t kMostConnections = 16;

// Samples of `family` for each drop cause, under `labels`.
void drop_samples(cli::MetricsWriter& w, const char* family, const std::string& labels,
                  const stats::TransferStats& s) {
  for (size_t i = 0; i < stats::kDropCauses; ++i) {
    w.sample(family,
             fmt::format("{}{}cause=\"{}\"", labels, labels.empty() ? "" : ",",
                         stats::to_string(static_cast<stats::DropCause>(i))),
             static_cast<double>(s.drops[i]));
  }
}

class Served final : public MetricsEndpoint {
 public:
  explicit Served(std::unique_ptr<cli::MetricsServer> server) : server_(std::move(server)) {}

 private:
  std::unique_ptr<cli::MetricsServer> server_;
};

}  // namespace

std::string render_metrics(const SenderSession& session, const std::string& name) {
  const auto total = session.stats();
  const auto destinations = session.destinations();
  cli::MetricsWriter w;
  const std::string source = fmt::format("name=\"{}\"", cli::metric_label(name));
  w.family("rdmavideo_sender_frames_total", "counter",
           "Frames the source offered that at least one receiver got.");
  w.sample("rdmavideo_sender_frames_total", source, static_cast<double>(total.frames));
  w.family("rdmavideo_sender_dropped_frames_total", "counter",
           "Frames no receiver got, by cause: 'late' (due longer ago than the lateness bound "
           "when the sender came to it), 'no_credit' (no free slot in the receiver's ring within "
           "the bound), 'behind' (frames still queued for a receiver), 'not_up' (no connection), "
           "'no_buffer' (no free buffer in the pool, or the source skipped it).");
  drop_samples(w, "rdmavideo_sender_dropped_frames_total", source, total);

  std::vector<std::string> labels;
  labels.reserve(destinations.size());
  for (const auto& d : destinations) {
    labels.push_back(fmt::format("{},destination=\"{}\",transport=\"{}\"", source,
                                 cli::metric_label(d.endpoint.to_string()),
                                 d.transport.empty() ? "none" : d.transport));
  }
  auto per_destination = [&](const char* family, const char* type, const char* help, auto value) {
    w.family(family, type, help);
    for (size_t i = 0; i < destinations.size(); ++i) {
      w.sample(family, labels[i], static_cast<double>(value(destinations[i])));
    }
  };
  per_destination(
      "rdmavideo_destination_up", "gauge",
      "1 while the receiver takes the stream, 0 while connecting, ended or failed.",
      [](const DestinationReport& d) { return d.state == DestinationReport::State::streaming; });
  per_destination("rdmavideo_destination_frames_total", "counter", "Frames sent to it.",
                  [](const DestinationReport& d) { return d.stats.frames; });
  per_destination("rdmavideo_destination_bytes_total", "counter", "Payload bytes sent to it.",
                  [](const DestinationReport& d) { return d.stats.bytes; });
  w.family("rdmavideo_destination_dropped_frames_total", "counter",
           "Frames it did not get, by cause (as rdmavideo_sender_dropped_frames_total).");
  for (size_t i = 0; i < destinations.size(); ++i) {
    drop_samples(w, "rdmavideo_destination_dropped_frames_total", labels[i], destinations[i].stats);
  }
  per_destination("rdmavideo_destination_connections_total", "counter",
                  "Connections made to it (more than 1 after a reconnect).",
                  [](const DestinationReport& d) { return d.connections; });
  per_destination("rdmavideo_destination_audio_samples_total", "counter",
                  "Audio samples per channel sent to it.",
                  [](const DestinationReport& d) { return d.audio_samples; });
  per_destination("rdmavideo_destination_audio_dropped_samples_total", "counter",
                  "Audio samples per channel not sent to it (not up, or its receiver takes none).",
                  [](const DestinationReport& d) { return d.audio_dropped_samples; });
  w.family("rdmavideo_destination_latency_seconds", "histogram",
           "From the frame being due (or ready) to the end of its write.");
  for (size_t i = 0; i < destinations.size(); ++i) {
    w.histogram("rdmavideo_destination_latency_seconds", labels[i], destinations[i].stats.latency);
  }
  return w.take();
}

Result<std::unique_ptr<MetricsEndpoint>> serve_metrics(const Endpoint& at,
                                                       const SenderSession& session,
                                                       std::string name) {
  const SenderSession* s = &session;
  auto server = cli::MetricsServer::start(
      at, [s, name = std::move(name)] { return render_metrics(*s, name); }, "rdmavideo-send",
      kMostConnections);
  if (!server) return Unexpected(server.error());
  log().info("metrics at http://{}/metrics", (*server)->endpoint().to_string());
  return std::unique_ptr<MetricsEndpoint>(std::make_unique<Served>(std::move(*server)));
}

}  // namespace rdmavideo::send_cli
