// SPDX-License-Identifier: Apache-2.0
// How the recorder's pictures are coded: one seam over FFmpeg's encoders (NVENC among them,
// taking frames in GPU memory where they lie) and the project's ProRes (OwnProres, on a GPU or
// its CPU twin). The recorder prepares each host picture in the encoder's picture_format()
// (converting where it must), hands GPU frames to an encoder that takes_gpu_frames(), and
// writes the packets it is given into the file. Which encoder a recording gets is decided once,
// in open_video_encoder().
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "av_util.hpp"
#include "rdmavideo/av/recorder_options.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"
#include "recorder_choice.hpp"

namespace rdmavideo::av {

class VideoEncoder {
 public:
  /// A coded picture, its pts and duration in context()'s time base, for the file.
  using Packets = std::function<Result<void>(AVPacket& packet)>;

  virtual ~VideoEncoder() = default;

  /// The stream as the muxer is to describe it (codec, size, rates, colour): FFmpeg's
  /// context, opened where FFmpeg codes, filled and never opened for the project's ProRes.
  AVCodecContext& context() const { return *context_; }
  /// The pixel format host pictures are handed over in.
  AVPixelFormat picture_format() const { return picture_format_; }
  /// Whether frames in GPU memory are coded where they lie (else they are downloaded first).
  virtual bool takes_gpu_frames() const = 0;
  /// Whether the pictures are stored as they come (raw video, FFmpeg's wrapped frames): their
  /// words are then kept as they came.
  virtual bool stores_raw() const = 0;
  /// The muxer's tag for the stream where the encoder names one (the project's ProRes: its
  /// profile's FourCC; raw video: its pixel format's); 0: the muxer's own.
  virtual uint32_t codec_tag() const = 0;

  /// A host picture in picture_format(), its pts set.
  virtual Result<void> encode(AVFrame& picture, const Packets& out) = 0;
  /// A frame in GPU memory (takes_gpu_frames()) at `pts`; the lease goes back as soon as the
  /// encoder holds what it needs of it.
  virtual Result<void> encode(FrameLease frame, int64_t pts, const Packets& out) = 0;
  /// The stream's end: what the encoder still holds.
  virtual Result<void> flush(const Packets& out) = 0;

  /// The GPU's time for the last picture (ms); 0 where no GPU codes.
  virtual double gpu_ms() const { return 0; }
  /// "prores_ks (prores HQ) 1920x1080 yuv422p10le at 60 fps in mov, 2 threads" for the log.
  virtual std::string describe(std::string_view muxer) const = 0;

 protected:
  VideoEncoder(UniqueCodecContext context, AVPixelFormat picture_format)
      : context_(std::move(context)), picture_format_(picture_format) {}
  UniqueCodecContext context_;
  AVPixelFormat picture_format_;
};

/// What every encoder's stream is: `format`'s size and rate, square pixels, its colour (RGB
/// into YUV: BT.709 from 720 lines, else BT.601, limited), pictures in `picture_format`.
void describe_stream(AVCodecContext& context, const proto::StreamStart& format,
                     AVPixelFormat picture_format, bool global_header);
/// Stamps a picture with the stream's colour: encoders that write colour into each picture
/// (ProRes' frame header) take it from the frame, not the context.
void stamp_colour(AVFrame& picture, const AVCodecContext& context);

/// The encoder `choice` names for a stream of `format`, whose host pictures come in
/// `input_format`; `global_header`: the container wants the codec's headers out of band.
Result<std::unique_ptr<VideoEncoder>> open_video_encoder(
    const Choice& choice, const RecorderOptions& options, const proto::StreamStart& format,
    AVPixelFormat input_format, bool global_header, const std::string& who);

// The two kinds, each opened through open_video_encoder().
Result<std::unique_ptr<VideoEncoder>> open_ffmpeg_encoder(
    const Choice& choice, const RecorderOptions& options, const proto::StreamStart& format,
    AVPixelFormat input_format, bool global_header, const std::string& who);
Result<std::unique_ptr<VideoEncoder>> open_prores_encoder(const Choice& choice,
                                                          const RecorderOptions& options,
                                                          const proto::StreamStart& format,
                                                          bool global_header,
                                                          const std::string& who);

}  // namespace rdmavideo::av
