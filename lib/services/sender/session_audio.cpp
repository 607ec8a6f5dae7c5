// SPDX-License-Identifier: Apache-2.0
// A sender session's audio: tracks started, samples gathered per track into batches, and
// batches queued to every destination beside the frames.
#include "session_impl.hpp"

namespace rdmavideo {

Result<uint32_t> SenderSession::start_audio(const proto::AudioStart& format) {
  auto& s = *impl_;
  if (auto f = s.failure_now()) return Unexpected(*f);
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
    std::lock_guard lock(s.stream_mu);
    if (s.audio_tracks.size() >= proto::kMaxAudioStreams) {
      return make_error(ErrorCode::invalid_argument, "more than {} audio tracks",
                        proto::kMaxAudioStreams);
    }
    track = static_cast<uint32_t>(s.audio_tracks.size());
    proto::AudioStart m = format;
    m.stream_id = sender::SenderCore::kStreamId + 1 + track;
    m.name = proto::fit_name(format.name);
    s.audio_tracks.push_back(m);
  }
  // Where a destination's ring is up, its AudioStart goes now; elsewhere when the ring is.
  auto start = std::make_shared<AudioJob>();
  start->what = AudioJob::What::start;
  start->track = track;
  if (auto ok = s.queue_audio(std::move(start)); !ok) return Unexpected(ok.error());
  return track;
}

Result<void> SenderSession::Impl::queue_audio(std::shared_ptr<const AudioJob> audio) {
  if (auto f = failure_now()) return Unexpected(*f);
  Job job;
  job.audio = std::move(audio);
  for (auto& d : destinations) {
    if (d->direct) {
      // The caller's own destination, in order with the frames it sends.
      std::lock_guard cl(d->core_mu);
      {
        std::lock_guard lock(d->mu);
        d->busy = true;
      }
      d->send_audio(*job.audio);
      Job done = job;
      d->finish_job(done, Took::sent);
      continue;
    }
    std::lock_guard lock(d->mu);
    if (!d->up) {
      std::lock_guard report_lock(d->report_mu);
      d->report.audio_dropped_samples += job.audio->samples;
      continue;
    }
    // A destination that is behind (a receiver that reads slowly) holds at most
    // kMostQueuedAudio batches of a track (about 2.5 s): the oldest samples go, counted, so
    // the sender's memory stays bounded whatever the receiver does.
    const uint32_t track = job.audio->track;
    const auto of_track = [track](const Job& q) {
      return q.audio && q.audio->track == track && q.audio->what == AudioJob::What::samples;
    };
    if (static_cast<size_t>(std::count_if(d->queue.begin(), d->queue.end(), of_track)) >=
        kMostQueuedAudio) {
      const auto oldest = std::find_if(d->queue.begin(), d->queue.end(), of_track);
      if (oldest != d->queue.end()) {
        std::lock_guard report_lock(d->report_mu);
        d->report.audio_dropped_samples += oldest->audio->samples;
        d->queue.erase(oldest);
      }
    }
    d->queue.push_back(job);
    d->cv.notify_one();
    if (d->core) d->core->channel().wake();
  }
  return {};
}

// The samples gathered for `track` as one batch, laid out in its format; nothing when none.
// Under audio_mu.
std::shared_ptr<AudioJob> SenderSession::Impl::take_gathered(uint32_t track) {
  if (track >= gathered.size() || gathered[track].samples == 0) return nullptr;
  Gathered& g = gathered[track];
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

Result<void> SenderSession::Impl::flush_audio() {
  std::vector<std::shared_ptr<AudioJob>> jobs;
  {
    std::lock_guard lock(audio_mu);
    for (uint32_t t = 0; t < gathered.size(); ++t) {
      if (auto job = take_gathered(t)) jobs.push_back(std::move(job));
    }
  }
  for (auto& job : jobs) {
    if (auto ok = queue_audio(std::move(job)); !ok) return ok;
  }
  return {};
}

Result<void> SenderSession::submit_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                                         std::span<const std::byte> data) {
  auto& s = *impl_;
  proto::AudioStart format;
  {
    std::lock_guard lock(s.stream_mu);
    if (track >= s.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
    format = s.audio_tracks[track];
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
    std::lock_guard lock(s.audio_mu);
    if (s.gathered.size() <= track) s.gathered.resize(track + 1);
    Impl::Gathered& g = s.gathered[track];
    // Samples that do not follow on from those gathered (a gap, a step back) go apart.
    if (g.samples > 0 && std::llabs(pts_ns - (g.pts_ns + ns_of(g.samples))) > 1'000'000) {
      before = s.take_gathered(track);
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
    if (std::chrono::nanoseconds(ns_of(g.samples)) >= kAudioBatch) full = s.take_gathered(track);
  }
  if (before) {
    if (auto ok = s.queue_audio(std::move(before)); !ok) return ok;
  }
  if (full) return s.queue_audio(std::move(full));
  return {};
}

Result<void> SenderSession::end_audio(uint32_t track) {
  auto& s = *impl_;
  {
    std::lock_guard lock(s.stream_mu);
    if (track >= s.audio_tracks.size()) {
      return make_error(ErrorCode::invalid_argument, "audio track {} was not started", track);
    }
  }
  std::shared_ptr<AudioJob> rest;
  {
    std::lock_guard lock(s.audio_mu);
    rest = s.take_gathered(track);
  }
  if (rest) {
    if (auto ok = s.queue_audio(std::move(rest)); !ok) return ok;
  }
  auto job = std::make_shared<AudioJob>();
  job->what = AudioJob::What::end;
  job->track = track;
  return s.queue_audio(std::move(job));
}

}  // namespace rdmavideo
