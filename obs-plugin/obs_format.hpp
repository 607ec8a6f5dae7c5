// SPDX-License-Identifier: Apache-2.0
// What OBS's canvas becomes on the wire: its pixel format, colour space and range as one of
// the protocol's formats and an H.273 colour, and its mix tracks as audio streams.
//
// OBS's own format passes through where the protocol carries it (NV12, I420, P010, UYVY,
// YUY2, RGBA, BGRA, BGRX as bgra, I210 as yuv422p10le, I444 as yuv444p, I412 as
// yuv444p12le). Anything else is converted by libobs into the nearest carried format,
// with the range and colour space always set (a conversion that leaves them DEFAULT gets
// libobs' silent defaults): I010 becomes P010, so nothing is chroma-subsampled silently.
#pragma once

#include <media-io/audio-io.h>
#include <media-io/video-io.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::obs {

/// How one OBS canvas goes out.
struct VideoPlan {
  PixelFormat format = PixelFormat::nv12;  ///< on the wire
  Colour colour;                           ///< on the wire
  /// The format OBS must convert into first (obs_output_set_video_conversion), with range
  /// and colour space set; nullopt when OBS's frames go out as they are.
  std::optional<video_scale_info> conversion;
};

/// The protocol format OBS's `format` is carried as, when it is carried without conversion.
std::optional<PixelFormat> carried(video_format format);
/// The carried OBS format nearest to `format` (alpha dropped, depth and chroma kept).
video_format nearest_carried(video_format format);
/// H.273 colour of OBS's colour space and range for frames of `format` (RGB formats: no
/// matrix, full range). DEFAULT colour space is BT.709 and DEFAULT range is limited, as
/// libobs itself reads them.
Colour colour_of(video_colorspace space, video_range_type range, video_format format);
/// The plan for a canvas.
VideoPlan plan_video(const video_output_info& canvas);

/// OBS's name of a format ("NV12", "I010", ...) for messages.
const char* format_name(video_format format);

/// An audio stream for one OBS mix track: float planar (as OBS mixes it), OBS's rate and
/// channels, the WAVE mask of OBS's speaker layout, named `name`.
proto::AudioStart audio_track(uint32_t sample_rate, speaker_layout speakers,
                              const std::string& name);
/// WAVE channel mask of an OBS speaker layout (0 for unknown).
uint64_t channel_mask(speaker_layout speakers);

}  // namespace rdmavideo::obs
