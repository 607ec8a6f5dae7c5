// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/source.hpp"

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <chrono>
#include <thread>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"
#include "source_audio.hpp"

namespace rdmavideo::av {
namespace {

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

// What NVDEC gives for a decoder's software format: 8-bit 4:2:0 as nv12, 10-bit as p010
// (FFmpeg's CUDA hwaccel output); nullopt for what it cannot decode into a format we carry.
std::optional<PixelFormat> nvdec_output(AVPixelFormat software) {
  switch (software) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_NV12: return PixelFormat::nv12;
    case AV_PIX_FMT_YUV420P10LE:
    case AV_PIX_FMT_P010LE: return PixelFormat::p010;
    default: return std::nullopt;
  }
}

// The colour frames leave in when none was asked for: the input's, with the matrix and
// range a conversion into another family chose (into YUV: BT.709 from 720 lines up, else
// BT.601, limited; into RGB: full).
Colour stream_colour(const AVCodecContext& dec, PixelFormat out, uint32_t height) {
  Colour c = colour_of(dec.color_primaries, dec.color_trc, dec.colorspace, dec.color_range);
  const AVPixFmtDescriptor* in =
      av_pix_fmt_desc_get(dec.sw_pix_fmt != AV_PIX_FMT_NONE ? dec.sw_pix_fmt : dec.pix_fmt);
  const bool in_rgb = in && (in->flags & AV_PIX_FMT_FLAG_RGB);
  if (traits(out).rgb) {
    c.matrix = 0;
    c.range = colour::kFull;
  } else if (in_rgb) {
    c.matrix = height >= 720 ? colour::kBt709 : colour::kBt601_525;
    c.range = colour::kLimited;
  } else if (c.range == 0 && in && std::string_view(in->name).starts_with("yuvj")) {
    c.range = colour::kFull;
  }
  return c;  // YUV into YUV keeps its range: libswscale is told it (convert())
}

}  // namespace

struct Source::Impl {
  // Creation order; members are destroyed backwards (sws and frames before the codec, the
  // codec before the demuxer whose stream it decodes, and all of them before the CUDA stream
  // FFmpeg's CUDA device queues its work on).
  std::shared_ptr<cuda::Device> gpu;         // --hwaccel cuda: the GPU, for our copies
  std::unique_ptr<cuda::Stream> gpu_copies;  // NVDEC's and our copies, in one order
  UniqueInputContext input;
  UniqueCodecContext decoder;
  UniquePacket packet;
  UniqueFrame frame;
  UniqueFrame downloaded;  // --hwaccel into host memory: the frame brought down
  UniqueSws sws;
  UniqueBufferRef hw_device;  // --hwaccel cuda: FFmpeg's CUDA device (our context and stream)
  std::string hw_refused;     // why the decoder could not decode on the GPU
  bool cuda_chosen = false;   // the decoder was told to give CUDA frames (its hwaccel starts)
  const LogCapture* decoding_log = nullptr;  // what FFmpeg says while a packet is decoded
  std::vector<std::byte> staging;  // read_frame_to_gpu without NVDEC: the frame on the host
  int stream_index = -1;
  AVRational stream_time_base{1, 1};
  proto::StreamStart format;
  AVPixelFormat target = AV_PIX_FMT_NONE;
  SourceOptions options;
  std::string who;  // "the input clip.mp4"; the CLI: "-i clip.mp4"
  SourceSettingNames names;
  bool live = false;
  bool paced_by_input = false;
  bool draining = false;  // the demuxer is at its end; the decoder is being flushed
  bool converting_logged = false;
  int64_t period_ns = 0;                   // one frame at the stream's rate
  int64_t pass_first_ts = AV_NOPTS_VALUE;  // first timestamp of this pass over the file
  int64_t pass_offset_ns = 0;              // pts of this pass's first frame
  int64_t last_pts_ns = -1;                // pts of the last frame returned
  uint64_t pass_frames = 0;                // frames returned in this pass
  SourceAudio audio;                       // the sound beside the picture (--audio)

  // The origin of this pass's clock: its first frame's timestamp, in ns.
  std::optional<int64_t> pass_origin_ns() const {
    if (pass_first_ts == AV_NOPTS_VALUE) return std::nullopt;
    return av_rescale_q(pass_first_ts, stream_time_base, AVRational{1, 1000000000});
  }
  // Audio waiting for its pass's origin, placed now that it is known (`origin` when the
  // pass ends without a frame: the pass's own start).
  void place_pending_audio(std::optional<int64_t> origin = std::nullopt) {
    if (!origin) origin = pass_origin_ns();
    if (origin) audio.place(*origin, pass_offset_ns);
  }

  Result<void> restart() {
    // This pass's audio keeps this pass's clock.
    place_pending_audio(pass_origin_ns().value_or(0));
    audio.seeked();
    if (const int rc = av_seek_frame(input.get(), stream_index, INT64_MIN, AVSEEK_FLAG_BACKWARD);
        rc < 0) {
      if (const int rc2 = avformat_seek_file(input.get(), -1, INT64_MIN, 0, 0, 0); rc2 < 0) {
        return Unexpected(av_error(who, fmt::format("{}: seeking to the start", names.loop), rc2));
      }
    }
    avcodec_flush_buffers(decoder.get());
    draining = false;
    pass_first_ts = AV_NOPTS_VALUE;
    pass_offset_ns = last_pts_ns + period_ns;
    pass_frames = 0;
    return {};
  }

  // --hwaccel cuda:N: FFmpeg's CUDA device on the GPU's primary context and the stream our
  // own copies use, and the decoder told to give CUDA frames.
  Result<void> open_nvdec(int ordinal, const AVCodec* codec) {
    auto device = cuda::Device::shared(ordinal);
    if (!device)
      return Unexpected(device.error().context(fmt::format("{} {}", who, names.decoder_choice)));
    gpu = *device;
    bool has_cuda = false;
    for (int i = 0;; ++i) {
      const AVCodecHWConfig* config = avcodec_get_hw_config(codec, i);
      if (!config) break;
      has_cuda |= config->device_type == AV_HWDEVICE_TYPE_CUDA &&
                  (config->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) != 0;
    }
    if (!has_cuda) {
      return make_error(ErrorCode::unsupported,
                        "{} {}: FFmpeg's {} decoder cannot decode with NVDEC (h264, hevc, "
                        "vp9, av1, mpeg2 and others can): leave out {}",
                        who, names.decoder_choice, codec->name, names.decoder);
    }
    // NVDEC copies each decoded picture into its frame on FFmpeg's device's stream: ours, so
    // that our copy of the frame waits for it.
    auto stream = gpu->create_stream();
    if (!stream)
      return Unexpected(stream.error().context(fmt::format("{} {}", who, names.decoder_choice)));
    gpu_copies = std::move(*stream);
    auto made = cuda_device_on(*gpu_copies, fmt::format("{} {}", who, names.decoder_choice));
    if (!made) return Unexpected(made.error());
    hw_device = std::move(*made);
    AVCodecContext* dec = decoder.get();
    dec->hw_device_ctx = av_buffer_ref(hw_device.get());
    dec->opaque = this;
    dec->get_format = pick_cuda;
    dec->thread_count = 1;  // NVDEC is the decoder; CPU threads would only queue for it
    auto frame_out = make_frame(who);
    if (!frame_out) return Unexpected(frame_out.error());
    downloaded = std::move(*frame_out);
    return {};
  }

  // The CUDA frame format when the decoder offers it; none otherwise, so that a stream
  // NVDEC cannot decode is an error naming it rather than a silent decode on the CPU.
  static AVPixelFormat pick_cuda(AVCodecContext* dec, const AVPixelFormat* offered) {
    auto* self = static_cast<Impl*>(dec->opaque);
    for (const AVPixelFormat* p = offered; *p != AV_PIX_FMT_NONE; ++p) {
      if (*p == AV_PIX_FMT_CUDA) {
        self->cuda_chosen = true;
        return *p;
      }
    }
    if (self->cuda_chosen) {
      // Asked again without CUDA: NVDEC did not start (FFmpeg drops a format whose hwaccel
      // fails to initialise and asks again). What it logged says why.
      const std::string said = self->decoding_log ? self->decoding_log->text() : std::string();
      self->hw_refused = fmt::format(
          "{}: NVDEC on {} could not start{}: leave out {} to decode on the CPU", self->who,
          self->gpu->describe(), said.empty() ? "" : " (" + said + ")", self->names.decoder);
      return AV_PIX_FMT_NONE;
    }
    const char* profile = avcodec_profile_name(dec->codec_id, dec->profile);
    self->hw_refused = fmt::format(
        "{}: NVDEC on {} cannot decode this stream ({}{}{}, {} {}x{}): leave out {} to "
        "decode on the CPU",
        self->who, self->gpu->describe(), dec->codec->name, profile ? " " : "",
        profile ? profile : "", av_name(dec->sw_pix_fmt), dec->width, dec->height,
        self->names.decoder);
    return AV_PIX_FMT_NONE;
  }

  // The next decoded frame into `frame`: false at the end of the input.
  Result<bool> decode_next() {
    // With NVDEC, FFmpeg says only in its log why its hwaccel did not start.
    std::optional<LogCapture> said;
    if (hw_device) {
      said.emplace();
      decoding_log = &*said;
    }
    struct Forget {
      const LogCapture*& log;
      ~Forget() { log = nullptr; }
    } forget{decoding_log};
    for (;;) {
      int rc = avcodec_receive_frame(decoder.get(), frame.get());
      if (rc == 0) return true;
      if (rc == AVERROR_EOF) {
        if (options.loop && pass_frames > 0) {
          if (auto ok = restart(); !ok) return Unexpected(ok.error());
          continue;
        }
        return false;
      }
      if (rc != AVERROR(EAGAIN)) return Unexpected(decode_error("avcodec_receive_frame", rc));
      if (draining) return false;  // cannot happen; end rather than spin
      rc = av_read_frame(input.get(), packet.get());
      if (rc == AVERROR(EAGAIN)) {  // a non-blocking device with nothing yet
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      if (rc == AVERROR_EOF || rc == AVERROR(EPIPE)) {
        draining = true;
        if (auto ok = audio.drain(); !ok) return Unexpected(ok.error());
        rc = avcodec_send_packet(decoder.get(), nullptr);
        if (rc < 0 && rc != AVERROR_EOF)
          return Unexpected(decode_error("avcodec_send_packet(flush)", rc));
        continue;
      }
      if (rc < 0) return Unexpected(av_error(who, "av_read_frame", rc));
      if (audio.takes(packet->stream_index)) {
        auto ok = audio.decode(*packet);
        av_packet_unref(packet.get());
        if (!ok) return Unexpected(ok.error());
        continue;
      }
      if (packet->stream_index == stream_index) {
        rc = avcodec_send_packet(decoder.get(), packet.get());
        if (rc == AVERROR_INVALIDDATA && hw_refused.empty()) {
          log().warn("[{}] skipping a packet the decoder rejects: {}", who, error_text(rc));
        } else if (rc < 0) {
          av_packet_unref(packet.get());
          return Unexpected(decode_error("avcodec_send_packet", rc));
        }
      }
      av_packet_unref(packet.get());
    }
  }

  Error decode_error(std::string_view call, int rc) const {
    if (!hw_refused.empty()) return Error(ErrorCode::unsupported, hw_refused);
    return av_error(who, call, rc);
  }

  // The frame's timing, once it has been delivered.
  FrameInfo delivered() {
    const int64_t pts_ns = next_pts_ns();
    place_pending_audio();
    av_frame_unref(frame.get());
    last_pts_ns = pts_ns;
    ++pass_frames;
    return FrameInfo{pts_ns};
  }

  // A decoded frame in host memory: the frame itself, or a download of an NVDEC surface.
  Result<const AVFrame*> on_host() {
    if (frame->format != AV_PIX_FMT_CUDA) return frame.get();
    av_frame_unref(downloaded.get());
    if (const int rc = av_hwframe_transfer_data(downloaded.get(), frame.get(), 0); rc < 0) {
      return Unexpected(
          av_error(who, "av_hwframe_transfer_data (downloading a decoded frame)", rc));
    }
    return downloaded.get();
  }

  // An NVDEC surface into GPU memory laid out as the stream: a pitched copy a plane, on the
  // stream NVDEC wrote the surface on, so after it. `out` is on the GPU --hwaccel opened
  // (the sender refuses --hwaccel and --memory on different GPUs).
  Result<void> copy_on_gpu(cuda::DevicePtr out) {
    const auto* frames = reinterpret_cast<const AVHWFramesContext*>(frame->hw_frames_ctx->data);
    if (nvdec_output(frames->sw_format) != format.pixel_format ||
        frame->width != static_cast<int>(format.width) ||
        frame->height != static_cast<int>(format.height)) {
      return make_error(
          ErrorCode::unsupported,
          "{}: NVDEC now gives {}x{} {} where the stream is {}x{} {} (the input changed "
          "mid-stream; with {} into GPU memory frames are not converted)",
          who, frame->width, frame->height, av_name(frames->sw_format), format.width, format.height,
          name(format.pixel_format), names.decoder);
    }
    if (auto ok = copy_cuda_frame(*gpu_copies, format, out, *frame, true); !ok) {
      return Unexpected(ok.error().context(who));
    }
    return {};
  }

  Result<void> convert(const AVFrame* src, std::span<std::byte> out) {
    uint8_t* dst[4] = {};
    int dst_linesize[4] = {};
    for (int p = 0; p < format.layout.plane_count; ++p) {
      dst[p] = reinterpret_cast<uint8_t*>(out.data()) + format.layout.planes[p].offset;
      dst_linesize[p] = static_cast<int>(format.layout.planes[p].stride);
    }
    const auto src_format = static_cast<AVPixelFormat>(src->format);
    if (src_format == target && src->width == static_cast<int>(format.width) &&
        src->height == static_cast<int>(format.height)) {
      av_image_copy(dst, dst_linesize, const_cast<const uint8_t**>(src->data), src->linesize,
                    target, src->width, src->height);
      return {};
    }
    if (!converting_logged) {
      log().info("[{}] converting {}x{} {} to {}x{} {} with libswscale", who, src->width,
                 src->height, av_name(src_format), format.width, format.height, av_name(target));
      converting_logged = true;
    }
    sws.reset(sws_getCachedContext(sws.release(), src->width, src->height, src_format,
                                   static_cast<int>(format.width), static_cast<int>(format.height),
                                   target, SWS_BICUBIC, nullptr, nullptr, nullptr));
    if (!sws) {
      return make_error(ErrorCode::unsupported,
                        "{}: sws_getCachedContext({} {}x{} -> {} {}x{}) failed", who,
                        av_name(src_format), src->width, src->height, av_name(target), format.width,
                        format.height);
    }
    // The matrix and range the stream says it is in, not libswscale's defaults (BT.601,
    // limited), from the input's own.
    const Colour in =
        colour_of(src->color_primaries, src->color_trc, src->colorspace, src->color_range);
    const bool in_full = in.range == colour::kFull ||
                         av_pix_fmt_desc_get(src_format)->flags & AV_PIX_FMT_FLAG_RGB ||
                         src_format == AV_PIX_FMT_YUVJ420P || src_format == AV_PIX_FMT_YUVJ422P ||
                         src_format == AV_PIX_FMT_YUVJ444P;
    const bool out_full = format.colour.range == colour::kFull || traits(format.pixel_format).rgb;
    sws_setColorspaceDetails(sws.get(), sws_getCoefficients(sws_matrix(in.matrix, src->height)),
                             in_full ? 1 : 0,
                             sws_getCoefficients(sws_matrix(format.colour.matrix, format.height)),
                             out_full ? 1 : 0, 0, 1 << 16, 1 << 16);
    sws_scale(sws.get(), src->data, src->linesize, 0, src->height, dst, dst_linesize);
    return {};
  }

  int64_t next_pts_ns() {
    const int64_t ts = frame->best_effort_timestamp;
    int64_t pts = last_pts_ns < 0 ? 0 : last_pts_ns + period_ns;
    if (ts != AV_NOPTS_VALUE) {
      if (pass_first_ts == AV_NOPTS_VALUE) pass_first_ts = ts;
      pts = pass_offset_ns +
            av_rescale_q(ts - pass_first_ts, stream_time_base, AVRational{1, 1000000000});
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
                  ? fmt::format("{} {}", options.names.input, options.input)
                  : fmt::format("{} {} {} {}", options.names.input_format, options.input_format,
                                options.names.input, options.input);
  impl->names = options.names;
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
  std::optional<PixelFormat> nvdec_format;
  if (options.cuda_decoder && options.into_gpu) {
    // Decoded into GPU memory, frames keep the format NVDEC gives: nothing converts them.
    const auto nvdec = nvdec_output(dec->pix_fmt);
    if (!nvdec) {
      return make_error(
          ErrorCode::unsupported,
          "{}: NVDEC cannot give {} ({}) as a format rdmavideo carries (nv12 for 8-bit "
          "4:2:0, p010 for 10-bit): leave out {}, or use {}",
          who, av_name(dec->pix_fmt), codec->name, options.names.decoder,
          options.names.host_memory);
    }
    if ((options.pixel_format && *options.pixel_format != *nvdec) ||
        (options.width && (*options.width != static_cast<uint32_t>(dec->width) ||
                           *options.height != static_cast<uint32_t>(dec->height)))) {
      return make_error(
          ErrorCode::invalid_argument,
          "{}: decoded by NVDEC into GPU memory, frames stay {}x{} {} (nothing converts "
          "them there): leave out {} and {}, or use {}",
          who, dec->width, dec->height, name(*nvdec), options.names.size,
          options.names.pixel_format, options.names.host_memory);
    }
    nvdec_format = nvdec;
  }
  if (options.cuda_decoder) {
    if (auto ok = impl->open_nvdec(*options.cuda_decoder, codec); !ok)
      return Unexpected(ok.error());
  }
  if (const int rc = avcodec_open2(dec, codec, nullptr); rc < 0) {
    return Unexpected(av_error(who, fmt::format("avcodec_open2({})", codec->name), rc));
  }
  auto packet = make_packet(who);
  if (!packet) return Unexpected(packet.error());
  impl->packet = std::move(*packet);
  auto frame = make_frame(who);
  if (!frame) return Unexpected(frame.error());
  impl->frame = std::move(*frame);

  auto audio = SourceAudio::open(*impl->input, impl->stream_index, options, impl->who);
  if (!audio) return Unexpected(audio.error());
  impl->audio = std::move(*audio);

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
    log().warn("[{}] the input gives no frame rate; assuming 30 fps (set one with {})", who,
               options.names.rate);
  }
  PixelFormat pixel_format = options.pixel_format.value_or(nearest_carried(dec->pix_fmt));
  if (nvdec_format) pixel_format = *nvdec_format;
  const auto target = to_av(pixel_format);
  if (!target) {
    return make_error(ErrorCode::unsupported,
                      "{}: {} {} is not available for decoded inputs (FFmpeg has no {} "
                      "pixel format); use yuv422p10le",
                      who, options.names.pixel_format, name(pixel_format), name(pixel_format));
  }
  impl->target = *target;
  auto format = proto::make_stream_start(pixel_format, width, height, rate);
  if (!format) return Unexpected(format.error().context(who));
  format->colour = options.colour.value_or(stream_colour(*dec, pixel_format, height));
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
  return fmt::format(
      "{} {}x{} {} from {} ({}){}{}", dec->codec->name, dec->width, dec->height,
      av_name(dec->sw_pix_fmt != AV_PIX_FMT_NONE ? dec->sw_pix_fmt : dec->pix_fmt),
      impl_->options.input, impl_->input->iformat->name, impl_->options.loop ? ", looping" : "",
      impl_->gpu ? fmt::format(", decoded by NVDEC on {}", impl_->gpu->describe()) : "");
}

bool Source::decodes_on_gpu() const { return impl_->hw_device != nullptr; }

std::vector<proto::AudioStart> Source::audio_tracks() const { return impl_->audio.tracks(); }

std::vector<DecodedAudio> Source::take_audio() { return impl_->audio.take(); }

Result<std::optional<Source::FrameInfo>> Source::read_frame(std::span<std::byte> out) {
  Impl& s = *impl_;
  if (out.size() < s.format.layout.frame_bytes) {
    return make_error(ErrorCode::invalid_argument, "{}: buffer of {} bytes for a {}-byte frame",
                      s.who, out.size(), s.format.layout.frame_bytes);
  }
  auto got = s.decode_next();
  if (!got) return Unexpected(got.error());
  if (!*got) {
    s.place_pending_audio(s.pass_origin_ns().value_or(0));  // the audio after the last frame
    return std::optional<FrameInfo>{};
  }
  auto host = s.on_host();
  auto converted = host ? s.convert(*host, out) : Result<void>(Unexpected(host.error()));
  const FrameInfo info = s.delivered();
  if (!converted) return Unexpected(converted.error());
  return info;
}

Result<std::optional<Source::FrameInfo>> Source::read_frame_to_gpu(cuda::Device& device,
                                                                   cuda::DevicePtr out) {
  Impl& s = *impl_;
  if (!s.hw_device) {
    // Decoded on the CPU: read into host memory, then upload.
    s.staging.resize(s.format.layout.frame_bytes);
    auto info = read_frame(s.staging);
    if (!info || !*info) return info;
    if (auto ok = device.upload(out, s.staging); !ok) return Unexpected(ok.error());
    return info;
  }
  auto got = s.decode_next();
  if (!got) return Unexpected(got.error());
  if (!*got) return std::optional<FrameInfo>{};
  auto copied = s.frame->format == AV_PIX_FMT_CUDA
                    ? s.copy_on_gpu(out)
                    : Result<void>(make_error(ErrorCode::unsupported,
                                              "{}: the decoder gave a frame in host "
                                              "memory where NVDEC was asked for",
                                              s.who));
  const FrameInfo info = s.delivered();
  if (!copied) return Unexpected(copied.error());
  return info;
}

}  // namespace rdmavideo::av
