// SPDX-License-Identifier: Apache-2.0
// The libav plumbing every codecs/ file shares: an owner (unique_ptr with a stateless
// deleter) for each libav handle and a factory that pairs each alloc with its free; AVERROR
// to Error with av_strerror text; and the one mapping between our PixelFormat and FFmpeg's
// AVPixelFormat.
//
// v210 has no AVPixelFormat (FFmpeg treats it as a codec), so to_av(v210) is nullopt and the
// FFmpeg source and recorder reject it with an `unsupported` error naming the format.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

struct InputContextDeleter {
  void operator()(AVFormatContext* ctx) const noexcept { avformat_close_input(&ctx); }
};
using UniqueInputContext = std::unique_ptr<AVFormatContext, InputContextDeleter>;

// An output context and the file it writes: the AVIOContext is closed here only as the
// fallback; Recorder::finish() closes it and reports the error.
struct OutputContextDeleter {
  void operator()(AVFormatContext* ctx) const noexcept;
};
using UniqueOutputContext = std::unique_ptr<AVFormatContext, OutputContextDeleter>;

/// A custom AVIOContext (avio_alloc_context) and its buffer; the opaque is the caller's.
struct IoContextDeleter {
  void operator()(AVIOContext* ctx) const noexcept;
};
using UniqueIoContext = std::unique_ptr<AVIOContext, IoContextDeleter>;

struct CodecContextDeleter {
  void operator()(AVCodecContext* ctx) const noexcept { avcodec_free_context(&ctx); }
};
using UniqueCodecContext = std::unique_ptr<AVCodecContext, CodecContextDeleter>;

struct FrameDeleter {
  void operator()(AVFrame* frame) const noexcept { av_frame_free(&frame); }
};
using UniqueFrame = std::unique_ptr<AVFrame, FrameDeleter>;

struct PacketDeleter {
  void operator()(AVPacket* packet) const noexcept { av_packet_free(&packet); }
};
using UniquePacket = std::unique_ptr<AVPacket, PacketDeleter>;

struct SwsDeleter {
  void operator()(SwsContext* sws) const noexcept { sws_freeContext(sws); }
};
using UniqueSws = std::unique_ptr<SwsContext, SwsDeleter>;

struct BufferRefDeleter {
  void operator()(AVBufferRef* ref) const noexcept { av_buffer_unref(&ref); }
};
using UniqueBufferRef = std::unique_ptr<AVBufferRef, BufferRefDeleter>;

struct DictionaryDeleter {
  void operator()(AVDictionary* dict) const noexcept { av_dict_free(&dict); }
};

// Factories: each allocation is owned from the line that makes it.
Result<UniqueCodecContext> make_codec_context(const AVCodec* codec, std::string_view who);
Result<UniqueFrame> make_frame(std::string_view who);
Result<UniquePacket> make_packet(std::string_view who);

/// av_strerror text for an AVERROR value.
std::string error_text(int averror);
/// "<who>: <call> failed: <av_strerror text>" as an Error; AVERROR(errno) keeps the errno.
Error av_error(std::string_view who, std::string_view call, int averror);

/// What FFmpeg logs at error level on this thread while it lives (FFmpeg still prints it):
/// the reason behind an AVERROR that says little on its own, such as NVENC's "no encode
/// device" behind avcodec_open2's "Function not implemented".
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  /// The lines logged, joined with "; ".
  const std::string& text() const { return text_; }
  /// av_error() with what FFmpeg said, where it said anything.
  Error error(std::string_view who, std::string_view call, int averror) const;

 private:
  friend void capture_line(const std::string& line);
  std::string text_;
  LogCapture* outer_ = nullptr;
};

/// FFmpeg's CUDA device on `stream`'s GPU: our primary context, and `stream` itself as
/// AVCUDADeviceContext.stream, so that the work FFmpeg queues there (NVDEC maps and copies
/// each decoded picture into its frame on that stream; NVENC reads its input there) and our
/// copies of the same frames run in one order. av_hwdevice_ctx_create would leave FFmpeg on
/// the legacy NULL stream, which our streams (non-blocking) do not wait for, and with
/// primary_ctx it refuses a primary context that is already active with flags other than
/// its own. `stream` must outlive the device and everything made from it (decoders,
/// encoders, frame pools).
Result<UniqueBufferRef> cuda_device_on(cuda::Stream& stream, std::string_view who);

/// Copies, plane by plane on the GPU, between a frame of FFmpeg's CUDA frames (device
/// pointers with pitches: an NVDEC surface, a frame of an NVENC pool) and the frame at `at`
/// laid out as `format` says: into `at` where `into_layout`, else out of it. Waits for it.
Result<void> copy_cuda_frame(cuda::Stream& stream, const proto::StreamStart& format,
                             cuda::DevicePtr at, const AVFrame& cuda_frame, bool into_layout);

/// Our format as FFmpeg's; nullopt for v210 (no AVPixelFormat).
std::optional<AVPixelFormat> to_av(PixelFormat format);
/// FFmpeg's format as ours, when we carry it as is.
std::optional<PixelFormat> from_av(AVPixelFormat format);
/// The format we carry that keeps the most of `format` (depth, chroma, RGB), for inputs
/// whose own format we do not carry (yuv444p, yuvj420p, gbrp10le, ...).
PixelFormat nearest_carried(AVPixelFormat format);
/// FFmpeg's colour fields (AVColorPrimaries, ..., AVColorRange) as ours; FFmpeg's
/// "unspecified" and a code point H.273 does not have are "not said".
Colour colour_of(int primaries, int transfer, int matrix, int range);
/// Ours into an encoder's context ("not said" is FFmpeg's unspecified).
void set_colour(AVCodecContext& ctx, const Colour& colour);
/// libswscale's SWS_CS_* for an H.273 matrix; not said: BT.709 from 720 lines up, else
/// BT.601, as FFmpeg's players assume.
int sws_matrix(uint8_t matrix, uint32_t height);
/// sws_scale() of a whole `width` x `height` picture of `format` that reads nothing past the
/// end of its planes' last rows. libswscale reads its input in whole vectors, past a row's
/// end: beyond a frame that ends where its memory does (a page-sized frame in a ring's last
/// slot, a frame of a peer's layout) that faults (rgb24 1280x720, nv12 and uyvy of odd sizes,
/// ...). A picture whose planes end within 64 bytes of a page's end is scaled from a copy
/// with room after each plane, in `copy`; any other is read where it is.
void scale_within(SwsContext* sws, AVPixelFormat format, int width, int height,
                  const uint8_t* const src[4], const int src_linesize[4], uint8_t* const dst[4],
                  const int dst_linesize[4], std::vector<uint8_t>& copy);
/// FFmpeg's name of a pixel format, "none" for AV_PIX_FMT_NONE.
std::string_view av_name(AVPixelFormat format);

/// Registers libavdevice's inputs (v4l2, x11grab, lavfi, ...) once; thread-safe.
void register_devices();
/// Whether `format` is a capture device of libavdevice (v4l2, x11grab, alsa, pulse, lavfi).
bool is_device(const AVInputFormat* format);

struct SwrDeleter {
  void operator()(SwrContext* swr) const noexcept;
};
using UniqueSwr = std::unique_ptr<SwrContext, SwrDeleter>;
struct AudioFifoDeleter {
  void operator()(AVAudioFifo* fifo) const noexcept { av_audio_fifo_free(fifo); }
};
using UniqueAudioFifo = std::unique_ptr<AVAudioFifo, AudioFifoDeleter>;

/// The protocol's sample format as FFmpeg names it.
AVSampleFormat to_av(proto::SampleFormat format);
/// An AudioStart's channel layout: its WAVE mask, or the default order for its channel count
/// where the mask is 0 or not one FFmpeg takes. The caller uninits it.
AVChannelLayout layout_of(const proto::AudioStart& format);
/// The samples of a chunk as libswresample takes them: one pointer per channel for planar
/// formats (each channel's `samples` in turn), one for interleaved; `skip` samples left out.
void sample_planes(const proto::AudioStart& format, std::span<const std::byte> data,
                   uint32_t samples, uint32_t skip,
                   const uint8_t* planes[proto::kMaxAudioChannels]);

/// One audio stream of an input decoded into a format the protocol carries: the decoder's
/// own where it is one (s16, s32, float; planar or not), else converted by libswresample to
/// float planar. `format` is the track's AudioStart without stream id or name.
struct AudioDecoder {
  UniqueCodecContext decoder;
  UniqueSwr swr;  // where the decoder's format is not carried
  proto::AudioStart format;

  /// Opens the decoder of `stream`; an error names channels or a rate the protocol does
  /// not carry.
  static Result<AudioDecoder> open(const AVStream& stream, std::string_view who);
  /// A decoded frame's samples in `format` (planar: each channel in turn).
  Result<std::vector<std::byte>> samples(const AVFrame& frame, std::string_view who) const;
  /// "aac 48000 Hz, 2 channels, fltp" for the log.
  std::string describe() const;
};

}  // namespace rdmavideo::av
