// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <list>

#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo::recv_cli {
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
    all.push_back(
        {fmt::format("stream=\"{}\",name=\"{}\",peer=\"{}\",transport=\"{}\"", r.info.number,
                     label(r.info.name), label(r.info.peer), to_string(r.info.transport)),
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
    const auto& h = s.report->stats.latency;
    for (double le : kLatencyBuckets) {
      w.sample("rdmavideo_stream_latency_seconds_bucket", s.labels + fmt::format(",le=\"{}\"", le),
               static_cast<double>(h.count_at_or_below(static_cast<uint64_t>(le * 1e9))));
    }
    w.sample("rdmavideo_stream_latency_seconds_bucket", s.labels + ",le=\"+Inf\"",
             static_cast<double>(h.count()));
    w.sample("rdmavideo_stream_latency_seconds_sum", s.labels,
             static_cast<double>(h.sum_ns()) / 1e9);
    w.sample("rdmavideo_stream_latency_seconds_count", s.labels, static_cast<double>(h.count()));
  }
  // Audio tracks, under their stream's labels (they are no streams of their own).
  auto per_track = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& s : all) {
      for (const auto& a : s.report->audio) {
        w.sample(name,
                 s.labels + fmt::format(",track=\"{}\",track_name=\"{}\"", a.track.index,
                                        label(a.track.format.name)),
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
      const std::string labels = fmt::format("tile=\"{}\",name=\"{}\"", i + 1, label(t.name));
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
      w.sample("rdmavideo_canvas_tile_up",
               fmt::format("tile=\"{}\",name=\"{}\"", i + 1, label(canvas->tiles[i].name)),
               canvas->tiles[i].live ? 1.0 : 0.0);
    }
  }
  return w.take();
}

namespace {

// Limits of the endpoint (docs/operations.md). A scrape is one small GET: a request line and
// headers of a few hundred bytes, no body.
constexpr size_t kConnectionMemory = 32 * 1024;  // per connection: request line and headers
constexpr unsigned kIdleSeconds = 10;            // a connection silent this long is closed
// MHD's own limit is a little higher than ours, so that it takes the newcomer and we shed the
// oldest (MHD would refuse the newcomer instead, which is what a flood wants).
constexpr unsigned kMhdConnectionSlack = 8;

struct DaemonDeleter {
  void operator()(MHD_Daemon* daemon) const noexcept { MHD_stop_daemon(daemon); }
};
using UniqueDaemon = std::unique_ptr<MHD_Daemon, DaemonDeleter>;

struct ResponseDeleter {
  void operator()(MHD_Response* response) const noexcept { MHD_destroy_response(response); }
};

// libmicrohttpd's own messages (a refused request, a connection it gave up on) go to the
// debug log: a hostile client must not be able to fill the log.
void mhd_log(void*, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  std::string_view line(text);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  log().debug("[metrics] {}", line);
}

MHD_Result respond(MHD_Connection* connection, unsigned status, std::string_view body,
                   const char* content_type, bool close) {
  std::unique_ptr<MHD_Response, ResponseDeleter> response(MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY));
  if (!response) return MHD_NO;
  MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
    MHD_add_response_header(response.get(), MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  }
  if (close) MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CONNECTION, "close");
  return MHD_queue_response(connection, status, response.get());
}

}  // namespace

// One libmicrohttpd daemon with one polling thread (epoll where there is one): every
// connection is served by that thread without blocking, so no client holds another's scrape,
// and a stop closes them all at once. Connections are kept in order of arrival; past
// kMostConnections the oldest is shut down.
struct MetricsServer::Impl {
  std::function<std::string()> render;
  // The polling thread only (every callback runs there): open connections, oldest first.
  std::list<std::pair<MHD_Connection*, int>> open;
  uint64_t shed = 0;    // connections shut down to make room
  UniqueDaemon daemon;  // last: stopped (its thread joined) before the rest goes

  static void on_connection(void* cls, MHD_Connection* connection, void**,
                            MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      std::erase_if(self->open, [&](const auto& c) { return c.first == connection; });
      return;
    }
    const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    self->open.emplace_back(connection, info ? info->connect_fd : -1);
    if (self->open.size() <= kMostConnections) return;
    // Full: the oldest goes (it is idle, a slow client, or a scraper that will reconnect).
    // Shutting its socket down makes the polling thread see it end and close it; until then
    // it is no longer counted.
    const auto [oldest, fd] = self->open.front();
    self->open.pop_front();
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
    if (self->shed++ % 100 == 0) {
      log().warn("[metrics] {} connections open (the limit): shedding the oldest ({} so far)",
                 kMostConnections + 1, self->shed);
    }
  }

  static MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url,
                               const char* method, const char*, const char*, size_t*, void**) {
    auto* self = static_cast<Impl*>(cls);
    // A request with a body is answered before any of it is read, and the connection closed.
    const char* length =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char* chunked =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if ((length && std::string_view(length) != "0") || chunked) {
      return respond(connection, MHD_HTTP_CONTENT_TOO_LARGE,
                     "this endpoint takes no request body\n", "text/plain", true);
    }
    const std::string_view m(method);
    if (m != MHD_HTTP_METHOD_GET && m != MHD_HTTP_METHOD_HEAD) {
      return respond(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n", "text/plain",
                     false);
    }
    if (std::string_view(url) != "/metrics") {
      return respond(connection, MHD_HTTP_NOT_FOUND, "rdmavideo-recv: metrics at /metrics\n",
                     "text/plain", false);
    }
    return respond(connection, MHD_HTTP_OK, self->render(),
                   "text/plain; version=0.0.4; charset=utf-8", false);
  }
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, Endpoint endpoint)
    : impl_(std::move(impl)), endpoint_(std::move(endpoint)) {}

// MHD_stop_daemon: the polling thread closes every connection and ends; nothing waits for a
// client (responses are in memory, sockets do not block).
MetricsServer::~MetricsServer() = default;

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const Endpoint& endpoint,
                                                            std::function<std::string()> render) {
  const std::string where = fmt::format("--metrics {}", endpoint.to_string());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (const int rc = getaddrinfo(endpoint.host.empty() ? nullptr : endpoint.host.c_str(),
                                 port.c_str(), &hints, &found);
      rc != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", where,
                      gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  UniqueFd listening;
  int last_errno = 0;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    UniqueFd fd(
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) {
      last_errno = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd.get(), 64) == 0) {
      listening = std::move(fd);
      break;
    }
    last_errno = errno;
  }
  if (!listening) {
    return Unexpected(system_error(fmt::format("{}: cannot listen (in use, or not an address of "
                                               "this machine)",
                                               where),
                                   last_errno));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  getsockname(listening.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  Endpoint local = endpoint;
  local.port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  auto impl = std::make_unique<Impl>();
  impl->render = std::move(render);
  Impl* raw = impl.get();
  impl->daemon.reset(MHD_start_daemon(
      MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, nullptr, nullptr,
      &Impl::on_request, raw, MHD_OPTION_LISTEN_SOCKET, listening.get(),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(kMostConnections + kMhdConnectionSlack),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory, MHD_OPTION_CONNECTION_TIMEOUT,
      kIdleSeconds, MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, raw,
      MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr, MHD_OPTION_END));
  if (!impl->daemon) {
    return make_error(ErrorCode::system, "{}: libmicrohttpd could not start", where);
  }
  (void)listening.release();  // the daemon's now: it closes it when it stops
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl), local));
}

}  // namespace rdmavideo::recv_cli
