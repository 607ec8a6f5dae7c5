// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/source.hpp"

extern "C" {
#include <libavutil/imgutils.h>
}

#include <chrono>
#include <thread>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {
namespace {

bool is_device(const AVInputFormat* format) {
  if (!format || !format->priv_class) return false;
  const AVClassCategory category = format->priv_class->category;
  return category == AV_CLASS_CATEGORY_DEVICE_VIDEO_INPUT ||
         category == AV_CLASS_CATEGORY_DEVICE_INPUT;
}

bool is_stream_url(const std::string& input) {
  for (const char* scheme : {"rtsp://", "rtp://", "udp://", "srt://", "rtmp://", "tcp://"}) {
    if (input.rfind(scheme, 0) == 0) return true;
  }
  return false;
}

Rational to_rational(AVRational r) {
  if (r.num <= 0 || r.den <= 0) return {};
  // Our Rational is unsigned 32-bit: reduce what FFmpeg gives (it may be 90000/1 or large).
  AVRational reduced{};
  av_reduce(&reduced.num, &reduced.den, r.num, r.den, INT32_MAX);
  return {static_cast<uint32_t>(reduced.num), static_cast<uint32_t>(reduced.den)};
}

}  // namespace

struct Source::Impl {
  // Creation order; members are destroyed backwards (sws and frames before the codec, the
  // codec before the demuxer whose stream it decodes).
  UniqueInputContext input;
  UniqueCodecContext decoder;
  UniquePacket packet;
  UniqueFrame frame;
  UniqueSws sws;
  int stream_index = -1;
  AVRational stream_time_base{1, 1};
  proto::StreamStart format;
  AVPixelFormat target = AV_PIX_FMT_NONE;
  SourceOptions options;
  std::string who;              // "-i clip.mp4"
  bool live = false;
  bool paced_by_input = false;
  bool draining = false;        // the demuxer is at its end; the decoder is being flushed
  bool converting_logged = false;
  int64_t period_ns = 0;        // one frame at the stream's rate
  int64_t pass_first_ts = AV_NOPTS_VALUE;  // first timestamp of this pass over the file
  int64_t pass_offset_ns = 0;   // pts of this pass's first frame
  int64_t last_pts_ns = -1;     // pts of the last frame returned
  uint64_t pass_frames = 0;     // frames returned in this pass

  Result<void> restart() {
    if (const int rc = av_seek_frame(input.get(), stream_index, INT64_MIN, AVSEEK_FLAG_BACKWARD);
        rc < 0) {
      if (const int rc2 = avformat_seek_file(input.get(), -1, INT64_MIN, 0, 0, 0); rc2 < 0) {
        return Unexpected(av_error(who, "--loop: seeking to the start", rc2));
      }
    }
    avcodec_flush_buffers(decoder.get());
    draining = false;
    pass_first_ts = AV_NOPTS_VALUE;
    pass_offset_ns = last_pts_ns + period_ns;
    pass_frames = 0;
    return {};
  }

  Result<void> convert(std::span<std::byte> out) {
    uint8_t* dst[4] = {};
    int dst_linesize[4] = {};
    for (int p = 0; p < format.layout.plane_count; ++p) {
      dst[p] = reinterpret_cast<uint8_t*>(out.data()) + format.layout.planes[p].offset;
      dst_linesize[p] = static_cast<int>(format.layout.planes[p].stride);
    }
    const auto src_format = static_cast<AVPixelFormat>(frame->format);
    if (src_format == target && frame->width == static_cast<int>(format.width) &&
        frame->height == static_cast<int>(format.height)) {
      av_image_copy(dst, dst_linesize, const_cast<const uint8_t**>(frame->data), frame->linesize,
                    target, frame->width, frame->height);
      return {};
    }
    if (!converting_logged) {
      log().info("[{}] converting {}x{} {} to {}x{} {} with libswscale", who, frame->width,
                 frame->height, av_name(src_format), format.width, format.height,
                 av_name(target));
      converting_logged = true;
    }
    sws.reset(sws_getCachedContext(sws.release(), frame->width, frame->height, src_format,
                                   static_cast<int>(format.width),
                                   static_cast<int>(format.height), target, SWS_BICUBIC,
                                   nullptr, nullptr, nullptr));
    if (!sws) {
      return make_error(ErrorCode::unsupported, "{}: sws_getCachedContext({} {}x{} -> {} {}x{}) failed",
                        who, av_name(src_format), frame->width, frame->height, av_name(target),
                        format.width, format.height);
    }
    sws_scale(sws.get(), frame->data, frame->linesize, 0, frame->height, dst, dst_linesize);
    return {};
  }

  int64_t next_pts_ns() {
    const int64_t ts = frame->best_effort_timestamp;
    int64_t pts = last_pts_ns < 0 ? 0 : last_pts_ns + period_ns;
    if (ts != AV_NOPTS_VALUE) {
      if (pass_first_ts == AV_NOPTS_VALUE) pass_first_ts = ts;
      pts = pass_offset_ns + av_rescale_q(ts - pass_first_ts, stream_time_base, AVRational{1, 1000000000});
    }
    if (pts <= last_pts_ns) pts = last_pts_ns + 1;  // never backwards (B-frame reorder glitches)
    return pts;
  }
};

Source::Source(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Source::~Source() = default;

bool Source::available() { return true; }

Result<std::unique_ptr<Source>> Source::open(const SourceOptions& options) {
  register_devices();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->who = options.input_format.empty()
                  ? fmt::format("-i {}", options.input)
                  : fmt::format("-f {} -i {}", options.input_format, options.input);
  const std::string& who = impl->who;

  const AVInputFormat* input_format = nullptr;
  if (!options.input_format.empty()) {
    input_format = av_find_input_format(options.input_format.c_str());
    if (!input_format) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: -f {} is not an input format or device libavformat/libavdevice "
                        "know (see ffmpeg -formats, ffmpeg -devices)",
                        who, options.input_format);
    }
  }
  const bool device = is_device(input_format);
  AVDictionary* raw_opts = nullptr;
  std::unique_ptr<AVDictionary*, void (*)(AVDictionary**)> opts(&raw_opts, av_dict_free);
  if (device && options.input_format != "lavfi") {
    // Ask the device itself for the rate, size and pixel format, as ffmpeg's -framerate,
    // -video_size and -pixel_format do, so a capture card or webcam delivers the stream
    // natively and nothing needs converting. A device that cannot is converted below.
    // Options a device does not take (x11grab has no pixel_format) stay unused.
    if (options.frame_rate) {
      av_dict_set(&raw_opts, "framerate", to_string(*options.frame_rate).c_str(), 0);
    }
    if (options.width && options.height) {
      av_dict_set(&raw_opts, "video_size",
                  fmt::format("{}x{}", *options.width, *options.height).c_str(), 0);
    }
    if (options.pixel_format) {
      if (const auto av_format = to_av(*options.pixel_format)) {
        av_dict_set(&raw_opts, "pixel_format", av_get_pix_fmt_name(*av_format), 0);
      }
    }
  }
  AVFormatContext* raw = nullptr;
  if (const int rc = avformat_open_input(&raw, options.input.c_str(), input_format, &raw_opts);
      rc < 0) {
    return Unexpected(av_error(who, "avformat_open_input", rc));
  }
  impl->input.reset(raw);
  if (const int rc = avformat_find_stream_info(raw, nullptr); rc < 0) {
    return Unexpected(av_error(who, "avformat_find_stream_info", rc));
  }
  const AVCodec* codec = nullptr;
  impl->stream_index = av_find_best_stream(raw, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (impl->stream_index < 0) {
    return Unexpected(av_error(who, "av_find_best_stream(video)", impl->stream_index)
                          .context("no decodable video stream"));
  }
  AVStream* stream = raw->streams[impl->stream_index];
  impl->stream_time_base = stream->time_base;
  auto decoder = make_codec_context(codec, who);
  if (!decoder) return Unexpected(decoder.error());
  impl->decoder = std::move(*decoder);
  AVCodecContext* dec = impl->decoder.get();
  if (const int rc = avcodec_parameters_to_context(dec, stream->codecpar); rc < 0) {
    return Unexpected(av_error(who, "avcodec_parameters_to_context", rc));
  }
  dec->pkt_timebase = stream->time_base;
  dec->thread_count = 0;  // one per core
  dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (const int rc = avcodec_open2(dec, codec, nullptr); rc < 0) {
    return Unexpected(av_error(who, fmt::format("avcodec_open2({})", codec->name), rc));
  }
  auto packet = make_packet(who);
  if (!packet) return Unexpected(packet.error());
  impl->packet = std::move(*packet);
  auto frame = make_frame(who);
  if (!frame) return Unexpected(frame.error());
  impl->frame = std::move(*frame);

  // The stream's format: the input's unless the options ask for a conversion.
  const uint32_t width = options.width.value_or(static_cast<uint32_t>(dec->width));
  const uint32_t height = options.height.value_or(static_cast<uint32_t>(dec->height));
  Rational rate = options.frame_rate.value_or(to_rational(stream->avg_frame_rate));
  if (device && options.frame_rate && stream->avg_frame_rate.num > 0) {
    // What the device runs at, which may be the nearest it has to what was asked.
    const Rational actual = to_rational(stream->avg_frame_rate);
    if (uint64_t{actual.num} * rate.den != uint64_t{rate.num} * actual.den) {
      log().warn("[{}] the device runs at {} fps, not the {} asked for", who, to_string(actual),
                 to_string(rate));
    }
    rate = actual;
  }
  if (rate.num == 0) rate = to_rational(stream->r_frame_rate);
  if (rate.num == 0) {
    rate = {30, 1};
    log().warn("[{}] the input gives no frame rate; assuming 30 fps (set one with -r)", who);
  }
  const PixelFormat pixel_format = options.pixel_format.value_or(nearest_carried(dec->pix_fmt));
  const auto target = to_av(pixel_format);
  if (!target) {
    return make_error(ErrorCode::unsupported,
                      "{}: --pix-fmt {} is not available for decoded inputs (FFmpeg has no {} "
                      "pixel format); use yuv422p10le",
                      who, name(pixel_format), name(pixel_format));
  }
  impl->target = *target;
  auto format = proto::make_stream_start(pixel_format, width, height, rate);
  if (!format) return Unexpected(format.error().context(who));
  impl->format = std::move(*format);
  impl->period_ns = static_cast<int64_t>(1e9 * rate.den / rate.num);
  impl->live = device || is_stream_url(options.input);
  impl->paced_by_input = impl->live && options.input_format != "lavfi";
  return std::unique_ptr<Source>(new Source(std::move(impl)));
}

const proto::StreamStart& Source::format() const { return impl_->format; }
bool Source::live() const { return impl_->live; }
bool Source::paced_by_input() const { return impl_->paced_by_input; }

std::string Source::describe() const {
  const AVCodecContext* dec = impl_->decoder.get();
  return fmt::format("{} {}x{} {} from {} ({}){}", dec->codec->name, dec->width, dec->height,
                     av_name(dec->pix_fmt), impl_->options.input, impl_->input->iformat->name,
                     impl_->options.loop ? ", looping" : "");
}

Result<std::optional<Source::FrameInfo>> Source::read_frame(std::span<std::byte> out) {
  Impl& s = *impl_;
  if (out.size() < s.format.layout.frame_bytes) {
    return make_error(ErrorCode::invalid_argument, "{}: buffer of {} bytes for a {}-byte frame",
                      s.who, out.size(), s.format.layout.frame_bytes);
  }
  for (;;) {
    int rc = avcodec_receive_frame(s.decoder.get(), s.frame.get());
    if (rc == 0) {
      auto converted = s.convert(out);
      const int64_t pts_ns = s.next_pts_ns();
      av_frame_unref(s.frame.get());
      if (!converted) return Unexpected(converted.error());
      s.last_pts_ns = pts_ns;
      ++s.pass_frames;
      return FrameInfo{pts_ns};
    }
    if (rc == AVERROR_EOF) {
      if (s.options.loop && s.pass_frames > 0) {
        if (auto ok = s.restart(); !ok) return Unexpected(ok.error());
        continue;
      }
      return std::optional<FrameInfo>{};
    }
    if (rc != AVERROR(EAGAIN)) return Unexpected(av_error(s.who, "avcodec_receive_frame", rc));
    if (s.draining) return std::optional<FrameInfo>{};  // cannot happen; end rather than spin
    rc = av_read_frame(s.input.get(), s.packet.get());
    if (rc == AVERROR(EAGAIN)) {  // a non-blocking device with nothing yet
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
      if (rc == AVERROR_INVALIDDATA) {
        log().warn("[{}] skipping a packet the decoder rejects: {}", s.who, error_text(rc));
      } else if (rc < 0) {
        av_packet_unref(s.packet.get());
        return Unexpected(av_error(s.who, "avcodec_send_packet", rc));
      }
    }
    av_packet_unref(s.packet.get());
  }
}

}  // namespace rdmavideo::av
