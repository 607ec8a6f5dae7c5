// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/audio_capture.hpp"

#include <thread>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {

struct AudioCapture::Impl {
  UniqueInputContext input;
  AudioDecoder audio;
  UniquePacket packet;
  UniqueFrame frame;
  int stream_index = -1;
  std::string who;
  bool live = false;
  bool draining = false;
  uint64_t samples = 0;  // given so far
};

AudioCapture::AudioCapture(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioCapture::~AudioCapture() = default;

Result<std::unique_ptr<AudioCapture>> AudioCapture::open(const std::string& url,
                                                         const std::string& format_name,
                                                         const AudioCaptureSettingNames& names) {
  register_devices();
  auto impl = std::make_unique<Impl>();
  impl->who = format_name.empty()
                  ? fmt::format("{} {}", names.input, url)
                  : fmt::format("{} {} {} {}", names.format, format_name, names.input, url);
  const AVInputFormat* input_format = nullptr;
  if (!format_name.empty()) {
    input_format = av_find_input_format(format_name.c_str());
    if (!input_format) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: {} {} is not an input format or device libavformat/libavdevice know "
                        "(see ffmpeg -devices: alsa, pulse, lavfi, ...)",
                        impl->who, names.format, format_name);
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
  impl->stream_index = av_find_best_stream(raw, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  if (impl->stream_index < 0) {
    return Unexpected(av_error(impl->who, "av_find_best_stream(audio)", impl->stream_index)
                          .context("no decodable audio stream"));
  }
  auto decoder = AudioDecoder::open(*raw->streams[impl->stream_index], impl->who);
  if (!decoder) return Unexpected(decoder.error());
  impl->audio = std::move(*decoder);
  proto::AudioStart& f = impl->audio.format;
  f.name = format_name.empty() ? url : fmt::format("{} {}", format_name, url);
  impl->live = is_device(input_format) && format_name != "lavfi";
  auto packet = make_packet(impl->who);
  if (!packet) return Unexpected(packet.error());
  impl->packet = std::move(*packet);
  auto frame = make_frame(impl->who);
  if (!frame) return Unexpected(frame.error());
  impl->frame = std::move(*frame);
  return std::unique_ptr<AudioCapture>(new AudioCapture(std::move(impl)));
}

const proto::AudioStart& AudioCapture::format() const { return impl_->audio.format; }
bool AudioCapture::live() const { return impl_->live; }

std::string AudioCapture::describe() const {
  return fmt::format("{}: {}", impl_->who, impl_->audio.describe());
}

Result<std::optional<AudioCapture::Chunk>> AudioCapture::read() {
  Impl& s = *impl_;
  for (;;) {
    AVFrame* f = s.frame.get();
    int rc = avcodec_receive_frame(s.audio.decoder.get(), f);
    if (rc == 0) {
      auto samples = s.audio.samples(*f, s.who);
      const auto count = static_cast<uint32_t>(f->nb_samples);
      av_frame_unref(f);
      if (!samples) return Unexpected(samples.error());
      if (count == 0) continue;
      Chunk c{s.samples, count, std::move(*samples), std::chrono::steady_clock::now()};
      s.samples += count;
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
      rc = avcodec_send_packet(s.audio.decoder.get(), nullptr);
      if (rc < 0 && rc != AVERROR_EOF)
        return Unexpected(av_error(s.who, "avcodec_send_packet(flush)", rc));
      continue;
    }
    if (rc < 0) return Unexpected(av_error(s.who, "av_read_frame", rc));
    if (s.packet->stream_index == s.stream_index) {
      rc = avcodec_send_packet(s.audio.decoder.get(), s.packet.get());
      if (rc < 0 && rc != AVERROR_INVALIDDATA) {
        av_packet_unref(s.packet.get());
        return Unexpected(av_error(s.who, "avcodec_send_packet", rc));
      }
    }
    av_packet_unref(s.packet.get());
  }
}

}  // namespace rdmavideo::av
