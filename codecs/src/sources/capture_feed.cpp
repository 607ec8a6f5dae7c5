// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/capture_feed.hpp"

#include "rdmavideo/audio_placement.hpp"
#include "rdmavideo/signals.hpp"

#include <thread>

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
  // Kept continuous while a device's reads agree with it within kResync; the receiver trims
  // what comes before the first frame.
  AudioPlacement placement(capture_.format().sample_rate, kResync, false);
  while (!stop_ && !(interrupt_ && interrupt_->load())) {
    auto chunk = capture_.read();
    if (!chunk) return fail(chunk.error());
    if (!*chunk) return;  // the input ended: the picture goes on
    const auto& c = **chunk;
    int64_t at = 0;
    if (capture_.live()) {
      // Its first sample was captured its own length before it was read.
      const auto length_ns = static_cast<int64_t>(c.samples / rate * 1e9);
      at = std::chrono::duration_cast<std::chrono::nanoseconds>(c.read_at - origin_).count() -
           length_ns;
    } else {
      at = static_cast<int64_t>(static_cast<double>(c.first_sample) / rate * 1e9);
    }
    const auto placed = placement.place(at, c.samples);
    resyncs_ = placement.resyncs();
    const int64_t pts = placed ? placed->pts_ns : at;
    if (!capture_.live()) std::this_thread::sleep_until(origin_ + std::chrono::nanoseconds(pts));
    if (auto ok = session_.submit_audio(track_, pts, c.samples, c.data); !ok)
      return fail(ok.error());
  }
}

void CaptureFeed::fail(const Error& error) {
  std::lock_guard lock(mu_);
  error_ = error;
}

}  // namespace rdmavideo::av
