// SPDX-License-Identifier: Apache-2.0
// How a frame of each pixel format reaches the display's SDL texture: the texture format it
// is shown with, and for the formats SDL has no texture format for, the conversion into one.
// The 10-bit formats become their 8-bit cousins (p010le -> NV12, yuv422p10le and v210 ->
// YUY2, 4:4:4 -> I420) by keeping each sample's top 8 bits: the display is for looking at a stream,
// and the recording, not the window, keeps the full depth.
//
// The display thread calls texture_format() when it (re)creates its texture and one of the
// converters for each frame of such a format, into a buffer it keeps between frames. The
// converters read the frame through the StreamStart's layout (any strides and offsets a peer
// sent) and write rows with no padding but what the texture format needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::recv_cli {

/// The SDL_PIXELFORMAT_* value a stream of `format` is shown with.
uint32_t texture_format(PixelFormat format);

/// The first byte of plane `plane` of `frame`.
const uint8_t* plane_data(const proto::StreamStart& format, std::span<const std::byte> frame,
                          int plane);

/// p010le -> NV12 in `out`: the luma rows, then the chroma rows, each row the returned pitch.
int p010_to_nv12(const proto::StreamStart& format, std::span<const std::byte> frame,
                 std::vector<uint8_t>& out);

/// yuv422p10le -> YUY2 (Y0 U Y1 V) in `out`, each row the returned pitch.
int yuv422p10_to_yuy2(const proto::StreamStart& format, std::span<const std::byte> frame,
                      std::vector<uint8_t>& out);

/// yuv444p, yuv444p10le, yuv444p12le -> IYUV (I420) in `out`: the luma plane, then the Cb and
/// Cr planes at half width and height (the top-left sample of each 2x2), each sample's top
/// 8 bits. Returns the luma pitch; the chroma planes' is half of it.
int yuv444_to_i420(const proto::StreamStart& format, std::span<const std::byte> frame,
                   std::vector<uint8_t>& out);

/// SDL's YUV-to-RGB conversion for a stream's colour (SDL_YUV_CONVERSION_*): full range is
/// JPEG's, a BT.601 matrix BT.601, anything else (BT.709, BT.2020, not said from 720 lines up)
/// BT.709, the nearest SDL 2 has.
int yuv_conversion_mode(const Colour& colour, uint32_t height);

/// v210 -> YUY2 (Y0 U Y1 V) in `out`, each row the returned pitch, unpacked by
/// rdmavideo::unpack_v210_row() (convert.hpp) as the recorder unpacks it.
int v210_to_yuy2(const proto::StreamStart& format, std::span<const std::byte> frame,
                 std::vector<uint8_t>& out);

}  // namespace rdmavideo::recv_cli
