// SPDX-License-Identifier: Apache-2.0
// --metrics HOST:PORT: the receiver's counters at http://HOST:PORT/metrics (served by
// cli/metrics_server.hpp). What is exposed (docs/operations.md): per stream frames, bytes,
// drops by cause, checksum failures, a latency histogram, ring occupancy, the encoder's
// real-time factor and whether it is up; the memory budget and its use; connections refused
// by reason.
#pragma once

#include <string>

#include "metrics_server.hpp"
#include "options.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "streams.hpp"

namespace rdmavideo::recv_cli {

/// The exposition text for one scrape.
std::string render_metrics(const ReceiverService& service, const Streams& streams);

}  // namespace rdmavideo::recv_cli
