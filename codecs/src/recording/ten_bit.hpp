// SPDX-License-Identifier: Apache-2.0
// Samples of 10-bit planar frames that hold no 10-bit value, found and masked before encoding.
#pragma once

#include <cstdint>
#include <optional>

extern "C" {
#include <libavutil/frame.h>
}

namespace rdmavideo::av {

// yuv422p10le keeps each 10-bit sample in the low 10 bits of a little-endian 16-bit word.
// A word with any of bits 10-15 set holds no 10-bit value, and encoders that take the format
// at its word assume there is none: FFV1 codes such a sample wrongly, its range coder loses
// step and the rest of the slice decodes as garbage (FFmpeg's decoder logs "bytestream end
// mismatching"), so one bad word costs a lossless recording a whole slice.
struct OutOfRangeSamples {
  uint64_t count = 0;  // in the frame
  int plane = 0;       // of the first: 0 Y, 1 Cb, 2 Cr
  int row = 0, column = 0;
  uint16_t value = 0;
};

// Masks every sample of a yuv422p10le or yuv444p10le frame to its low 10 bits, in place; returns
// what it found, nullopt when every sample was a 10-bit value (the usual case: one read of the
// frame).
std::optional<OutOfRangeSamples> mask_samples_to_10_bits(AVFrame* frame);

}  // namespace rdmavideo::av
