// SPDX-License-Identifier: Apache-2.0
// A stream's live record, shared by the connection that feeds it (its picture and its audio)
// and the service that reports it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::receiver {

/// A stream's live record, shared by the connection that feeds it and the service that
/// reports it.
struct StreamRecord {
  mutable std::mutex mu;
  StreamReport report;  // under mu
  // Used on the stream's connection thread; set and reset under mu, so stop() can abort() it.
  std::unique_ptr<StreamSink> sink;
  /// Slots of the current ring that hold frames not yet let go (ring occupancy), kept by
  /// the connection's credits from any thread.
  std::shared_ptr<std::atomic<uint32_t>> slots_filled = std::make_shared<std::atomic<uint32_t>>(0);
};

}  // namespace rdmavideo::receiver
