// SPDX-License-Identifier: Apache-2.0
#include "av_util.hpp"

extern "C" {
#include <libavdevice/avdevice.h>
#include <libavutil/channel_layout.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <utility>

#include "rdmavideo/log.hpp"

namespace rdmavideo::av {
namespace {

constexpr std::array<std::pair<PixelFormat, AVPixelFormat>, 12> kFormats{{
    {PixelFormat::nv12, AV_PIX_FMT_NV12},
    {PixelFormat::i420, AV_PIX_FMT_YUV420P},
    {PixelFormat::p010, AV_PIX_FMT_P010LE},
    {PixelFormat::uyvy, AV_PIX_FMT_UYVY422},
    {PixelFormat::yuy2, AV_PIX_FMT_YUYV422},
    {PixelFormat::rgba, AV_PIX_FMT_RGBA},
    {PixelFormat::bgra, AV_PIX_FMT_BGRA},
    {PixelFormat::rgb24, AV_PIX_FMT_RGB24},
    {PixelFormat::yuv422p10, AV_PIX_FMT_YUV422P10LE},
    {PixelFormat::yuv444p, AV_PIX_FMT_YUV444P},
    {PixelFormat::yuv444p10, AV_PIX_FMT_YUV444P10LE},
    {PixelFormat::yuv444p12, AV_PIX_FMT_YUV444P12LE},
}};

// FFmpeg's "unspecified" (2 for primaries, transfer and matrix; 0 for range) is our 0.
uint8_t said(int value, int unspecified) {
  return value == unspecified || value < 0 || value > 255 ? 0 : static_cast<uint8_t>(value);
}

}  // namespace

void IoContextDeleter::operator()(AVIOContext* ctx) const noexcept {
  if (!ctx) return;
  av_freep(&ctx->buffer);
  avio_context_free(&ctx);
}

void OutputContextDeleter::operator()(AVFormatContext* ctx) const noexcept {
  if (!ctx) return;
  // A custom AVIOContext is its owner's to close and free.
  if (ctx->pb && !(ctx->oformat->flags & AVFMT_NOFILE) && !(ctx->flags & AVFMT_FLAG_CUSTOM_IO)) {
    if (const int rc = avio_closep(&ctx->pb); rc < 0) {
      log().warn("avio_closep({}) failed: {}", ctx->url ? ctx->url : "?", error_text(rc));
    }
  }
  avformat_free_context(ctx);
}

Result<UniqueCodecContext> make_codec_context(const AVCodec* codec, std::string_view who) {
  UniqueCodecContext ctx(avcodec_alloc_context3(codec));
  if (!ctx) return make_error(ErrorCode::resource, "{}: avcodec_alloc_context3 failed", who);
  return ctx;
}

Result<UniqueFrame> make_frame(std::string_view who) {
  UniqueFrame frame(av_frame_alloc());
  if (!frame) return make_error(ErrorCode::resource, "{}: av_frame_alloc failed", who);
  return frame;
}

Result<UniquePacket> make_packet(std::string_view who) {
  UniquePacket packet(av_packet_alloc());
  if (!packet) return make_error(ErrorCode::resource, "{}: av_packet_alloc failed", who);
  return packet;
}

std::string error_text(int averror) {
  std::array<char, AV_ERROR_MAX_STRING_SIZE> buf{};
  av_strerror(averror, buf.data(), buf.size());
  return buf.data();
}

Error av_error(std::string_view who, std::string_view call, int averror) {
  const int err = averror < 0 && averror > -4096 ? -averror : 0;  // AVERROR(errno)
  return Error(err ? ErrorCode::system : ErrorCode::unsupported,
               fmt::format("{}: {} failed: {}", who, call, error_text(averror)), err);
}

Result<void> copy_cuda_frame(cuda::Stream& stream, const proto::StreamStart& format,
                             cuda::DevicePtr at, const AVFrame& cuda_frame, bool into_layout) {
  std::array<cuda::Pitched, kMaxPlanes> theirs{};
  const int planes = std::min(format.layout.plane_count, kMaxPlanes);
  for (int p = 0; p < planes; ++p) {
    theirs[p] = cuda::Pitched::device(reinterpret_cast<uintptr_t>(cuda_frame.data[p]),
                                      static_cast<size_t>(cuda_frame.linesize[p]));
  }
  return stream.copy_planes(format.layout, cuda::Pitched::device(at, 0),
                            std::span(theirs).first(planes),
                            into_layout ? CopyDirection::to_wire : CopyDirection::from_wire);
}

std::optional<AVPixelFormat> to_av(PixelFormat format) {
  for (const auto& [ours, theirs] : kFormats) {
    if (ours == format) return theirs;
  }
  return std::nullopt;
}

std::optional<PixelFormat> from_av(AVPixelFormat format) {
  for (const auto& [ours, theirs] : kFormats) {
    if (theirs == format) return ours;
  }
  return std::nullopt;
}

PixelFormat nearest_carried(AVPixelFormat format) {
  if (auto ours = from_av(format)) return *ours;
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (!desc) return PixelFormat::i420;
  const bool deep = desc->comp[0].depth > 8;
  if (desc->flags & AV_PIX_FMT_FLAG_RGB) return PixelFormat::bgra;
  if (desc->log2_chroma_h > 0) return deep ? PixelFormat::p010 : PixelFormat::i420;
  if (desc->log2_chroma_w == 0) {  // 4:4:4 (yuvj444p, yuva444p, ...): no chroma is lost
    if (desc->comp[0].depth > 10) return PixelFormat::yuv444p12;
    return deep ? PixelFormat::yuv444p10 : PixelFormat::yuv444p;
  }
  // 4:2:2 and 4:1:1: keep the chroma rows.
  return deep ? PixelFormat::yuv422p10 : PixelFormat::uyvy;
}

Colour colour_of(int primaries, int transfer, int matrix, int range) {
  Colour c;
  c.primaries = said(primaries, AVCOL_PRI_UNSPECIFIED);
  c.transfer = said(transfer, AVCOL_TRC_UNSPECIFIED);
  c.matrix = matrix == AVCOL_SPC_RGB ? 0 : said(matrix, AVCOL_SPC_UNSPECIFIED);
  c.range = said(range, AVCOL_RANGE_UNSPECIFIED);
  if (!validate(c)) return {};  // a code point FFmpeg knows and H.273 does not: not said
  return c;
}

void set_colour(AVCodecContext& ctx, const Colour& c) {
  ctx.color_primaries =
      c.primaries ? static_cast<AVColorPrimaries>(c.primaries) : AVCOL_PRI_UNSPECIFIED;
  ctx.color_trc =
      c.transfer ? static_cast<AVColorTransferCharacteristic>(c.transfer) : AVCOL_TRC_UNSPECIFIED;
  ctx.colorspace = c.matrix ? static_cast<AVColorSpace>(c.matrix) : AVCOL_SPC_UNSPECIFIED;
  ctx.color_range = static_cast<AVColorRange>(c.range);
}

void scale_within(SwsContext* sws, AVPixelFormat format, int width, int height,
                  const uint8_t* const src[4], const int src_linesize[4], uint8_t* const dst[4],
                  const int dst_linesize[4], std::vector<uint8_t>& copy) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  int row_bytes[4] = {};
  if (!desc || height <= 0 || av_image_fill_linesizes(row_bytes, format, width) < 0) return;
  const int planes = av_pix_fmt_count_planes(format);
  int rows[4] = {};
  for (int p = 0; p < planes; ++p) {
    // Planes that hold chroma alone have subsampled rows.
    bool chroma = !(desc->flags & AV_PIX_FMT_FLAG_RGB);
    for (int c = 0; c < desc->nb_components; ++c) {
      if (desc->comp[c].plane == p && (c == 0 || c == 3)) chroma = false;
    }
    rows[p] = chroma ? -((-height) >> desc->log2_chroma_h) : height;
  }
  // Memory is readable a page at a time: a plane whose last row ends this far or more before
  // a 4 KiB boundary (every page size is a multiple of it) can be read past by that much.
  constexpr uintptr_t kPage = 4096;
  constexpr uintptr_t kPastTheEnd = 64;  // more than libswscale reads past a row
  bool near_an_end = false;
  for (int p = 0; p < planes; ++p) {
    const auto end = reinterpret_cast<uintptr_t>(
        src[p] + static_cast<ptrdiff_t>(rows[p] - 1) * src_linesize[p] + row_bytes[p]);
    near_an_end |= (kPage - end % kPage) % kPage < kPastTheEnd;
  }
  if (!near_an_end) {
    sws_scale(sws, src, src_linesize, 0, height, dst, dst_linesize);
    return;
  }
  // Else the picture from a copy with room after each plane. (Not its last rows alone, as a
  // second slice: libswscale 6 faults on slices into outputs a few pixels wide.)
  int linesize[4] = {};
  size_t offsets[4] = {}, bytes = 0;
  for (int p = 0; p < planes; ++p) {
    linesize[p] = (row_bytes[p] + 63) / 64 * 64;
    offsets[p] = bytes;
    bytes += static_cast<size_t>(rows[p]) * static_cast<size_t>(linesize[p]) + kPastTheEnd;
  }
  copy.resize(bytes);
  const uint8_t* from[4] = {};
  for (int p = 0; p < planes; ++p) {
    av_image_copy_plane(copy.data() + offsets[p], linesize[p], src[p], src_linesize[p],
                        row_bytes[p], rows[p]);
    from[p] = copy.data() + offsets[p];
  }
  sws_scale(sws, from, linesize, 0, height, dst, dst_linesize);
}

int sws_matrix(uint8_t matrix, uint32_t height) {
  switch (matrix) {
    case 1: return SWS_CS_ITU709;
    case 4: return SWS_CS_FCC;
    case 5:  // BT.601 625 and 525 (SMPTE 170M) share a matrix: libswscale's ITU601 is its
    case 6: return SWS_CS_ITU601;  // SMPTE170M
    case 7: return SWS_CS_SMPTE240M;
    case 9:
    case 10: return SWS_CS_BT2020;
    default: return height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601;
  }
}

std::string_view av_name(AVPixelFormat format) {
  const char* n = av_get_pix_fmt_name(format);
  return n ? n : "none";
}

void register_devices() {
  static std::once_flag once;
  std::call_once(once, [] { avdevice_register_all(); });
}

void capture_line(const std::string& line);

namespace {

thread_local LogCapture* t_capture = nullptr;

void log_callback(void* ptr, int level, const char* format, va_list args) {
  if (t_capture && level <= AV_LOG_ERROR) {
    va_list copy;
    va_copy(copy, args);
    char line[1024];
    int print_prefix = 0;
    av_log_format_line2(ptr, level, format, copy, line, sizeof line, &print_prefix);
    va_end(copy);
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (const auto bracket = text.find("] ");
        text.starts_with('[') && bracket != std::string::npos) {
      text.erase(0, bracket + 2);  // "[h264_nvenc @ 0x55...] " tells nothing to a reader
    }
    if (!text.empty()) capture_line(text);
  }
  av_log_default_callback(ptr, level, format, args);
}

}  // namespace

void capture_line(const std::string& line) {
  if (!t_capture) return;
  if (!t_capture->text_.empty()) t_capture->text_ += "; ";
  t_capture->text_ += line;
}

LogCapture::LogCapture() : outer_(t_capture) {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(log_callback); });
  t_capture = this;
}

LogCapture::~LogCapture() { t_capture = outer_; }

Error LogCapture::error(std::string_view who, std::string_view call, int averror) const {
  Error e = av_error(who, call, averror);
  if (text_.empty()) return e;
  return Error(e.code(), fmt::format("{} ({})", e.message(), text_), e.sys_errno());
}

bool is_device(const AVInputFormat* format) {
  if (!format || !format->priv_class) return false;
  const AVClassCategory category = format->priv_class->category;
  return category == AV_CLASS_CATEGORY_DEVICE_VIDEO_INPUT ||
         category == AV_CLASS_CATEGORY_DEVICE_AUDIO_INPUT ||
         category == AV_CLASS_CATEGORY_DEVICE_INPUT;
}

void SwrDeleter::operator()(SwrContext* swr) const noexcept { swr_free(&swr); }

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
}  // namespace

Result<AudioDecoder> AudioDecoder::open(const AVStream& stream, std::string_view who) {
  const AVCodec* codec = avcodec_find_decoder(stream.codecpar->codec_id);
  if (!codec) {
    return make_error(ErrorCode::unsupported, "{}: no decoder here for {} audio", who,
                      avcodec_get_name(stream.codecpar->codec_id));
  }
  AudioDecoder d;
  auto made = make_codec_context(codec, who);
  if (!made) return Unexpected(made.error());
  d.decoder = std::move(*made);
  AVCodecContext* dec = d.decoder.get();
  if (const int rc = avcodec_parameters_to_context(dec, stream.codecpar); rc < 0) {
    return Unexpected(av_error(who, "avcodec_parameters_to_context(audio)", rc));
  }
  dec->pkt_timebase = stream.time_base;
  if (const int rc = avcodec_open2(dec, codec, nullptr); rc < 0) {
    return Unexpected(av_error(who, fmt::format("avcodec_open2({})", codec->name), rc));
  }
  const int channels = dec->ch_layout.nb_channels;
  if (channels < 1 || channels > static_cast<int>(proto::kMaxAudioChannels) ||
      dec->sample_rate < static_cast<int>(proto::kMinSampleRate) ||
      dec->sample_rate > static_cast<int>(proto::kMaxSampleRate)) {
    return make_error(
        ErrorCode::unsupported,
        "{}: audio of {} channels at {} Hz; the protocol carries 1 to {} channels at {} to {} Hz",
        who, channels, dec->sample_rate, proto::kMaxAudioChannels, proto::kMinSampleRate,
        proto::kMaxSampleRate);
  }
  proto::AudioStart& f = d.format;
  f.sample_rate = static_cast<uint32_t>(dec->sample_rate);
  f.channels = static_cast<uint16_t>(channels);
  f.channel_layout = dec->ch_layout.order == AV_CHANNEL_ORDER_NATIVE ? dec->ch_layout.u.mask : 0;
  if (const auto as_is = carried(dec->sample_fmt)) {
    f.sample_format = *as_is;
    return d;
  }
  f.sample_format = proto::SampleFormat::f32p;
  SwrContext* swr = nullptr;
  if (const int rc =
          swr_alloc_set_opts2(&swr, &dec->ch_layout, AV_SAMPLE_FMT_FLTP, dec->sample_rate,
                              &dec->ch_layout, dec->sample_fmt, dec->sample_rate, 0, nullptr);
      rc < 0) {
    return Unexpected(av_error(who, "swr_alloc_set_opts2", rc));
  }
  d.swr.reset(swr);
  if (const int rc = swr_init(swr); rc < 0) return Unexpected(av_error(who, "swr_init", rc));
  return d;
}

Result<std::vector<std::byte>> AudioDecoder::samples(const AVFrame& frame,
                                                     std::string_view who) const {
  const auto n = static_cast<uint32_t>(frame.nb_samples);
  const uint32_t bps = proto::bytes_per_sample(format.sample_format);
  const uint32_t channels = format.channels;
  std::vector<std::byte> out(size_t{n} * channels * bps);
  if (swr) {
    uint8_t* planes[proto::kMaxAudioChannels] = {};
    for (uint32_t c = 0; c < channels; ++c)
      planes[c] = reinterpret_cast<uint8_t*>(out.data()) + size_t{c} * n * bps;
    const int done =
        swr_convert(swr.get(), planes, frame.nb_samples,
                    const_cast<const uint8_t**>(frame.extended_data), frame.nb_samples);
    if (done < 0) return Unexpected(av_error(who, "swr_convert", done));
  } else if (proto::planar(format.sample_format)) {
    for (uint32_t c = 0; c < channels; ++c) {
      std::memcpy(out.data() + size_t{c} * n * bps, frame.extended_data[c], size_t{n} * bps);
    }
  } else {
    std::memcpy(out.data(), frame.extended_data[0], out.size());
  }
  return out;
}

std::string AudioDecoder::describe() const {
  return fmt::format("{} {} Hz, {} channel{}, {}{}", decoder->codec->name, decoder->sample_rate,
                     format.channels, format.channels == 1 ? "" : "s",
                     av_get_sample_fmt_name(decoder->sample_fmt),
                     swr ? " (converted to fltp)" : "");
}

AVSampleFormat to_av(proto::SampleFormat format) {
  switch (format) {
    case proto::SampleFormat::s16: return AV_SAMPLE_FMT_S16;
    case proto::SampleFormat::s32: return AV_SAMPLE_FMT_S32;
    case proto::SampleFormat::f32: return AV_SAMPLE_FMT_FLT;
    case proto::SampleFormat::s16p: return AV_SAMPLE_FMT_S16P;
    case proto::SampleFormat::s32p: return AV_SAMPLE_FMT_S32P;
    case proto::SampleFormat::f32p: return AV_SAMPLE_FMT_FLTP;
  }
  return AV_SAMPLE_FMT_NONE;
}

AVChannelLayout layout_of(const proto::AudioStart& format) {
  AVChannelLayout layout{};
  if (format.channel_layout == 0 ||
      av_channel_layout_from_mask(&layout, format.channel_layout) < 0) {
    av_channel_layout_default(&layout, format.channels);
  }
  return layout;
}

void sample_planes(const proto::AudioStart& format, std::span<const std::byte> data,
                   uint32_t samples, uint32_t skip,
                   const uint8_t* planes[proto::kMaxAudioChannels]) {
  const uint32_t bps = proto::bytes_per_sample(format.sample_format);
  const auto* base = reinterpret_cast<const uint8_t*>(data.data());
  if (proto::planar(format.sample_format)) {
    for (uint32_t c = 0; c < format.channels; ++c)
      planes[c] = base + (size_t{c} * samples + skip) * bps;
  } else {
    planes[0] = base + size_t{skip} * format.channels * bps;
  }
}

}  // namespace rdmavideo::av
