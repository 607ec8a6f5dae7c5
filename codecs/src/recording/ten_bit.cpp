// SPDX-License-Identifier: Apache-2.0
#include "ten_bit.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <cstddef>
#include <cstring>

namespace rdmavideo::av {

// Masks every sample of a yuv422p10le or yuv444p10le frame to its low 10 bits, in place; returns
// what it found, nullopt when every sample was a 10-bit value (the usual case: one read of the
// frame).
std::optional<OutOfRangeSamples> mask_samples_to_10_bits(AVFrame* frame) {
  std::optional<OutOfRangeSamples> found;
  const int shift = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame->format))->log2_chroma_w;
  for (int p = 0; p < 3; ++p) {
    const int width = p == 0 ? frame->width : (frame->width + (1 << shift) - 1) >> shift;
    for (int row = 0; row < frame->height; ++row) {
      auto* samples =
          reinterpret_cast<uint16_t*>(frame->data[p] + ptrdiff_t{row} * frame->linesize[p]);
      // Four samples a step: this pass reads every frame, and almost always finds nothing.
      uint64_t high = 0;
      int x = 0;
      for (; x + 4 <= width; x += 4) {
        uint64_t four;
        std::memcpy(&four, samples + x, sizeof four);
        high |= four;
      }
      for (; x < width; ++x) high |= samples[x];
      if (!(high & 0xfc00fc00fc00fc00ull)) continue;
      for (int column = 0; column < width; ++column) {
        if (!(samples[column] & 0xfc00)) continue;
        if (!found) found = OutOfRangeSamples{0, p, row, column, samples[column]};
        ++found->count;
        samples[column] &= 0x3ff;
      }
    }
  }
  return found;
}

}  // namespace rdmavideo::av
