// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo::av {

/// An audio input's samples into one track of a sender session, on a thread of their own,
/// their clock mapped onto the picture's, whose pts 0 is `origin`. A capture device's chunk is
/// placed by when it was read, less its own length (its first sample was captured that long
/// before), and kept continuous with the chunk before while the two agree within kResync; an
/// input that is no device (lavfi, a file) is placed by its sample count and paced in real
/// time. It stops at the input's end, on stop(), or once `*interrupt` is set.
class CaptureFeed {
 public:
  static constexpr std::chrono::milliseconds kResync{20};

  CaptureFeed(AudioCapture& capture, SenderSession& session, uint32_t track,
              std::chrono::steady_clock::time_point origin,
              const std::atomic<bool>* interrupt = nullptr);
  ~CaptureFeed();
  CaptureFeed(const CaptureFeed&) = delete;
  CaptureFeed& operator=(const CaptureFeed&) = delete;
  void stop();
  /// What ended it early: the input's error, or the session's.
  std::optional<Error> error() const;
  /// Times a device's chunk was placed anew, its clock and the picture's having parted.
  uint64_t resyncs() const { return resyncs_; }

 private:
  void run();
  void fail(const Error& error);

  AudioCapture& capture_;
  SenderSession& session_;
  uint32_t track_;
  std::chrono::steady_clock::time_point origin_;
  const std::atomic<bool>* interrupt_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> resyncs_{0};
  mutable std::mutex mu_;
  std::optional<Error> error_;
  std::thread thread_;
};

}  // namespace rdmavideo::av
