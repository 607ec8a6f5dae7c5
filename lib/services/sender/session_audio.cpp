// SPDX-License-Identifier: Apache-2.0
#include "session_audio.hpp"

#include <algorithm>
#include <cstdlib>

namespace rdmavideo::sender {

Result<uint32_t> SessionAudio::start(const proto::AudioStart& format) {
  if (auto f = fan_out_.failure_now()) return Unexpected(*f);
  if (format.channels == 0 || format.channels > proto::kMaxAudioChannels) {
    return make_error(ErrorCode::invalid_argument, "audio of {} channels (1..{})", format.channels,
                      proto::kMaxAudioChannels);
  }
  if (format.sample_rate < proto::kMinSampleRate || format.sample_rate > proto::kMaxSampleRate) {
    return make_error(ErrorCode::invalid_argument, "audio at {} Hz ({}..{})", format.sample_rate,
                      proto::kMinSampleRate, proto::kMaxSampleRate);
  }
  uint32_t track = 0;
  {
    std::lock_guard lock(stream_.mu);
    if (stream_.audio_tracks.size() >= proto::kMaxAudioStreams) {
      return make_error(ErrorCode::invalid_argument, "more than {} audio tracks",
                        proto::kMaxAudioStreams);
    }
    track = static_cast<uint32_t>(stream_.audio_tracks.size());
    proto::AudioStart m = format;
    m.stream_id = SenderCore::kStreamId + 1 + track;
    m.name = proto::fit_name(format.name);
    stream_.audio_tracks.push_back(m);
  }
  // Where a destination's ring is up, its AudioStart goes now; elsewhere when the ring is.
  auto start = std::make_shared<AudioJob>();
  start->what = AudioJob::What::start;
  start->track = track;
  if (auto ok = fan_out_.queue_audio(std::move(start)); !ok) return Unexpected(ok.error());
  return track;
}

std::shared_ptr<AudioJob> SessionAudio::take_gathered(uint32_t track) {
  if (track >= gathered_.size() || gathered_[track].samples == 0) return nullptr;
  Gathered& g = gathered_[track];
  auto job = std::make_shared<AudioJob>();
  job->track = track;
  job->pts_ns = g.pts_ns;
  job->samples = g.samples;
  for (auto& channel : g.channels) {
    job->data.insert(job->data.end(), channel.begin(), channel.end());
    channel.clear();
  }
  g.samples = 0;
  return job;
}

Result<void> SessionAudio::flush() {
  std::vector<std::shared_ptr<AudioJob>> jobs;
  {
    std::lock_guard lock(mu_);
    for (uint32_t t = 0; t < gathered_.size(); ++t) {
      if (auto job = take_gathered(t)) jobs.push_back(std::move(job));
    }
  }
  for (auto& job : jobs) {
    if (auto ok = fan_out_.queue_audio(std::move(job)); !ok) return ok;
  }
  return {};
}

Result<void> SessionAudio::submit(uint32_t track, int64_t pts_ns, uint32_t samples,
                                  std::span<const std::byte> data) {
  proto::AudioStart format;
  {
    std::lock_guard lock(stream_.mu);
    if (track >= stream_.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
    format = stream_.audio_tracks[track];
  }
  const uint32_t bps = proto::bytes_per_sample(format.sample_format);
  const uint64_t want = uint64_t{samples} * format.channels * bps;
  if (samples == 0 || data.size() != want) {
    return make_error(ErrorCode::invalid_argument,
                      "{} samples of audio track {} are {} bytes, not {}", samples, track, want,
                      data.size());
  }
  const auto ns_of = [&](uint64_t n) {
    return static_cast<int64_t>(n * 1'000'000'000 / format.sample_rate);
  };
  std::shared_ptr<AudioJob> before, full;
  {
    std::lock_guard lock(mu_);
    if (gathered_.size() <= track) gathered_.resize(track + 1);
    Gathered& g = gathered_[track];
    // Samples that do not follow on from those gathered (a gap, a step back) go apart.
    if (g.samples > 0 && std::llabs(pts_ns - (g.pts_ns + ns_of(g.samples))) > 1'000'000) {
      before = take_gathered(track);
    }
    const bool is_planar = proto::planar(format.sample_format);
    g.channels.resize(is_planar ? format.channels : 1);
    if (g.samples == 0) g.pts_ns = pts_ns;
    if (is_planar) {
      const size_t plane = size_t{samples} * bps;
      for (uint32_t c = 0; c < format.channels; ++c) {
        const auto part = data.subspan(c * plane, plane);
        g.channels[c].insert(g.channels[c].end(), part.begin(), part.end());
      }
    } else {
      g.channels[0].insert(g.channels[0].end(), data.begin(), data.end());
    }
    g.samples += samples;
    if (std::chrono::nanoseconds(ns_of(g.samples)) >= SenderSession::kAudioBatch)
      full = take_gathered(track);
  }
  if (before) {
    if (auto ok = fan_out_.queue_audio(std::move(before)); !ok) return ok;
  }
  if (full) return fan_out_.queue_audio(std::move(full));
  return {};
}

Result<void> SessionAudio::end(uint32_t track) {
  {
    std::lock_guard lock(stream_.mu);
    if (track >= stream_.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
  }
  std::shared_ptr<AudioJob> rest;
  {
    std::lock_guard lock(mu_);
    rest = take_gathered(track);
  }
  if (rest) {
    if (auto ok = fan_out_.queue_audio(std::move(rest)); !ok) return ok;
  }
  auto job = std::make_shared<AudioJob>();
  job->what = AudioJob::What::end;
  job->track = track;
  return fan_out_.queue_audio(std::move(job));
}

}  // namespace rdmavideo::sender
