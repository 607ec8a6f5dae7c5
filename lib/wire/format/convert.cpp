// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/convert.hpp"

namespace rdmavideo {
namespace {

// Byte by byte: the frame may sit at any offset a peer chose, and the words are little-endian
// whatever the host.
uint32_t load_le32(const std::byte* p) {
  return std::to_integer<uint32_t>(p[0]) | std::to_integer<uint32_t>(p[1]) << 8 |
         std::to_integer<uint32_t>(p[2]) << 16 | std::to_integer<uint32_t>(p[3]) << 24;
}

uint16_t sample(uint32_t word, int index) {
  return static_cast<uint16_t>((word >> (10 * index)) & 0x3ff);
}

}  // namespace

void unpack_v210_row(const std::byte* row, uint32_t width, uint16_t* y, uint16_t* cb,
                     uint16_t* cr) {
  const uint32_t chroma_width = (width + 1) / 2;
  for (uint32_t x = 0; x < width; x += kV210GroupPixels, row += kV210GroupBytes) {
    const uint32_t w0 = load_le32(row), w1 = load_le32(row + 4), w2 = load_le32(row + 8),
                   w3 = load_le32(row + 12);
    const uint16_t ys[6] = {sample(w0, 1), sample(w1, 0), sample(w1, 2),
                            sample(w2, 1), sample(w3, 0), sample(w3, 2)};
    const uint16_t cbs[3] = {sample(w0, 0), sample(w1, 1), sample(w2, 2)};
    const uint16_t crs[3] = {sample(w0, 2), sample(w2, 0), sample(w3, 1)};
    // The last group may hold padding past the row: write only the row's samples.
    for (uint32_t i = 0; i < 6 && x + i < width; ++i) y[x + i] = ys[i];
    for (uint32_t i = 0; i < 3 && x / 2 + i < chroma_width; ++i) {
      cb[x / 2 + i] = cbs[i];
      cr[x / 2 + i] = crs[i];
    }
  }
}

void unpack_v210(const std::byte* frame, uint32_t stride, uint32_t width, uint32_t height,
                 uint16_t* y, uint16_t* cb, uint16_t* cr) {
  const size_t chroma_width = (width + 1) / 2;
  for (uint32_t row = 0; row < height; ++row) {
    unpack_v210_row(frame + size_t{row} * stride, width, y + size_t{row} * width,
                    cb + row * chroma_width, cr + row * chroma_width);
  }
}

}  // namespace rdmavideo
