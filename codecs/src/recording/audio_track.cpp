// SPDX-License-Identifier: Apache-2.0
#include "audio_track.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

#include <algorithm>

#include "rdmavideo/audio_placement.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {
namespace {

// Sample positions within this many of where they are due are taken as due: the sender's pts
// are whole ns, so a sample's place can round either way by one.
constexpr int64_t kToleranceSamples = 2;

std::string layout_name(const AVChannelLayout& layout) {
  char text[128] = {};
  av_channel_layout_describe(&layout, text, sizeof text);
  return text;
}

// Frees what av_samples_alloc_array_and_samples made.
struct SampleBuffer {
  uint8_t** data = nullptr;
  ~SampleBuffer() {
    if (data) av_freep(&data[0]);
    av_freep(&data);
  }
};

}  // namespace

Result<const AVCodec*> AudioTrack::encoder_for(const std::string& muxer,
                                               const proto::AudioStart& format) {
  const char* name = "pcm_s24le";  // what editors expect beside ProRes in .mov; NUT too
  if (muxer == "matroska") name = format.channels <= 8 ? "flac" : "pcm_s24le";
  if (muxer == "mp4") name = "aac";  // FFmpeg 5.1 puts no PCM in mp4
  if (muxer == "yuv4mpegpipe") {
    return make_error(ErrorCode::unsupported,
                      "a .y4m file holds no audio (an audio output of .wav files beside it does)");
  }
  const AVCodec* codec = avcodec_find_encoder_by_name(name);
  if (!codec)
    return make_error(ErrorCode::unsupported, "this FFmpeg has no {} encoder for the audio", name);
  if (codec->ch_layouts) {
    AVChannelLayout layout = layout_of(format);
    bool taken = false;
    for (const AVChannelLayout* l = codec->ch_layouts; l->nb_channels; ++l) {
      taken |= av_channel_layout_compare(l, &layout) == 0;
    }
    if (!taken) {
      std::string known;
      for (const AVChannelLayout* l = codec->ch_layouts; l->nb_channels; ++l) {
        known += (known.empty() ? "" : ", ") + layout_name(*l);
      }
      const std::string have = layout_name(layout);
      av_channel_layout_uninit(&layout);
      return make_error(ErrorCode::unsupported,
                        "audio \"{}\" of {} channels ({}): {}'s {} encoder takes only {}",
                        format.name, format.channels, have, muxer, name, known);
    }
    av_channel_layout_uninit(&layout);
  }
  return codec;
}

Result<std::unique_ptr<AudioTrack>> AudioTrack::open(AVFormatContext* output,
                                                     const std::string& muxer,
                                                     const proto::AudioStart& format,
                                                     std::string who) {
  auto codec = encoder_for(muxer, format);
  if (!codec) return Unexpected(codec.error().context(who));
  std::unique_ptr<AudioTrack> t(new AudioTrack());
  t->who_ = std::move(who);
  t->format_ = format;
  auto encoder = make_codec_context(*codec, t->who_);
  if (!encoder) return Unexpected(encoder.error());
  t->encoder_ = std::move(*encoder);
  AVCodecContext* enc = t->encoder_.get();
  const int rate = static_cast<int>(format.sample_rate);
  enc->sample_rate = rate;
  enc->time_base = AVRational{1, rate};
  enc->ch_layout = layout_of(format);
  if ((*codec)->id == AV_CODEC_ID_AAC) {
    enc->sample_fmt = AV_SAMPLE_FMT_FLTP;
    enc->bit_rate = 128000 * std::max(1, format.channels / 2);
  } else if ((*codec)->id == AV_CODEC_ID_FLAC &&
             proto::bytes_per_sample(format.sample_format) == 2) {
    enc->sample_fmt = AV_SAMPLE_FMT_S16;  // 16 bits in, 16 bits lossless
  } else {
    enc->sample_fmt = AV_SAMPLE_FMT_S32;  // 24 bits kept: pcm_s24le, or FLAC at 24 bits
    enc->bits_per_raw_sample = 24;
  }
  if (output->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (const int rc = avcodec_open2(enc, *codec, nullptr); rc < 0) {
    return Unexpected(av_error(
        t->who_,
        fmt::format("avcodec_open2({} {} Hz, {} channels)", (*codec)->name, rate, format.channels),
        rc));
  }
  t->frame_samples_ = enc->frame_size > 0 ? enc->frame_size : 1024;
  t->stream_ = avformat_new_stream(output, nullptr);
  if (!t->stream_)
    return make_error(ErrorCode::resource, "{}: avformat_new_stream failed", t->who_);
  if (const int rc = avcodec_parameters_from_context(t->stream_->codecpar, enc); rc < 0) {
    return Unexpected(av_error(t->who_, "avcodec_parameters_from_context", rc));
  }
  if (muxer != "mov") t->stream_->codecpar->codec_tag = 0;
  t->stream_->time_base = enc->time_base;
  if (!format.name.empty()) {
    // The track's name: Matroska's Name, and in .mov/.mp4 the handler name editors show.
    av_dict_set(&t->stream_->metadata, "title", format.name.c_str(), 0);
    av_dict_set(&t->stream_->metadata, "handler_name", format.name.c_str(), 0);
  }
  AVChannelLayout in_layout = layout_of(format);
  SwrContext* swr = nullptr;
  const int made = swr_alloc_set_opts2(&swr, &enc->ch_layout, enc->sample_fmt, rate, &in_layout,
                                       to_av(format.sample_format), rate, 0, nullptr);
  t->swr_.reset(swr);
  if (made < 0) return Unexpected(av_error(t->who_, "swr_alloc_set_opts2", made));
  if (const int rc = swr_init(t->swr_.get()); rc < 0)
    return Unexpected(av_error(t->who_, "swr_init", rc));
  t->fifo_.reset(av_audio_fifo_alloc(enc->sample_fmt, format.channels, t->frame_samples_ * 4));
  if (!t->fifo_) return make_error(ErrorCode::resource, "{}: av_audio_fifo_alloc failed", t->who_);
  auto frame = make_frame(t->who_);
  if (!frame) return Unexpected(frame.error());
  t->frame_ = std::move(*frame);
  auto packet = make_packet(t->who_);
  if (!packet) return Unexpected(packet.error());
  t->packet_ = std::move(*packet);
  return t;
}

AudioTrack::~AudioTrack() = default;

std::string AudioTrack::describe() const {
  return fmt::format("{} {} Hz {} \"{}\"", encoder_->codec->name, format_.sample_rate,
                     layout_name(encoder_->ch_layout), format_.name);
}

int64_t AudioTrack::samples_of(int64_t ns) const {
  return av_rescale_rnd(ns, format_.sample_rate, 1'000'000'000, AV_ROUND_NEAR_INF);
}

Result<void> AudioTrack::place(uint32_t samples, const uint8_t* const* planes) {
  SampleBuffer out;
  int linesize = 0;
  const int n = static_cast<int>(samples);
  if (const int rc = av_samples_alloc_array_and_samples(&out.data, &linesize, format_.channels, n,
                                                        encoder_->sample_fmt, 0);
      rc < 0) {
    return Unexpected(av_error(who_, "av_samples_alloc", rc));
  }
  const int converted =
      swr_convert(swr_.get(), out.data, n, const_cast<const uint8_t**>(planes), n);
  if (converted < 0) return Unexpected(av_error(who_, "swr_convert", converted));
  if (const int rc =
          av_audio_fifo_write(fifo_.get(), reinterpret_cast<void**>(out.data), converted);
      rc < converted) {
    return Unexpected(av_error(who_, "av_audio_fifo_write", rc < 0 ? rc : AVERROR(ENOMEM)));
  }
  next_ += converted;
  return {};
}

Result<void> AudioTrack::silence(int64_t samples, int64_t encodable, const WritePacket& out) {
  while (samples > 0) {
    const int n = static_cast<int>(std::min<int64_t>(samples, 8192));
    SampleBuffer quiet;
    int linesize = 0;
    if (const int rc = av_samples_alloc_array_and_samples(&quiet.data, &linesize, format_.channels,
                                                          n, encoder_->sample_fmt, 0);
        rc < 0) {
      return Unexpected(av_error(who_, "av_samples_alloc", rc));
    }
    av_samples_set_silence(quiet.data, 0, n, format_.channels, encoder_->sample_fmt);
    if (const int rc = av_audio_fifo_write(fifo_.get(), reinterpret_cast<void**>(quiet.data), n);
        rc < n) {
      return Unexpected(av_error(who_, "av_audio_fifo_write", rc < 0 ? rc : AVERROR(ENOMEM)));
    }
    next_ += n;
    stats_.silence += static_cast<uint64_t>(n);
    samples -= n;
    if (auto ok = encode_until(std::min(next_, encodable), false, out); !ok) return ok;
  }
  return {};
}

void AudioTrack::jumped(const char* what, int64_t samples) {
  if (stats_.jumps++ == 0) {
    log().warn(
        "[{}] a chunk's pts is {:.3f} s {} where the track is; the track continues in place, "
        "not shifted (the first such discontinuity; all are counted)",
        who_, static_cast<double>(samples) / format_.sample_rate, what);
  }
}

Result<void> AudioTrack::write(int64_t since_origin_ns, uint32_t samples,
                               std::span<const std::byte> data, int64_t video_end_ns,
                               const WritePacket& out) {
  stats_.samples += samples;
  int64_t position = samples_of(since_origin_ns);
  uint32_t skip = 0;
  if (position < 0) {
    // Before the first frame: trimmed.
    skip = static_cast<uint32_t>(std::min<int64_t>(samples, -position));
    position += skip;
  }
  if (skip < samples) {
    const int64_t behind = position - next_;
    // Overlapping more than the chunk holds is a step backwards.
    switch (continuity(behind, kToleranceSamples, samples_of(kMostGapNs), samples - skip - 1)) {
      case Continuity::follows: break;
      case Continuity::gap: {
        // Silence, nothing shifts.
        const int64_t encodable =
            std::max(samples_of(video_end_ns), position - samples_of(kMostLeadNs));
        if (auto ok = silence(behind, encodable, out); !ok) return ok;
        break;
      }
      case Continuity::overlap:
        skip += static_cast<uint32_t>(-behind);  // what was written already stays
        break;
      case Continuity::jump:
        // Continued in place, as the video is.
        jumped(behind > 0 ? "ahead of" : "behind", behind > 0 ? behind : -behind);
        break;
    }
  }
  stats_.trimmed += skip;
  if (skip < samples) {
    const uint8_t* planes[proto::kMaxAudioChannels] = {};
    sample_planes(format_, data, samples, skip, planes);
    if (auto ok = place(samples - skip, planes); !ok) return ok;
  }
  return video_moved(video_end_ns, out);
}

Result<void> AudioTrack::video_moved(int64_t video_end_ns, const WritePacket& out) {
  const int64_t end = samples_of(video_end_ns);
  const int64_t most_lead = samples_of(kMostLeadNs);
  // A track that lags the picture by more than the lead is silent there: a late or missing
  // track never holds the picture back in the muxer's interleaving.
  const int64_t silent_until = ended_ ? end : end - most_lead;
  if (next_ < silent_until) {
    if (auto ok = silence(silent_until - next_, std::max(end, silent_until - most_lead), out); !ok)
      return ok;
  }
  return encode_until(std::max(end, next_ - most_lead), false, out);
}

Result<void> AudioTrack::encode_until(int64_t until, bool at_end, const WritePacket& out) {
  for (;;) {
    const int64_t room = until - encoded_;
    const int available = av_audio_fifo_size(fifo_.get());
    int n = frame_samples_;
    if (available < n || room < n) {
      if (!at_end) return {};
      n = static_cast<int>(std::min<int64_t>(available, room));
      if (n <= 0) return {};
    }
    AVFrame* f = frame_.get();
    av_frame_unref(f);
    f->nb_samples = n;
    f->format = encoder_->sample_fmt;
    f->sample_rate = encoder_->sample_rate;
    if (const int rc = av_channel_layout_copy(&f->ch_layout, &encoder_->ch_layout); rc < 0) {
      return Unexpected(av_error(who_, "av_channel_layout_copy", rc));
    }
    if (const int rc = av_frame_get_buffer(f, 0); rc < 0)
      return Unexpected(av_error(who_, "av_frame_get_buffer", rc));
    if (const int rc = av_audio_fifo_read(fifo_.get(), reinterpret_cast<void**>(f->data), n);
        rc < n) {
      return Unexpected(av_error(who_, "av_audio_fifo_read", rc < 0 ? rc : AVERROR(EIO)));
    }
    f->pts = encoded_;
    encoded_ += n;
    stats_.written += static_cast<uint64_t>(n);
    const int rc = avcodec_send_frame(encoder_.get(), f);
    av_frame_unref(f);
    if (rc < 0) return Unexpected(av_error(who_, "avcodec_send_frame", rc));
    if (auto ok = drain(out); !ok) return ok;
  }
}

Result<void> AudioTrack::drain(const WritePacket& out) {
  for (;;) {
    const int rc = avcodec_receive_packet(encoder_.get(), packet_.get());
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return {};
    if (rc < 0) return Unexpected(av_error(who_, "avcodec_receive_packet", rc));
    av_packet_rescale_ts(packet_.get(), encoder_->time_base, stream_->time_base);
    packet_->stream_index = stream_->index;
    if (auto ok = out(packet_.get()); !ok) return ok;
  }
}

Result<void> AudioTrack::finish(int64_t video_end_ns, const WritePacket& out) {
  const int64_t end = samples_of(video_end_ns);
  if (next_ < end) {
    if (auto ok = silence(end - next_, end, out); !ok) return ok;  // the picture lasts longer: pad
  }
  if (auto ok = encode_until(end, true, out); !ok) return ok;
  const int left = av_audio_fifo_size(fifo_.get());
  if (left > 0) {
    stats_.trimmed += static_cast<uint64_t>(left);  // past the picture's end
    av_audio_fifo_drain(fifo_.get(), left);
  }
  if (const int rc = avcodec_send_frame(encoder_.get(), nullptr); rc < 0 && rc != AVERROR_EOF) {
    return Unexpected(av_error(who_, "avcodec_send_frame(flush)", rc));
  }
  return drain(out);
}

}  // namespace rdmavideo::av
