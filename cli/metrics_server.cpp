// SPDX-License-Identifier: Apache-2.0
#include "metrics_server.hpp"

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

namespace rdmavideo::cli {

std::string metric_label(const std::string& value) {
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

void MetricsWriter::family(const char* name, const char* type, const char* help) {
  text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void MetricsWriter::histogram(std::string_view name, const std::string& labels,
                              const stats::LatencyHistogram& h) {
  // Buckets (seconds): 100 µs to 1 s.
  static constexpr double kBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
  const std::string sep = labels.empty() ? "" : ",";
  for (double le : kBuckets) {
    sample(fmt::format("{}_bucket", name), labels + sep + fmt::format("le=\"{}\"", le),
           static_cast<double>(h.count_at_or_below(static_cast<uint64_t>(le * 1e9))));
  }
  sample(fmt::format("{}_bucket", name), labels + sep + "le=\"+Inf\"",
         static_cast<double>(h.count()));
  sample(fmt::format("{}_sum", name), labels, static_cast<double>(h.sum_ns()) / 1e9);
  sample(fmt::format("{}_count", name), labels, static_cast<double>(h.count()));
}

void MetricsWriter::sample(std::string_view name, const std::string& labels, double value) {
  text_ += labels.empty() ? fmt::format("{} {}\n", name, value)
                          : fmt::format("{}{{{}}} {}\n", name, labels, value);
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
// `most_connections` the oldest is shut down.
struct MetricsServer::Impl {
  std::function<std::string()> render;
  std::string program;  // for the 404's text
  uint32_t most = 0;    // connections open at once; one more sheds the oldest
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
    if (self->open.size() <= self->most) return;
    // Full: the oldest goes (it is idle, a slow client, or a scraper that will reconnect).
    // Shutting its socket down makes the polling thread see it end and close it; until then
    // it is no longer counted.
    const auto [oldest, fd] = self->open.front();
    self->open.pop_front();
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
    if (self->shed++ % 100 == 0) {
      log().warn("[metrics] {} connections open (the limit): shedding the oldest ({} so far)",
                 self->most + 1, self->shed);
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
      return respond(connection, MHD_HTTP_NOT_FOUND, self->program + ": metrics at /metrics\n",
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
                                                            std::function<std::string()> render,
                                                            std::string program,
                                                            uint32_t most_connections) {
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
  impl->program = std::move(program);
  impl->most = most_connections;
  Impl* raw = impl.get();
  impl->daemon.reset(MHD_start_daemon(
      MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, nullptr, nullptr,
      &Impl::on_request, raw, MHD_OPTION_LISTEN_SOCKET, listening.get(),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(most_connections + kMhdConnectionSlack),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory, MHD_OPTION_CONNECTION_TIMEOUT,
      kIdleSeconds, MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, raw,
      MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr, MHD_OPTION_END));
  if (!impl->daemon) {
    return make_error(ErrorCode::system, "{}: libmicrohttpd could not start", where);
  }
  (void)listening.release();  // the daemon's now: it closes it when it stops
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl), local));
}

}  // namespace rdmavideo::cli
