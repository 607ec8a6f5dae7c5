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
  i420 = 2,  // FFmpeg yuv420p
  p010 = 3,  // FFmpeg p010le
  uyvy = 4,  // FFmpeg uyvy422
  yuy2 = 5,  // FFmpeg yuyv422
  v210 = 6,  // 10-bit 4:2:2 packed, 128 bytes per 48 pixels
  rgba = 7,
  bgra = 8,
  rgb24 = 9,
  yuv422p10 = 10,  // FFmpeg yuv422p10le, ProRes' native input
  yuv444p = 11,    // 8-bit 4:4:4 planar (OBS's I444)
  yuv444p10 = 12,  // FFmpeg yuv444p10le, ProRes 4444's native input
  yuv444p12 = 13,  // FFmpeg yuv444p12le (OBS's I412)
};

inline constexpr int kMaxPlanes = 4;
inline constexpr uint32_t kMaxDimension = 16384;
/// The largest frame the protocol carries (proto::kMaxFrameBytes): 16384x16384 RGBA. The
/// 16-bit 4:4:4 formats reach it below kMaxDimension squared.
inline constexpr uint64_t kMaxFrameBytesOfAnyFormat = uint64_t{1} << 30;

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
  int bits;            ///< bits per component (8, 10 or 12)
  bool rgb;            ///< RGB family rather than YUV
  int chroma_shift_x;  ///< log2 of horizontal chroma subsampling
  int chroma_shift_y;  ///< log2 of vertical chroma subsampling
};
FormatTraits traits(PixelFormat format);

struct Plane {
  uint32_t offset = 0;  ///< bytes from the start of the frame
  uint32_t stride = 0;  ///< bytes from one row to the next
  uint32_t rows = 0;    ///< rows in this plane
  bool operator==(const Plane&) const = default;
};

struct FrameLayout {
  int plane_count = 0;
  std::array<Plane, kMaxPlanes> planes{};
  uint32_t frame_bytes = 0;  ///< bytes of the whole frame (end of the last plane)
  bool operator==(const FrameLayout&) const = default;
};

/// Bytes of pixel data in one row of a plane (the least stride that plane may have).
uint32_t min_row_bytes(PixelFormat format, uint32_t width, int plane);
/// Rows in a plane.
uint32_t plane_rows(PixelFormat format, uint32_t height, int plane);

/// A plane of a frame laid out by someone else (GStreamer, OBS, FFmpeg, a packed file): its
/// first row, and the bytes from one row to the next.
struct ForeignPlane {
  std::byte* data = nullptr;
  size_t stride = 0;
};
enum class CopyDirection { to_wire, from_wire };
/// The one copy of a frame's planes between its wire layout (`wire`, the frame at
/// `wire_frame`) and `foreign`'s (one per plane): each row's bytes up to the lesser of the two
/// strides, a plane in one copy where the strides agree.
void copy_planes(const FrameLayout& wire, std::byte* wire_frame,
                 std::span<const ForeignPlane> foreign, CopyDirection direction);

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
  /// The same numerator and denominator (30/1 and 60/2 differ: the wire carries both).
  bool operator==(const Rational&) const = default;
};

/// Parses "60", "59.94", "30000/1001", "29.97"; NTSC decimal rates map to /1001.
std::optional<Rational> parse_frame_rate(std::string_view text);
std::string to_string(Rational rate);

/// How a stream's samples map to light: ITU-T H.273 code points, the numbers FFmpeg's
/// AVColorPrimaries, AVColorTransferCharacteristic, AVColorSpace and AVColorRange use.
/// 0 in a field means "not said" (the receiver assumes what it would without it); so the
/// matrix's H.273 0 (identity, GBR in YUV planes) cannot be said, and needs not be: the RGB
/// formats are RGB.
struct Colour {
  uint8_t primaries = 0;  ///< 1 BT.709, 5 BT.601 625, 6 BT.601 525, 9 BT.2020
  uint8_t transfer = 0;   ///< 1 BT.709, 6 BT.601, 13 sRGB, 14 BT.2020, 16 PQ, 18 HLG
  uint8_t matrix = 0;     ///< 1 BT.709, 5 BT.601 625, 6 BT.601 525, 9 BT.2020 non-constant
  uint8_t range = 0;      ///< 1 limited (16-235 at 8 bits), 2 full
  bool operator==(const Colour&) const = default;
  bool said() const { return primaries || transfer || matrix || range; }
};
namespace colour {
inline constexpr uint8_t kBt709 = 1, kBt601_625 = 5, kBt601_525 = 6, kBt2020 = 9;
inline constexpr uint8_t kTransferBt601 = 6, kTransferSrgb = 13, kTransferBt2020_10 = 14,
                         kTransferPq = 16, kTransferHlg = 18;
inline constexpr uint8_t kMatrixBt2020Ncl = 9;
inline constexpr uint8_t kLimited = 1, kFull = 2;
/// The largest code point H.273 defines in each field (primaries 22 is EBU 3213).
inline constexpr uint8_t kMaxPrimaries = 22, kMaxTransfer = 18, kMaxMatrix = 14, kMaxRange = 2;
}  // namespace colour
/// Each field within H.273's code points (and not one H.273 reserves); the error names the
/// field and its value.
Result<void> validate(const Colour& colour);
/// "bt709/bt709/bt709 limited", "bt2020/smpte2084/bt2020nc full" (FFmpeg's names), "not said".
std::string describe(const Colour& colour);
/// Parses what describe() writes, or one of the presets bt601, bt709, srgb, bt2100-pq,
/// bt2100-hlg, each optionally followed by " full" or " limited" (else limited, or full for
/// srgb).
std::optional<Colour> parse_colour(std::string_view text);

/// Parses "1920x1080".
std::optional<std::pair<uint32_t, uint32_t>> parse_size(std::string_view text);

}  // namespace rdmavideo
