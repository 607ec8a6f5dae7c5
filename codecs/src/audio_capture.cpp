// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/audio_capture.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>
}

#include <cstring>
#include <thread>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {
namespace {

std::optional<proto::SampleFormat> carried(AVSampleFormat format) {
  switch (format) {
    case AV_SAMPLE_FMT_S16: return proto::SampleFormat::s16;
    case AV_SAMPLE_FMT_S32: return proto::SampleFormat::s32;
    case AV_SAMPLE_FMT_FLT: return proto::SampleFormat::f32;
    case AV_SAMPLE_FMT_S16P: return proto::SampleFormat::s16p;
    case AV_SAMPLE_FMT_S32P: return proto::SampleFormat::s32p;
    case AV_SAMPLE_FMT_FLTP: return proto::SampleFormat::f32p;
    default: return std::nullopt;
  }
}

struct SwrDeleter {
  void operator()(SwrContext* swr) const noexcept { swr_free(&swr); }
};

bool is_device(const AVInputFormat* format) {
  if (!format || !format->priv_class) return false;
  const AVClassCategory category = format->priv_class->category;
  return category == AV_CLASS_CATEGORY_DEVICE_AUDIO_INPUT || category == AV_CLASS_CATEGORY_DEVICE_INPUT;
}

}  // namespace

struct AudioCapture::Impl {
  UniqueInputContext input;
  UniqueCodecContext decoder;
  std::unique_ptr<SwrContext, SwrDeleter> swr;
  UniquePacket packet;
  UniqueFrame frame;
  int stream_index = -1;
  proto::AudioStart format;
  std::string who;
  bool live = false;
  bool draining = false;
  uint64_t samples = 0;  // given so far
};

AudioCapture::AudioCapture(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioCapture::~AudioCapture() = default;

Result<std::unique_ptr<AudioCapture>> AudioCapture::open(const std::string& url, const std::string& format_name) {
  register_devices();
  auto impl = std::make_unique<Impl>();
  impl->who = format_name.empty() ? fmt::format("--audio-i {}", url)
                                  : fmt::format("--audio-f {} --audio-i {}", format_name, url);
  const AVInputFormat* input_format = nullptr;
  if (!format_name.empty()) {
    input_format = av_find_input_format(format_name.c_str());
    if (!input_format) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: --audio-f {} is not an input format or device libavformat/libavdevice know "
                        "(see ffmpeg -devices: alsa, pulse, lavfi, ...)",
                        impl->who, format_name);
    }
  }
  AVFormatContext* raw = nullptr;
  if (const int rc = avformat_open_input(&raw, url.c_str(), input_format, nullptr); rc < 0) {
    return Unexpected(av_error(impl->who, "avformat_open_input", rc));
  }
  impl->input.reset(raw);
  if (const int rc = avformat_find_stream_info(raw, nullptr); rc < 0) {
    return Unexpected(av_error(impl->who, "avformat_find_stream_info", rc));
  }
  const AVCodec* codec = nullptr;
  impl->stream_index = av_find_best_stream(raw, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
  if (impl->stream_index < 0) {
    return Unexpected(av_error(impl->who, "av_find_best_stream(audio)", impl->stream_index)
                          .context("no decodable audio stream"));
  }
  AVStream* st = raw->streams[impl->stream_index];
  auto made = make_codec_context(codec, impl->who);
  if (!made) return Unexpected(made.error());
  impl->decoder = std::move(*made);
  AVCodecContext* dec = impl->decoder.get();
  if (const int rc = avcodec_parameters_to_context(dec, st->codecpar); rc < 0) {
    return Unexpected(av_error(impl->who, "avcodec_parameters_to_context", rc));
  }
  dec->pkt_timebase = st->time_base;
  if (const int rc = avcodec_open2(dec, codec, nullptr); rc < 0) {
    return Unexpected(av_error(impl->who, fmt::format("avcodec_open2({})", codec->name), rc));
  }
  const int channels = dec->ch_layout.nb_channels;
  if (channels < 1 || channels > static_cast<int>(proto::kMaxAudioChannels) ||
      dec->sample_rate < static_cast<int>(proto::kMinSampleRate) ||
      dec->sample_rate > static_cast<int>(proto::kMaxSampleRate)) {
    return make_error(ErrorCode::unsupported,
                      "{}: {} channels at {} Hz; the protocol carries 1 to {} channels at {} to {} Hz", impl->who,
                      channels, dec->sample_rate, proto::kMaxAudioChannels, proto::kMinSampleRate,
                      proto::kMaxSampleRate);
  }
  proto::AudioStart& f = impl->format;
  f.sample_rate = static_cast<uint32_t>(dec->sample_rate);
  f.channels = static_cast<uint16_t>(channels);
  f.channel_layout = dec->ch_layout.order == AV_CHANNEL_ORDER_NATIVE ? dec->ch_layout.u.mask : 0;
  if (const auto as_is = carried(dec->sample_fmt)) {
    f.sample_format = *as_is;
  } else {
    f.sample_format = proto::SampleFormat::f32p;
    SwrContext* swr = nullptr;
    if (const int rc = swr_alloc_set_opts2(&swr, &dec->ch_layout, AV_SAMPLE_FMT_FLTP, dec->sample_rate,
                                           &dec->ch_layout, dec->sample_fmt, dec->sample_rate, 0, nullptr);
        rc < 0) {
      return Unexpected(av_error(impl->who, "swr_alloc_set_opts2", rc));
    }
    impl->swr.reset(swr);
    if (const int rc = swr_init(swr); rc < 0) return Unexpected(av_error(impl->who, "swr_init", rc));
  }
  f.name = format_name.empty() ? url : fmt::format("{} {}", format_name, url);
  if (f.name.size() >= proto::kNameBytes) f.name.resize(proto::kNameBytes - 1);
  impl->live = is_device(input_format) && format_name != "lavfi";
  auto packet = make_packet(impl->who);
  if (!packet) return Unexpected(packet.error());
  impl->packet = std::move(*packet);
  auto frame = make_frame(impl->who);
  if (!frame) return Unexpected(frame.error());
  impl->frame = std::move(*frame);
  return std::unique_ptr<AudioCapture>(new AudioCapture(std::move(impl)));
}

const proto::AudioStart& AudioCapture::format() const { return impl_->format; }
bool AudioCapture::live() const { return impl_->live; }

std::string AudioCapture::describe() const {
  const AVCodecContext* dec = impl_->decoder.get();
  return fmt::format("{}: {} {} Hz, {} channel{}, {}{}", impl_->who, dec->codec->name, dec->sample_rate,
                     impl_->format.channels, impl_->format.channels == 1 ? "" : "s",
                     av_get_sample_fmt_name(dec->sample_fmt), impl_->swr ? " (converted to fltp)" : "");
}

Result<std::optional<AudioCapture::Chunk>> AudioCapture::read() {
  Impl& s = *impl_;
  for (;;) {
    AVFrame* f = s.frame.get();
    int rc = avcodec_receive_frame(s.decoder.get(), f);
    if (rc == 0) {
      Chunk c;
      c.first_sample = s.samples;
      c.samples = static_cast<uint32_t>(f->nb_samples);
      c.read_at = std::chrono::steady_clock::now();
      const uint32_t bps = proto::bytes_per_sample(s.format.sample_format);
      const uint32_t channels = s.format.channels;
      c.data.resize(size_t{c.samples} * channels * bps);
      if (s.swr) {
        uint8_t* out[proto::kMaxAudioChannels] = {};
        for (uint32_t ch = 0; ch < channels; ++ch) {
          out[ch] = reinterpret_cast<uint8_t*>(c.data.data()) + size_t{ch} * c.samples * bps;
        }
        const int n = swr_convert(s.swr.get(), out, f->nb_samples, const_cast<const uint8_t**>(f->extended_data),
                                  f->nb_samples);
        if (n < 0) {
          av_frame_unref(f);
          return Unexpected(av_error(s.who, "swr_convert", n));
        }
      } else if (proto::planar(s.format.sample_format)) {
        for (uint32_t ch = 0; ch < channels; ++ch) {
          std::memcpy(c.data.data() + size_t{ch} * c.samples * bps, f->extended_data[ch], size_t{c.samples} * bps);
        }
      } else {
        std::memcpy(c.data.data(), f->extended_data[0], c.data.size());
      }
      av_frame_unref(f);
      s.samples += c.samples;
      if (c.samples == 0) continue;
      return std::optional<Chunk>(std::move(c));
    }
    if (rc == AVERROR_EOF) return std::optional<Chunk>{};
    if (rc != AVERROR(EAGAIN)) return Unexpected(av_error(s.who, "avcodec_receive_frame", rc));
    if (s.draining) return std::optional<Chunk>{};
    rc = av_read_frame(s.input.get(), s.packet.get());
    if (rc == AVERROR(EAGAIN)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (rc == AVERROR_EOF || rc == AVERROR(EPIPE)) {
      s.draining = true;
      rc = avcodec_send_packet(s.decoder.get(), nullptr);
      if (rc < 0 && rc != AVERROR_EOF) return Unexpected(av_error(s.who, "avcodec_send_packet(flush)", rc));
      continue;
    }
    if (rc < 0) return Unexpected(av_error(s.who, "av_read_frame", rc));
    if (s.packet->stream_index == s.stream_index) {
      rc = avcodec_send_packet(s.decoder.get(), s.packet.get());
      if (rc < 0 && rc != AVERROR_INVALIDDATA) {
        av_packet_unref(s.packet.get());
        return Unexpected(av_error(s.who, "avcodec_send_packet", rc));
      }
    }
    av_packet_unref(s.packet.get());
  }
}

}  // namespace rdmavideo::av
