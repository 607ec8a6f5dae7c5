// SPDX-License-Identifier: Apache-2.0
// What a sender session's destinations join, and the caller changes with each stream format:
// the format, the pool its frames are in, the staging slots GPU frames are copied through,
// the generation (StreamStarts so far), the lateness bound and the audio tracks, under a lock
// of their own. The condition is told whenever a destination joins, fails, ends or finishes
// a job, which is what the caller's waits (for rings, for queues to empty) wait on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "buffer_pool.hpp"
#include "gpu/stager.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::sender {

struct SessionStream {
  explicit SessionStream(std::shared_ptr<cuda::Device> device) : gpu(std::move(device)) {}

  const std::shared_ptr<cuda::Device> gpu;  // the pool's GPU, for GPU memory; null for host

  mutable std::mutex mu;
  std::condition_variable cv;
  std::optional<proto::StreamStart> format;     // under mu
  std::shared_ptr<detail::BufferPool> pool;     // under mu
  std::shared_ptr<gpu::Stager> stager;          // under mu: made when a destination stages
  std::vector<proto::AudioStart> audio_tracks;  // under mu: in order, stream ids 2, 3, ...
  std::atomic<uint64_t> generation{0};          // changed under mu
  // How late a live frame may still go (SendPolicy::max_lateness, or max_lateness_periods of
  // the current format's frame periods), set with the format.
  std::atomic<std::chrono::steady_clock::rep> lateness{0};

  std::chrono::steady_clock::duration max_lateness() const {
    return std::chrono::steady_clock::duration(lateness.load());
  }
  // The pool as it is now (a new format may replace it); null before the first.
  std::shared_ptr<detail::BufferPool> current_pool() const {
    std::lock_guard lock(mu);
    return pool;
  }
  // Something the waits wait on changed.
  void notify() {
    std::lock_guard lock(mu);
    cv.notify_all();
  }
};

}  // namespace rdmavideo::sender
