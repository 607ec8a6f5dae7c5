// SPDX-License-Identifier: Apache-2.0
// Pixel conversions more than one consumer of received frames needs, as pure functions on
// memory the caller owns: no allocation, no FFmpeg, no SDL. The one today is v210 to planar
// 10-bit 4:2:2. v210 has no FFmpeg pixel format and no SDL texture format, so the recorder
// (codecs/) unpacks each frame with unpack_v210() before it hands the samples to libav as
// yuv422p10le, and the receiver's display (receiver/) unpacks it a row at a time with
// unpack_v210_row() before it narrows the samples to an 8-bit YUY2 texture. Both therefore
// read the same samples out of the same words.
//
// v210 layout: each row is a run of 16-byte groups, one group per 6 pixels. A group is four
// little-endian 32-bit words, each holding three 10-bit samples in bits 0-9, 10-19 and 20-29
// (bits 30-31 unused), in this order:
//
//     word 0: Cb0 Y0  Cr0     word 2: Cr1 Y3  Cb2
//     word 1: Y1  Cb1 Y2      word 3: Y4  Cr2 Y5
//
// so a group carries 6 Y samples and 3 Cb/Cr pairs (4:2:2: Cb_i and Cr_i belong to pixels 2i
// and 2i+1). A row of `width` pixels uses ceil(width / 6) groups; the samples of the last group
// past `width` are padding. Rows are padded further to 128 bytes per 48 pixels, and a stream's
// stride may be larger still (see min_row_bytes() in format.hpp).
//
// Output layout: samples are 10-bit values in the low bits of native uint16_t (on the
// little-endian hosts we build for, exactly FFmpeg's yuv422p10le words). A row of `width`
// pixels gives `width` Y samples and chroma_width = (width + 1) / 2 Cb and as many Cr samples.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmavideo {

/// Pixels in one 16-byte v210 group.
inline constexpr uint32_t kV210GroupPixels = 6;
/// Bytes of one v210 group.
inline constexpr uint32_t kV210GroupBytes = 16;

/// Unpacks one v210 row of `width` pixels. Reads ceil(width / 6) groups from `row`; writes
/// `width` samples to `y` and (width + 1) / 2 samples each to `cb` and `cr`. `row` needs no
/// alignment. A width rounded up to even reads the padding sample of the last group as the
/// last Y, which suits a consumer that keeps whole pixel pairs.
void unpack_v210_row(const std::byte* row, uint32_t width, uint16_t* y, uint16_t* cb, uint16_t* cr);

/// Unpacks a v210 frame of `width` x `height` whose rows start `stride` bytes apart into
/// tightly packed planes: `y` gets rows of `width` samples, `cb` and `cr` rows of
/// (width + 1) / 2 samples, `height` rows each (so the planes hold width * height and
/// (width + 1) / 2 * height samples).
void unpack_v210(const std::byte* frame, uint32_t stride, uint32_t width, uint32_t height,
                 uint16_t* y, uint16_t* cb, uint16_t* cr);

}  // namespace rdmavideo
