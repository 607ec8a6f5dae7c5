// SPDX-License-Identifier: Apache-2.0
// A sender session's audio: tracks started, samples gathered per track into batches of
// kAudioBatch, and batches queued to every destination beside the frames (FanOut).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "fan_out.hpp"
#include "jobs.hpp"
#include "session_stream.hpp"

namespace rdmavideo::sender {

class SessionAudio {
 public:
  SessionAudio(SessionStream& stream, FanOut& fan_out) : stream_(stream), fan_out_(fan_out) {}

  Result<uint32_t> start(const proto::AudioStart& format);
  Result<void> submit(uint32_t track, int64_t pts_ns, uint32_t samples,
                      std::span<const std::byte> data);
  Result<void> end(uint32_t track);
  // Every track's gathered samples go now (the stream ends).
  Result<void> flush();

 private:
  // The samples gathered for `track` as one batch, laid out in its format; nothing when
  // none. Under mu_.
  std::shared_ptr<AudioJob> take_gathered(uint32_t track);

  SessionStream& stream_;
  FanOut& fan_out_;
  // Samples gathered per track before they go, under mu_: planar tracks keep each channel's
  // samples apart until the batch is laid out.
  struct Gathered {
    int64_t pts_ns = 0;
    uint32_t samples = 0;
    std::vector<std::vector<std::byte>> channels;  // planar: one per channel; else one
  };
  std::mutex mu_;
  std::vector<Gathered> gathered_;  // by track
};

}  // namespace rdmavideo::sender
