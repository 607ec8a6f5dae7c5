// SPDX-License-Identifier: Apache-2.0
// The sender's per-frame policy over a SenderConnection: take a credit (waiting for one in
// no-drop mode, dropping the frame in live mode when none is free), stamp the FrameWritten
// with sequence, pts, send time and optional checksum, write it, and count it.
//
// One thread calls send(); the connection and stats are borrowed and must outlive this.
#pragma once

#include <atomic>
#include <chrono>
#include <span>

#include "rdmavideo/stats.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo {

struct SendPolicy {
  bool live = false;      ///< drop when no credit is free, instead of waiting
  bool checksum = false;  ///< put an XXH3-64 of each frame in FrameWritten
};

class FrameSender {
 public:
  enum class Outcome { sent, dropped, receiver_ended, stopped };

  FrameSender(SenderConnection& connection, SendPolicy policy, stats::TransferStats& stats,
              const std::atomic<bool>* stop = nullptr)
      : connection_(connection), policy_(policy), stats_(stats), stop_(stop) {}

  /// Sends one frame. `ready` is when the frame became available (or was due, for a paced
  /// source); latency is measured from it to the end of the write. A no-drop send waits for
  /// a credit until the receiver gives one, ends the stream, dies, or *stop becomes true.
  Result<Outcome> send(std::span<const std::byte> frame, uint64_t sequence, int64_t pts_ns,
                       std::chrono::steady_clock::time_point ready);

 private:
  SenderConnection& connection_;
  SendPolicy policy_;
  stats::TransferStats& stats_;
  const std::atomic<bool>* stop_;
};

}  // namespace rdmavideo
