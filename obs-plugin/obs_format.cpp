// SPDX-License-Identifier: Apache-2.0
#include "obs_format.hpp"

namespace rdmavideo::obs {

std::optional<PixelFormat> carried(video_format format) {
  switch (format) {
    case VIDEO_FORMAT_NV12: return PixelFormat::nv12;
    case VIDEO_FORMAT_I420: return PixelFormat::i420;
    case VIDEO_FORMAT_P010: return PixelFormat::p010;
    case VIDEO_FORMAT_UYVY: return PixelFormat::uyvy;
    case VIDEO_FORMAT_YUY2: return PixelFormat::yuy2;
    case VIDEO_FORMAT_RGBA: return PixelFormat::rgba;
    case VIDEO_FORMAT_BGRA:
    case VIDEO_FORMAT_BGRX: return PixelFormat::bgra;  // X is an alpha nobody reads
    case VIDEO_FORMAT_I210: return PixelFormat::yuv422p10;
    case VIDEO_FORMAT_I444: return PixelFormat::yuv444p;
    case VIDEO_FORMAT_I412: return PixelFormat::yuv444p12;
    default: return std::nullopt;
  }
}

video_format nearest_carried(video_format format) {
  if (carried(format)) return format;
  switch (format) {
    case VIDEO_FORMAT_I010: return VIDEO_FORMAT_P010;  // the same 10-bit 4:2:0 samples
    case VIDEO_FORMAT_YVYU: return VIDEO_FORMAT_YUY2;
    case VIDEO_FORMAT_I422:
    case VIDEO_FORMAT_I42A: return VIDEO_FORMAT_UYVY;  // 8-bit 4:2:2
    case VIDEO_FORMAT_I40A:
    case VIDEO_FORMAT_Y800: return VIDEO_FORMAT_I420;
    case VIDEO_FORMAT_YUVA:
    case VIDEO_FORMAT_AYUV: return VIDEO_FORMAT_I444;
    case VIDEO_FORMAT_YA2L: return VIDEO_FORMAT_I412;
    case VIDEO_FORMAT_BGR3: return VIDEO_FORMAT_BGRA;
    default: return VIDEO_FORMAT_NV12;
  }
}

Colour colour_of(video_colorspace space, video_range_type range, video_format format) {
  Colour c;
  switch (space) {
    case VIDEO_CS_601:
      c = {colour::kBt601_525, colour::kTransferBt601, colour::kBt601_525, 0};
      break;
    case VIDEO_CS_DEFAULT:
    case VIDEO_CS_709: c = {colour::kBt709, colour::kBt709, colour::kBt709, 0}; break;
    case VIDEO_CS_SRGB: c = {colour::kBt709, colour::kTransferSrgb, colour::kBt709, 0}; break;
    case VIDEO_CS_2100_PQ:
      c = {colour::kBt2020, colour::kTransferPq, colour::kMatrixBt2020Ncl, 0};
      break;
    case VIDEO_CS_2100_HLG:
      c = {colour::kBt2020, colour::kTransferHlg, colour::kMatrixBt2020Ncl, 0};
      break;
  }
  const auto ours = carried(format);
  if (ours && traits(*ours).rgb) {
    c.matrix = 0;  // RGB is RGB
    c.range = colour::kFull;
  } else {
    c.range = range == VIDEO_RANGE_FULL ? colour::kFull : colour::kLimited;
  }
  return c;
}

VideoPlan plan_video(const video_output_info& canvas) {
  VideoPlan plan;
  const video_format out = nearest_carried(canvas.format);
  plan.format = *carried(out);
  // libobs' DEFAULTs, said: the conversion and the wire agree on what they mean.
  const video_colorspace space =
      canvas.colorspace == VIDEO_CS_DEFAULT ? VIDEO_CS_709 : canvas.colorspace;
  const video_range_type range =
      canvas.range == VIDEO_RANGE_DEFAULT ? VIDEO_RANGE_PARTIAL : canvas.range;
  plan.colour = colour_of(space, range, out);
  if (out != canvas.format) {
    plan.conversion = video_scale_info{out, canvas.width, canvas.height, range, space};
  }
  return plan;
}

const char* format_name(video_format format) { return get_video_format_name(format); }

uint64_t channel_mask(speaker_layout speakers) {
  constexpr uint64_t FL = 0x1, FR = 0x2, FC = 0x4, LFE = 0x8, BL = 0x10, BR = 0x20, BC = 0x100,
                     SL = 0x200, SR = 0x400;
  switch (speakers) {
    case SPEAKERS_MONO: return FC;
    case SPEAKERS_STEREO: return FL | FR;
    case SPEAKERS_2POINT1: return FL | FR | LFE;
    case SPEAKERS_4POINT0: return FL | FR | FC | BC;
    case SPEAKERS_4POINT1: return FL | FR | FC | LFE | BC;
    case SPEAKERS_5POINT1: return FL | FR | FC | LFE | BL | BR;
    case SPEAKERS_7POINT1: return FL | FR | FC | LFE | BL | BR | SL | SR;
    default: return 0;
  }
}

proto::AudioStart audio_track(uint32_t sample_rate, speaker_layout speakers,
                              const std::string& name) {
  proto::AudioStart a;
  a.sample_format = proto::SampleFormat::f32p;
  a.sample_rate = sample_rate;
  a.channels = static_cast<uint16_t>(get_audio_channels(speakers));
  a.channel_layout = channel_mask(speakers);
  a.name = name;
  return a;
}

}  // namespace rdmavideo::obs
