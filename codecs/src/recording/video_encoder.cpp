// SPDX-License-Identifier: Apache-2.0
#include "video_encoder.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "rdmavideo/format.hpp"

namespace rdmavideo::av {

void describe_stream(AVCodecContext& context, const proto::StreamStart& format,
                     AVPixelFormat picture_format, bool global_header) {
  context.width = static_cast<int>(format.width);
  context.height = static_cast<int>(format.height);
  context.pix_fmt = picture_format;
  context.time_base =
      AVRational{static_cast<int>(format.frame_rate.den), static_cast<int>(format.frame_rate.num)};
  context.framerate =
      AVRational{static_cast<int>(format.frame_rate.num), static_cast<int>(format.frame_rate.den)};
  context.sample_aspect_ratio = AVRational{1, 1};
  if (global_header) context.flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  // The stream's colour goes into the encoder (ProRes frame headers, H.264/HEVC VUI) and from
  // there into the container: `colr` in .mov and .mp4, Colour elements in Matroska.
  set_colour(context, format.colour);
  if (traits(format.pixel_format).rgb &&
      !(av_pix_fmt_desc_get(picture_format)->flags & AV_PIX_FMT_FLAG_RGB)) {
    // RGB converted into YUV here: the matrix and range libswscale is told (Recorder::write).
    context.colorspace = format.height >= 720 ? AVCOL_SPC_BT709 : AVCOL_SPC_SMPTE170M;
    context.color_range = AVCOL_RANGE_MPEG;
  }
}

void stamp_colour(AVFrame& picture, const AVCodecContext& context) {
  picture.color_primaries = context.color_primaries;
  picture.color_trc = context.color_trc;
  picture.colorspace = context.colorspace;
  picture.color_range = context.color_range;
}

Result<std::unique_ptr<VideoEncoder>> open_video_encoder(
    const Choice& choice, const RecorderOptions& options, const proto::StreamStart& format,
    AVPixelFormat input_format, bool global_header, const std::string& who) {
  // The one place that knows which kind a recording gets: no FFmpeg encoder named is the
  // project's ProRes (kOwnProresEncoder).
  if (choice.encoder == nullptr) {
    return open_prores_encoder(choice, options, format, global_header, who);
  }
  return open_ffmpeg_encoder(choice, options, format, input_format, global_header, who);
}

}  // namespace rdmavideo::av
