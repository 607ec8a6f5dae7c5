// SPDX-License-Identifier: Apache-2.0
#include "receiver/stream_audio.hpp"

#include <cmath>

#include "proto/checks.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::receiver {

// What a stream's sink holds of its audio, each packet counted as its samples and what it
// costs beside them: bounded by the reservation made from the memory budget when the first
// track started; packets give their bytes back as they are dropped.
struct StreamAudio::Queue {
  std::atomic<uint64_t> bytes{0};
  uint64_t limit = kAudioQueueBytes;
  std::shared_ptr<const void> reservation;

  // A claim on `n` bytes of the queue, or null when they do not fit.
  static std::shared_ptr<const void> claim(const std::shared_ptr<Queue>& queue, uint64_t n) {
    uint64_t had = queue->bytes.load();
    do {
      if (had + n > queue->limit) return nullptr;
    } while (!queue->bytes.compare_exchange_weak(had, had + n));
    return std::shared_ptr<const void>(queue.get(), [queue, n](const void*) { queue->bytes -= n; });
  }
};

Result<void> StreamAudio::start(const proto::AudioStart& m,
                                const std::optional<proto::StreamStart>& video, uint16_t version,
                                const std::shared_ptr<memory::Budget>& budget, std::string_view who,
                                StreamSink* sink, StreamRecord* record) {
  if (auto ok = proto::check_audio_start(m, video, tracks_.size(), tracks_.contains(m.stream_id),
                                         version);
      !ok) {
    return ok;
  }
  // Tracks are numbered in the order they started, ended ones included.
  AudioTrack track{static_cast<uint32_t>(tracks_.size()), m};
  tracks_.emplace(m.stream_id, Track{track, false});
  if (!queue_) {
    // The stream's first track: its queue comes out of the memory budget. Without room the
    // audio is dropped and counted; the picture goes on.
    queue_ = std::make_shared<Queue>();
    if (budget) {
      auto reservation = budget->reserve(kAudioQueueBytes, "the audio queue of a stream");
      if (reservation) {
        queue_->reservation = std::move(*reservation);
      } else {
        queue_->limit = 0;
        log().warn("[{}] no audio: {}", who, reservation.error().message());
      }
    }
  }
  {
    std::lock_guard lock(record->mu);
    record->report.audio.push_back(AudioReport{track});
  }
  log().info("[{}] audio track {} (stream {}): \"{}\" {} Hz, {} channel{}, {}", who, track.index,
             m.stream_id, printable(m.name), m.sample_rate, m.channels, m.channels == 1 ? "" : "s",
             proto::to_string(m.sample_format));
  sink->audio_started(track);
  return {};
}

Result<void> StreamAudio::chunk(proto::AudioChunk& m, StreamSink* sink, StreamRecord* record) {
  auto it = tracks_.find(m.stream_id);
  const bool running = it != tracks_.end() && !it->second.ended;
  if (auto ok = proto::check_audio_chunk(m, running ? &it->second.track.format : nullptr); !ok)
    return ok;
  const uint32_t index = it->second.track.index;
  // How far the audio travels from the picture: its pts against the video's, both moved on
  // to now (the video's by the time since its last frame arrived).
  double offset_ms = 0;
  if (video_) {
    const auto since =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - last_video_arrival_);
    // In doubles: a peer's pts may be anything, and their difference in integers overflows.
    offset_ms = (static_cast<double>(m.pts_ns) - static_cast<double>(last_video_pts_) -
                 static_cast<double>(since.count())) /
                1e6;
  }
  const uint32_t samples = m.samples;
  auto queued = Queue::claim(queue_, m.data.size() + kAudioPacketOverheadBytes);
  bool taken = false;
  if (queued) {
    taken =
        sink->audio(AudioPacket{index, m.pts_ns, samples, std::move(m.data), std::move(queued)});
  }
  std::lock_guard lock(record->mu);
  AudioReport& r = record->report.audio[index];
  ++r.chunks;
  r.samples += samples;
  if (!taken) {
    ++r.dropped;
    r.dropped_samples += samples;
  }
  if (video_) {
    r.av_offset_ms = offset_ms;
    if (std::abs(offset_ms) > std::abs(r.av_offset_max_ms)) r.av_offset_max_ms = offset_ms;
  }
  return {};
}

Result<void> StreamAudio::end(const proto::AudioEnd& m, StreamSink* sink, StreamRecord* record) {
  auto it = tracks_.find(m.stream_id);
  if (it == tracks_.end() || it->second.ended) {
    return make_error(ErrorCode::protocol, "AudioEnd.stream_id {} names no running audio stream",
                      m.stream_id);
  }
  it->second.ended = true;
  {
    std::lock_guard lock(record->mu);
    record->report.audio[it->second.track.index].ended = true;
  }
  sink->audio_ended(it->second.track.index);
  return {};
}

void StreamAudio::video_frame(int64_t pts_ns, Clock::time_point arrival) {
  video_ = true;
  last_video_pts_ = pts_ns;
  last_video_arrival_ = arrival;
}

void StreamAudio::release_queue() { queue_.reset(); }

}  // namespace rdmavideo::receiver
