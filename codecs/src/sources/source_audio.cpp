// SPDX-License-Identifier: Apache-2.0
#include "source_audio.hpp"

#include <algorithm>

#include "rdmavideo/log.hpp"

namespace rdmavideo::av {

// The audio streams the options choose, each with its decoder and, where the protocol
// does not carry the decoder's format, a conversion to float planar.
Result<SourceAudio> SourceAudio::open(AVFormatContext& input, int picture,
                                      const SourceOptions& options, const std::string& who) {
  SourceAudio audio;
  audio.who_ = who;
  if (options.audio == SourceOptions::Audio::none) return audio;
  std::vector<int> streams;  // the input's audio streams, in order
  for (unsigned i = 0; i < input.nb_streams; ++i) {
    if (input.streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO)
      streams.push_back(static_cast<int>(i));
  }
  std::vector<int> chosen;
  switch (options.audio) {
    case SourceOptions::Audio::none: break;
    case SourceOptions::Audio::first:
      if (!streams.empty()) {
        const int best = av_find_best_stream(&input, AVMEDIA_TYPE_AUDIO, -1, picture, nullptr, 0);
        chosen.push_back(best >= 0 ? best : streams.front());
      }
      break;
    case SourceOptions::Audio::all: chosen = streams; break;
    case SourceOptions::Audio::listed:
      for (int n : options.audio_streams) {
        if (n < 0 || static_cast<size_t>(n) >= streams.size()) {
          return make_error(ErrorCode::invalid_argument,
                            "{}: {} {}: the input has {} audio stream{} (0..{})", who,
                            options.names.audio, n, streams.size(), streams.size() == 1 ? "" : "s",
                            static_cast<int>(streams.size()) - 1);
        }
        chosen.push_back(streams[static_cast<size_t>(n)]);
      }
      break;
  }
  if (chosen.size() > proto::kMaxAudioStreams) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: {} audio streams chosen; a stream carries at most {}", who,
                      chosen.size(), proto::kMaxAudioStreams);
  }
  for (int index : chosen) {
    AVStream* st = input.streams[index];
    const int ordinal =
        static_cast<int>(std::find(streams.begin(), streams.end(), index) - streams.begin());
    Input in;
    in.stream_index = index;
    in.time_base = st->time_base;
    auto opened = AudioDecoder::open(*st, fmt::format("{} audio {}", who, ordinal));
    if (!opened) return Unexpected(opened.error().context("choose others with --audio, or none"));
    in.audio = std::move(*opened);
    proto::AudioStart& f = in.audio.format;
    const AVDictionaryEntry* title = av_dict_get(st->metadata, "title", nullptr, 0);
    const AVDictionaryEntry* language = av_dict_get(st->metadata, "language", nullptr, 0);
    f.name = title ? title->value
             : language && std::string_view(language->value) != "und"
                 ? language->value
                 : fmt::format("audio {}", ordinal);
    in.track = static_cast<uint32_t>(audio.inputs_.size());
    log().info("[{}] audio {}: {} \"{}\"", who, ordinal, in.audio.describe(), f.name);
    audio.inputs_.push_back(std::move(in));
  }
  if (!audio.inputs_.empty()) {
    auto frame = make_frame(who);
    if (!frame) return Unexpected(frame.error());
    audio.frame_ = std::move(*frame);
  }
  return audio;
}

std::vector<proto::AudioStart> SourceAudio::tracks() const {
  std::vector<proto::AudioStart> out;
  for (const auto& in : inputs_) out.push_back(in.audio.format);
  return out;
}

bool SourceAudio::takes(int index) const {
  return std::any_of(inputs_.begin(), inputs_.end(),
                     [&](const Input& in) { return in.stream_index == index; });
}

Result<void> SourceAudio::decode(const AVPacket& packet) {
  for (auto& in : inputs_) {
    if (in.stream_index == packet.stream_index) return decode_one(in, &packet);
  }
  return {};
}

Result<void> SourceAudio::drain() {
  for (auto& in : inputs_) {
    if (auto ok = decode_one(in, nullptr); !ok) return ok;
  }
  return {};
}

void SourceAudio::seeked() {
  for (auto& in : inputs_) avcodec_flush_buffers(in.audio.decoder.get());
}

void SourceAudio::place(int64_t origin_ns, int64_t pass_offset_ns) {
  for (auto& a : pending_) {
    decoded_.push_back(
        {a.track, pass_offset_ns + a.ts_ns - origin_ns, a.samples, std::move(a.data)});
  }
  pending_.clear();
}

std::vector<DecodedAudio> SourceAudio::take() {
  std::vector<DecodedAudio> out;
  out.swap(decoded_);
  return out;
}

// An audio packet: decoded, converted where the protocol does not carry the format, and
// queued until its pass's origin places it.
Result<void> SourceAudio::decode_one(Input& in, const AVPacket* p) {
  int rc = avcodec_send_packet(in.audio.decoder.get(), p);
  if (rc == AVERROR_INVALIDDATA) {
    log().warn("[{}] skipping an audio packet the decoder rejects: {}", who_, error_text(rc));
    return {};
  }
  if (rc < 0 && rc != AVERROR_EOF)
    return Unexpected(av_error(who_, "avcodec_send_packet(audio)", rc));
  for (;;) {
    AVFrame* f = frame_.get();
    rc = avcodec_receive_frame(in.audio.decoder.get(), f);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return {};
    if (rc < 0) return Unexpected(av_error(who_, "avcodec_receive_frame(audio)", rc));
    const int64_t ts = f->best_effort_timestamp;
    const auto count = static_cast<uint32_t>(f->nb_samples);
    auto samples = in.audio.samples(*f, who_);
    av_frame_unref(f);
    if (!samples) return Unexpected(samples.error());
    if (count == 0) continue;
    const int64_t ts_ns =
        ts == AV_NOPTS_VALUE ? 0 : av_rescale_q(ts, in.time_base, AVRational{1, 1000000000});
    pending_.push_back({in.track, ts_ns, count, std::move(*samples)});
  }
}

}  // namespace rdmavideo::av
