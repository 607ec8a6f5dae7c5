// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/audio_file.hpp"

#include <algorithm>
#include <limits>

#include "audio_track.hpp"
#include "av_util.hpp"
#include "muxer_output.hpp"
#include "picture_timeline.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {

struct AudioFile::Impl {
  // Destroyed backwards: the track (its encoder), the muxer, then the file under it.
  MuxerOutput muxer_out;
  UniqueOutputContext output;
  std::unique_ptr<AudioTrack> track;
  std::string path;
  std::string who;  // "audio out.wav"
  std::string name;
  uint32_t rate = 0;
  bool finished = false;
  // The picture's timeline (ns from its first frame), repaired as a recording's is: a step
  // backwards or a jump over AudioTrack::kMostGapNs continues one frame later, and the audio
  // moves with it.
  PictureTimeline timeline{AVRational{1, 1'000'000'000}};  // in ns, from the first frame
  int64_t video_end = 0;                                   // one frame after the last

  AudioTrack::WritePacket writer() {
    return [this](AVPacket* p) -> Result<void> {
      if (const int rc = av_write_frame(output.get(), p); rc < 0) {
        return Unexpected(muxer_out.error_or(av_error(who, "av_write_frame", rc)));
      }
      return {};
    };
  }
};

AudioFile::AudioFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AudioFile::~AudioFile() {
  if (impl_ && !impl_->finished) {
    if (auto ok = finish(); !ok) log().warn("{}", ok.error().message());
  }
}

Result<std::unique_ptr<AudioFile>> AudioFile::open(const std::string& path,
                                                   const proto::AudioStart& format, int abort_fd,
                                                   const std::string& setting) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->who = fmt::format("audio {}", path);
  impl->name = format.name;
  impl->rate = format.sample_rate;
  AVFormatContext* raw = nullptr;
  if (const int rc = avformat_alloc_output_context2(&raw, nullptr, "wav", path.c_str());
      rc < 0 || !raw) {
    return Unexpected(
        av_error(impl->who, "avformat_alloc_output_context2(wav)", rc < 0 ? rc : AVERROR(ENOMEM)));
  }
  impl->output.reset(raw);
  auto track = AudioTrack::open(raw, "wav", format, impl->who);
  if (!track) return Unexpected(track.error());
  impl->track = std::move(*track);
  // A write(2) per 64 KiB (about 0.2 s of 48 kHz stereo): what a receiver killed outright loses.
  if (auto ok = impl->muxer_out.open(path, abort_fd, raw, impl->who, 64 << 10, setting); !ok)
    return Unexpected(ok.error());
  AVDictionary* options = nullptr;
  av_dict_set(&options, "rf64", "auto", 0);  // RF64 past 4 GiB, where WAV's sizes end
  const int rc = avformat_write_header(raw, &options);
  av_dict_free(&options);
  if (rc < 0)
    return Unexpected(impl->muxer_out.error_or(av_error(impl->who, "avformat_write_header", rc)));
  return std::unique_ptr<AudioFile>(new AudioFile(std::move(impl)));
}

Result<void> AudioFile::frame(int64_t pts_ns, Rational rate) {
  auto& s = *impl_;
  if (s.finished) return {};
  // No frame lasts longer than the longest gap (as a recording refuses slower rates).
  const auto period =
      std::min(static_cast<int64_t>(1e9 * rate.den / std::max<uint32_t>(rate.num, 1)),
               AudioTrack::kMostGapNs);
  s.video_end = s.timeline.place(pts_ns, period).at + period;
  return s.track->video_moved(s.video_end, s.writer());
}

Result<void> AudioFile::write(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data) {
  auto& s = *impl_;
  if (s.finished) return make_error(ErrorCode::invalid_argument, "{}: audio after finish", s.who);
  const auto since = s.timeline.audio_ns(pts_ns);
  if (!since)
    return make_error(ErrorCode::invalid_argument, "{}: audio before the first frame", s.who);
  return s.track->write(*since, samples, data, s.video_end, s.writer());
}

void AudioFile::end() { impl_->track->end(); }

Result<void> AudioFile::finish() {
  auto& s = *impl_;
  if (s.finished) return {};
  s.finished = true;
  std::optional<Error> error;
  if (auto ok = s.track->finish(s.video_end, s.writer()); !ok) error = ok.error();
  // The trailer even after an error: what was written stays readable.
  if (const int rc = av_write_trailer(s.output.get()); rc < 0 && !error) {
    error = s.muxer_out.error_or(av_error(s.who, "av_write_trailer", rc));
  }
  if (auto closed = s.muxer_out.close(s.who); closed && !error) error = closed;
  if (error) return Unexpected(*error);
  return {};
}

bool AudioFile::started() const { return impl_->timeline.started(); }

RecordedAudio AudioFile::stats() const {
  const auto& st = impl_->track->stats();
  return {impl_->name, st.samples, st.written, st.silence, st.trimmed, impl_->rate};
}

const std::string& AudioFile::path() const { return impl_->path; }

std::string AudioFile::describe() const { return impl_->track->describe(); }

}  // namespace rdmavideo::av
