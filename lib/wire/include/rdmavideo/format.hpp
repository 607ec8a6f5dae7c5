// SPDX-License-Identifier: Apache-2.0
// Pixel formats, frame rates and the plane layout of a frame: the one place where plane
// sizes, strides and offsets are computed.
//
// The canonical layout packs planes one after the other with no padding between rows, the
// way FFmpeg's rawvideo muxer and demuxer lay frames out (av_image_get_buffer_size with
// alignment 1), so `ffmpeg -f rawvideo -` output can be sent unchanged and received frames
// can be piped back into ffmpeg. v210 has no FFmpeg pixel format; its rows are padded to
// 128 bytes per 48 pixels, as FFmpeg's v210 encoder and every capture card write it.
// A stream may carry other strides and offsets (GStreamer pads rows); validate_layout()
// checks any layout against its format.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo {

/// Wire values: never renumber.
enum class PixelFormat : uint32_t {
  nv12 = 1,
  i420 = 2,       // FFmpeg yuv420p
  p010 = 3,       // FFmpeg p010le
  uyvy = 4,       // FFmpeg uyvy422
  yuy2 = 5,       // FFmpeg yuyv422
  v210 = 6,       // 10-bit 4:2:2 packed, 128 bytes per 48 pixels
  rgba = 7,
  bgra = 8,
  rgb24 = 9,
  yuv422p10 = 10,  // FFmpeg yuv422p10le, ProRes' native input
};

inline constexpr int kMaxPlanes = 4;
inline constexpr uint32_t kMaxDimension = 16384;

/// Every format we carry, in wire order.
std::span<const PixelFormat> all_pixel_formats();

/// FFmpeg's name (nv12, yuv420p, ..., v210). Used on the command line and in stats.
std::string_view name(PixelFormat format);
/// Accepts FFmpeg's names plus the common aliases (i420, uyvy, yuy2, p010).
std::optional<PixelFormat> parse_pixel_format(std::string_view text);
/// Valid wire value?
std::optional<PixelFormat> pixel_format_from_wire(uint32_t value);
/// "nv12, yuv420p, ..." for error messages.
std::string pixel_format_names();

/// The chroma subsampling and bit depth facts other layers need.
struct FormatTraits {
  int planes;          ///< number of planes
  int bits;            ///< bits per component (8 or 10)
  bool rgb;            ///< RGB family rather than YUV
  int chroma_shift_x;  ///< log2 of horizontal chroma subsampling
  int chroma_shift_y;  ///< log2 of vertical chroma subsampling
};
FormatTraits traits(PixelFormat format);

struct Plane {
  uint32_t offset = 0;  ///< bytes from the start of the frame
  uint32_t stride = 0;  ///< bytes from one row to the next
  uint32_t rows = 0;    ///< rows in this plane
};

struct FrameLayout {
  int plane_count = 0;
  std::array<Plane, kMaxPlanes> planes{};
  uint32_t frame_bytes = 0;  ///< bytes of the whole frame (end of the last plane)
};

/// Bytes of pixel data in one row of a plane (the least stride that plane may have).
uint32_t min_row_bytes(PixelFormat format, uint32_t width, int plane);
/// Rows in a plane.
uint32_t plane_rows(PixelFormat format, uint32_t height, int plane);

/// The canonical layout; fails on a zero or too large dimension.
Result<FrameLayout> canonical_layout(PixelFormat format, uint32_t width, uint32_t height);

/// Checks a layout a peer sent: plane count, strides at least the row bytes, planes in
/// order without overlap and inside frame_bytes. The error names the first bad field.
Result<void> validate_layout(PixelFormat format, uint32_t width, uint32_t height,
                             const FrameLayout& layout);

struct Rational {
  uint32_t num = 0;
  uint32_t den = 1;
  double value() const { return den ? static_cast<double>(num) / den : 0.0; }
};

/// Parses "60", "59.94", "30000/1001", "29.97"; NTSC decimal rates map to /1001.
std::optional<Rational> parse_frame_rate(std::string_view text);
std::string to_string(Rational rate);

/// Parses "1920x1080".
std::optional<std::pair<uint32_t, uint32_t>> parse_size(std::string_view text);

}  // namespace rdmavideo
