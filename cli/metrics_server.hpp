// SPDX-License-Identifier: Apache-2.0
// --metrics HOST:PORT, for rdmavideo-recv and rdmavideo-send: a program's counters as
// Prometheus text exposition (format 0.0.4) at http://HOST:PORT/metrics, served by
// libmicrohttpd on one polling thread of its own, with every limit a service left running
// needs: the request line and headers fit in 32 KiB, a request with a body is refused before
// it is read, at most `most_connections` are open (one more sheds the oldest), a silent
// connection is closed after 10 s, and a stop waits for no client. What each program exposes
// is its own (docs/operations.md); MetricsWriter writes it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::cli {

/// A label's value: printable (a peer's name), then escaped as the text format asks.
std::string metric_label(const std::string& value);

/// The exposition text of one scrape, family by family.
class MetricsWriter {
 public:
  /// A family's HELP and TYPE ("counter", "gauge", "histogram"), before its samples.
  void family(const char* name, const char* type, const char* help);
  /// One sample; `labels` is `a="x",b="y"` or empty.
  void sample(std::string_view name, const std::string& labels, double value);
  /// A histogram family's samples (its family() first): cumulative buckets from 100 µs to
  /// 1 s, `+Inf`, the sum in seconds and the count.
  void histogram(std::string_view name, const std::string& labels,
                 const stats::LatencyHistogram& latency);
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

class MetricsServer {
 public:
  /// Listens on `endpoint` (port 0: any free port) and answers GET /metrics with `render()`;
  /// `program` names the program in its other answers. At most `most_connections` open.
  static Result<std::unique_ptr<MetricsServer>> start(const Endpoint& endpoint,
                                                      std::function<std::string()> render,
                                                      std::string program,
                                                      uint32_t most_connections);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  /// The bound address, with the real port.
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl, Endpoint endpoint);
  std::unique_ptr<Impl> impl_;
  Endpoint endpoint_;
};

}  // namespace rdmavideo::cli
