// SPDX-License-Identifier: Apache-2.0
// The C API's formats: video and audio formats to the protocol's, and frame layouts.
#include <fmt/format.h>

#include "c_api.hpp"
#include "rdmavideo/format.hpp"

namespace rdmavideo::c_api {

Result<std::string> checked_name(std::string_view name, std::string_view what) {
  if (name.size() >= proto::kNameBytes) {
    return make_error(ErrorCode::invalid_argument, "{} \"{}\" is longer than {} bytes", what, name,
                      proto::kNameBytes - 1);
  }
  return std::string(name);
}

Result<proto::StreamStart> stream_start(const rdmavideo_video_format& f,
                                        std::string_view default_name) {
  const std::string_view pix_fmt = f.pix_fmt ? f.pix_fmt : "uyvy422";
  const auto pixel_format = parse_pixel_format(pix_fmt);
  if (!pixel_format) {
    return make_error(ErrorCode::invalid_argument, "pix_fmt \"{}\" unknown ({})", pix_fmt,
                      pixel_format_names());
  }
  if (f.fps_num == 0 || f.fps_den == 0) {
    return make_error(ErrorCode::invalid_argument, "frame rate {}/{} is not a rate", f.fps_num,
                      f.fps_den);
  }
  auto format =
      proto::make_stream_start(*pixel_format, f.width, f.height, Rational{f.fps_num, f.fps_den});
  if (!format) return Unexpected(format.error());
  if (f.colour && *f.colour) {
    const auto colour = parse_colour(f.colour);
    if (!colour) {
      return make_error(ErrorCode::invalid_argument,
                        "colour \"{}\" unknown (bt601, bt709, srgb, bt2100-pq, bt2100-hlg, "
                        "each optionally \"full\" or \"limited\")",
                        f.colour);
    }
    format->colour = *colour;
  }
  auto name = checked_name(f.name ? std::string_view(f.name) : default_name, "name");
  if (!name) return Unexpected(name.error());
  format->name = std::move(*name);
  return format;
}

rdmavideo_layout layout_of(const proto::StreamStart& format) {
  rdmavideo_layout layout{};
  layout.plane_count = static_cast<uint32_t>(format.layout.plane_count);
  for (int p = 0; p < format.layout.plane_count && p < RDMAVIDEO_MAX_PLANES; ++p) {
    layout.offset[p] = format.layout.planes[p].offset;
    layout.stride[p] = format.layout.planes[p].stride;
    layout.rows[p] = format.layout.planes[p].rows;
  }
  layout.frame_bytes = format.layout.frame_bytes;
  return layout;
}

Result<proto::AudioStart> audio_start(const rdmavideo_audio_format& f) {
  proto::AudioStart start;
  const auto sample_format = static_cast<uint32_t>(f.sample_format);
  if (sample_format < RDMAVIDEO_SAMPLES_S16 || sample_format > RDMAVIDEO_SAMPLES_F32P) {
    return make_error(ErrorCode::invalid_argument, "sample_format {} unknown (1..6)",
                      sample_format);
  }
  start.sample_format = static_cast<proto::SampleFormat>(sample_format);
  if (f.sample_rate == 0) return make_error(ErrorCode::invalid_argument, "sample_rate 0");
  start.sample_rate = f.sample_rate;
  if (f.channels == 0 || f.channels > proto::kMaxAudioChannels) {
    return make_error(ErrorCode::invalid_argument, "channels {} (1..{})", f.channels,
                      proto::kMaxAudioChannels);
  }
  start.channels = static_cast<uint16_t>(f.channels);
  start.channel_layout = f.channel_layout;
  if (f.name) {
    auto name = checked_name(f.name, "track name");
    if (!name) return Unexpected(name.error());
    start.name = std::move(*name);
  }
  return start;
}

}  // namespace rdmavideo::c_api

using namespace rdmavideo;

extern "C" {

void rdmavideo_video_format_init(rdmavideo_video_format* format) {
  if (!format) return;
  *format = rdmavideo_video_format{};
  format->struct_size = sizeof(*format);
  format->pix_fmt = "uyvy422";
  format->fps_num = 60;
  format->fps_den = 1;
}

void rdmavideo_audio_format_init(rdmavideo_audio_format* format) {
  if (!format) return;
  *format = rdmavideo_audio_format{};
  format->struct_size = sizeof(*format);
  format->sample_format = RDMAVIDEO_SAMPLES_F32;
  format->sample_rate = 48000;
  format->channels = 2;
}

rdmavideo_status rdmavideo_video_format_layout(const rdmavideo_video_format* format,
                                               rdmavideo_layout* layout) {
  return c_api::guarded("rdmavideo_video_format_layout", [&] {
    if (!format || !layout) return c_api::invalid("rdmavideo_video_format_layout: a NULL");
    const auto f = c_api::read_struct(*format, rdmavideo_video_format_init);
    auto start = c_api::stream_start(f, "");
    if (!start) return c_api::fail(start.error());
    *layout = c_api::layout_of(*start);
    return RDMAVIDEO_OK;
  });
}

}  // extern "C"
