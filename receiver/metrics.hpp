// SPDX-License-Identifier: Apache-2.0
// --metrics HOST:PORT: the receiver's counters as Prometheus text exposition (format 0.0.4)
// at http://HOST:PORT/metrics, served by libmicrohttpd on one polling thread of its own, with
// every limit a service left running needs: the request line and headers fit in 32 KiB, a
// request with a body is refused before it is read, at most kMostConnections are open (one more
// sheds the oldest), a silent connection is closed after 10 s, and a stop waits for no client.
// What is exposed
// (docs/operations.md): per stream frames, bytes, drops by cause, checksum failures, a latency
// histogram, ring occupancy, the encoder's real-time factor and whether it is up; the
// memory budget and its use; connections refused by reason.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "options.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "streams.hpp"

namespace rdmavideo::recv_cli {

/// The exposition text for one scrape.
std::string render_metrics(const ReceiverService& service, const Streams& streams);

class MetricsServer {
 public:
  /// Connections open at once; one more sheds the oldest.
  static constexpr uint32_t kMostConnections = kMetricsConnections;
  /// Listens on `endpoint` (port 0: any free port) and answers GET /metrics with `render()`.
  static Result<std::unique_ptr<MetricsServer>> start(const Endpoint& endpoint,
                                                      std::function<std::string()> render);
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

}  // namespace rdmavideo::recv_cli
