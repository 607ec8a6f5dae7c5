// SPDX-License-Identifier: Apache-2.0
// --trace FILE: one JSON line for every frame the source offered and one for every
// destination's part of it, times in milliseconds on the steady clock from the first frame's
// due time, so a late frame's time can be put where it went: waking for it, filling it,
// waiting for a credit, writing it (docs/live.md).
//
//   {"seq":7,"due":116.667,"woke":116.702,"filled":116.731,"done":131.922,"outcome":"sent"}
//   {"seq":7,"dest":0,"ready":116.667,"taken":116.745,"credited":116.751,"written":131.915}
//
// Lines are written as they happen, from the caller's thread and the destinations' threads,
// each whole (one lock); a destination's line may come before its frame's source line.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo::send_cli {

class FrameTrace {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  /// Creates (or truncates) `path`; the error names it.
  static Result<std::unique_ptr<FrameTrace>> open(const std::string& path);
  ~FrameTrace();
  FrameTrace(const FrameTrace&) = delete;
  FrameTrace& operator=(const FrameTrace&) = delete;

  /// The source's part: when the frame was due, when the pacing woke for it, when it was
  /// filled, when submit() returned (or when it was dropped), and what became of it.
  void source(uint64_t sequence, TimePoint due, TimePoint woke, TimePoint filled, TimePoint done,
              std::string_view outcome);
  /// A destination's part (SenderSessionOptions::on_frame).
  void destination(const FrameTiming& timing);

 private:
  explicit FrameTrace(std::FILE* file) : file_(file) {}
  double ms(TimePoint t);  // under mu_

  std::mutex mu_;
  std::FILE* file_;
  std::optional<TimePoint> zero_;  // the first time seen
};

}  // namespace rdmavideo::send_cli
