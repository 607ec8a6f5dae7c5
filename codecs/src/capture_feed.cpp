// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/capture_feed.hpp"

#include "rdmavideo/signals.hpp"

#include <pthread.h>

#include <csignal>
#include <cstdlib>

namespace rdmavideo::av {

CaptureFeed::CaptureFeed(AudioCapture& capture, SenderSession& session, uint32_t track,
                         std::chrono::steady_clock::time_point origin,
                         const std::atomic<bool>* interrupt)
    : capture_(capture), session_(session), track_(track), origin_(origin), interrupt_(interrupt) {
  thread_ = std::thread([this] { run(); });
}

CaptureFeed::~CaptureFeed() { stop(); }

void CaptureFeed::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::optional<Error> CaptureFeed::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void CaptureFeed::run() {
  block_stop_signals();  // SIGINT and SIGTERM are the main thread's
  const double rate = capture_.format().sample_rate;
  std::optional<int64_t> next_ns;  // where the next chunk continues
  while (!stop_ && !(interrupt_ && interrupt_->load())) {
    auto chunk = capture_.read();
    if (!chunk) return fail(chunk.error());
    if (!*chunk) return;  // the input ended: the picture goes on
    const auto& c = **chunk;
    const auto length_ns = static_cast<int64_t>(c.samples / rate * 1e9);
    int64_t pts = 0;
    if (capture_.live()) {
      const int64_t read_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(c.read_at - origin_).count();
      const int64_t estimate = read_ns - length_ns;
      pts = estimate;
      if (next_ns && std::llabs(estimate - *next_ns) <= std::chrono::nanoseconds(kResync).count()) {
        pts = *next_ns;
      } else if (next_ns) {
        ++resyncs_;
      }
    } else {
      pts = static_cast<int64_t>(static_cast<double>(c.first_sample) / rate * 1e9);
      std::this_thread::sleep_until(origin_ + std::chrono::nanoseconds(pts));
    }
    next_ns = pts + length_ns;
    if (auto ok = session_.submit_audio(track_, pts, c.samples, c.data); !ok)
      return fail(ok.error());
  }
}

void CaptureFeed::fail(const Error& error) {
  std::lock_guard lock(mu_);
  error_ = error;
}

}  // namespace rdmavideo::av
