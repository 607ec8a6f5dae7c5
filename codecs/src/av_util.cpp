// SPDX-License-Identifier: Apache-2.0
#include "av_util.hpp"

extern "C" {
#include <libavdevice/avdevice.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <array>
#include <cstdarg>
#include <mutex>
#include <utility>

#include "rdmavideo/log.hpp"

namespace rdmavideo::av {
namespace {

constexpr std::array<std::pair<PixelFormat, AVPixelFormat>, 9> kFormats{{
    {PixelFormat::nv12, AV_PIX_FMT_NV12},
    {PixelFormat::i420, AV_PIX_FMT_YUV420P},
    {PixelFormat::p010, AV_PIX_FMT_P010LE},
    {PixelFormat::uyvy, AV_PIX_FMT_UYVY422},
    {PixelFormat::yuy2, AV_PIX_FMT_YUYV422},
    {PixelFormat::rgba, AV_PIX_FMT_RGBA},
    {PixelFormat::bgra, AV_PIX_FMT_BGRA},
    {PixelFormat::rgb24, AV_PIX_FMT_RGB24},
    {PixelFormat::yuv422p10, AV_PIX_FMT_YUV422P10LE},
}};

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

Result<void> copy_cuda_frame(cuda::Stream& stream, const proto::StreamStart& format, cuda::DevicePtr at,
                             const AVFrame& cuda_frame, bool into_layout) {
  for (int p = 0; p < format.layout.plane_count; ++p) {
    const auto& plane = format.layout.planes[p];
    const auto ours = cuda::Pitched::device(at + plane.offset, plane.stride);
    const auto theirs = cuda::Pitched::device(reinterpret_cast<uintptr_t>(cuda_frame.data[p]),
                                              static_cast<size_t>(cuda_frame.linesize[p]));
    const size_t row_bytes = min_row_bytes(format.pixel_format, format.width, p);
    auto ok = into_layout ? stream.copy_2d_async(ours, theirs, row_bytes, plane.rows)
                          : stream.copy_2d_async(theirs, ours, row_bytes, plane.rows);
    if (!ok) return ok;
  }
  return stream.synchronize();
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
  // 4:2:2 and 4:4:4: keep the chroma rows.
  return deep ? PixelFormat::yuv422p10 : PixelFormat::uyvy;
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
    if (const auto bracket = text.find("] "); text.starts_with('[') && bracket != std::string::npos) {
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

}  // namespace rdmavideo::av
