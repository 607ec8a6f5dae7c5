// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv: receives streams into rings of frame buffers and writes, records, verifies,
// shows or discards them. Serves --max-streams streams at once; a stream that fails costs
// only itself. Exits once --max-streams streams have ended, or with --serve on SIGINT or
// SIGTERM, always finalising what it wrote and writing its summary.
#include <thread>

#include "cli.hpp"
#include "display.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/media/compositor.hpp"
#include "rdmavideo/nmos.hpp"
#include "rdmavideo/receiver_advert.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "streams.hpp"

namespace rdmavideo::recv_cli {
namespace {

using namespace std::chrono_literals;

const std::atomic<bool>& g_stop = cli::stop_requested();  // SIGINT or SIGTERM arrived

// DNS-SD: the receiver under its name, its TXT following its streams. Where no responder
// runs it says so once and goes on, reached by address.
std::unique_ptr<discovery::ReceiverAdvert> advertise(const Options& o,
                                                     const ReceiverService& service) {
  if (!o.advertise) return nullptr;
  auto advert =
      discovery::ReceiverAdvert::start(service, {o.name, o.transport, o.key, o.max_streams});
  if (!advert) {
    // No responder on this machine is a set-up, not a fault: said once, at info.
    const bool no_responder = advert.error().code() == ErrorCode::unsupported;
    log().log(no_responder ? spdlog::level::info : spdlog::level::warn,
              "rdmavideo-recv: not advertised (DNS-SD): {}; senders connect by address",
              advert.error().message());
    return nullptr;
  }
  log().info("advertised as \"{}\" ({})", (*advert)->name(), discovery::kReceiverType);
  return std::move(*advert);
}

// --nmos: the receiver as an NMOS node, an NMOS receiver per stream it takes at once. An
// activation says which sender a receiver takes; the data path is the service's, as ever
// (a sender connects to the port the receiver's transport parameters show).
Result<std::unique_ptr<nmos::Node>> start_nmos(const Options& o, const ReceiverService& service) {
  nmos::NodeOptions no = *o.nmos;
  no.label = o.name.empty() ? "rdmavideo-recv" : o.name;
  no.seed = "receiver/" + no.label;
  auto node = nmos::Node::start(no);
  if (!node) return Unexpected(node.error());
  const Endpoint listening = service.local_endpoint();
  for (uint32_t i = 0; i < o.max_streams; ++i) {
    const std::string label = o.max_streams == 1 ? no.label : fmt::format("{} {}", no.label, i + 1);
    (*node)->add_receiver(label, listening, o.transport,
                          [label](const nmos::ReceiverActivation& a) -> Result<void> {
                            if (a.enable) {
                              log().info("NMOS: {} takes sender {}", label,
                                         a.sender_id.empty() ? "(unnamed)" : a.sender_id);
                            } else {
                              log().info("NMOS: {} released", label);
                            }
                            return {};
                          });
  }
  log().info("NMOS node at http://{}/x-nmos/, {} receiver{}, {}",
             (*node)->local_endpoint().to_string(), o.max_streams, o.max_streams == 1 ? "" : "s",
             (*node)->registration());
  return std::move(*node);
}

int run(const Options& o) {
  std::atomic<bool> quit{false};  // the display's q, Esc or close
  std::unique_ptr<Display> display;
  if (o.display) {
    auto opened =
        Display::open([&quit] { quit = true; }, static_cast<int64_t>(o.audio_delay_ms * 1e6));
    if (!opened) {
      log().error("rdmavideo-recv: {}", opened.error().message());
      return cli::kExitFailed;
    }
    display = std::move(*opened);
  }

  // --composite: the canvas, its writer and the window are the compositor's; the streams are
  // its tiles.
  std::unique_ptr<media::Compositor> compositor;
  auto canvas_output = std::make_shared<media::StreamOutput>();
  if (o.composite_on) {
    auto started = media::Compositor::start(composite_options(o), display.get(), canvas_output);
    if (!started) {
      log().error("rdmavideo-recv: {}", started.error().message());
      return cli::kExitFailed;
    }
    compositor = std::move(*started);
  }
  std::unique_ptr<Streams> streams;
  auto service = [&]() -> Result<std::unique_ptr<ReceiverService>> {
    streams = std::make_unique<Streams>(o, compositor ? nullptr : display.get(),
                                        std::string(to_string(o.transport)), compositor.get());
    return ReceiverService::start(service_options(o, *streams));
  }();
  if (!service) {
    log().error("rdmavideo-recv: --listen {}: {}", o.listen.to_string(), service.error().message());
    return cli::kExitFailed;
  }
  log().info("listening on {} ({}), up to {} stream{} at once{}, memory budget {}{}",
             (*service)->local_endpoint().to_string(), (*service)->describe(), o.max_streams,
             o.max_streams == 1 ? "" : "s", o.serve ? ", serving until stopped" : "",
             memory::format_bytes((*service)->budget().limit()),
             o.key ? ", senders must prove the key" : "");
  std::unique_ptr<cli::MetricsServer> metrics;
  if (o.metrics) {
    ReceiverService* svc = service->get();
    Streams* st = streams.get();
    auto started = cli::MetricsServer::start(
        *o.metrics, [svc, st] { return render_metrics(*svc, *st); }, "rdmavideo-recv",
        kMetricsConnections);
    if (!started) {
      log().error("rdmavideo-recv: {}", started.error().message());
      return cli::kExitFailed;
    }
    metrics = std::move(*started);
    log().info("metrics at http://{}/metrics", metrics->endpoint().to_string());
  }

  auto advert = advertise(o, **service);
  std::unique_ptr<nmos::Node> node;
  if (o.nmos) {
    auto started = start_nmos(o, **service);
    if (!started) {
      log().error("rdmavideo-recv: {}", started.error().message());
      return cli::kExitFailed;
    }
    node = std::move(*started);
  }

  stats::StatusLine status({}, !o.quiet);
  while (!g_stop && !quit) {
    if (!o.serve && (*service)->ended_streams() >= o.max_streams) break;
    if (compositor && compositor->failure()) break;
    std::this_thread::sleep_for(50ms);
    if (advert) advert->refresh();
    if (status.due()) {
      status.print(streams->status_line((*service)->reports(), (*service)->folded_streams()));
    }
  }
  status.finish();
  (*service)->stop();  // every stream ends, its sender told, its output finalised
  // The canvas goes on while the receiver runs: it ends now, its recording finalised.
  std::optional<Error> canvas_error;
  if (compositor) canvas_error = compositor->finish(*canvas_output);
  nlohmann::json display_json;
  if (display) display_json = finish_display(*display);

  const auto reports = (*service)->reports();
  const auto folded = (*service)->folded_streams();
  log().info("[recv] received {}", streams->total_text(reports, folded));
  // A service stopped as services are (a signal, the window closed) has done its job, whatever
  // its peers did: their failures are in the log, the summary and the metrics. Only frames
  // that failed --verify, a test's verdict, fail it. Without --serve every stream counts.
  // A composite's job is its canvas: tiles come and go (a sender that dies is a no-signal
  // tile), and only the canvas failing fails it.
  const bool ok = compositor ? !canvas_error
                  : o.serve  ? !(o.verify && streams->checksum_failures() > 0)
                             : Streams::all_ok(reports, folded);
  int exit_code = ok ? 0 : cli::kExitFailed;
  auto summary = streams->summary(reports, folded);
  if (display) summary["display"] = display_json;
  if (compositor) {
    std::lock_guard lock(canvas_output->mu);
    summary["canvas"]["output"] = canvas_output->path;
    summary["canvas"]["written"] = canvas_output->written.load();
    if (canvas_error) summary["canvas"]["error"] = canvas_error->message();
  }
  if (!o.stats_json.empty() && !stats::write_json(o.stats_json, summary)) {
    exit_code = cli::kExitFailed;
  }
  return exit_code;
}

}  // namespace
}  // namespace rdmavideo::recv_cli

int main(int argc, char** argv) {
  using namespace rdmavideo::recv_cli;
  // Everything in run_main, option parsing too: nothing thrown leaves main.
  return rdmavideo::cli::run_main("rdmavideo-recv", [&] {
    Options options;
    if (auto code = parse_options(argc, argv, options)) return *code;
    rdmavideo::cli::install_stop_signals();
    // A descriptor per connection, and a reserve for streams: take what the hard limit allows.
    rdmavideo::cli::raise_descriptor_limit();
    return run(options);
  });
}
