// SPDX-License-Identifier: Apache-2.0
// The canvas's geometry, which needs no FFmpeg (built with or without it).
#include <algorithm>

#include "rdmavideo/av/canvas.hpp"

namespace rdmavideo::av {

Rect fit(Rect area, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || area.empty()) return area;
  // The larger of the two sizes that fits, the other from the aspect ratio.
  int w = area.width;
  int h = static_cast<int>(static_cast<int64_t>(area.width) * height / width);
  if (h > area.height) {
    h = area.height;
    w = static_cast<int>(static_cast<int64_t>(area.height) * width / height);
  }
  w = std::max(2, w & ~1);
  h = std::max(2, h & ~1);
  return {(area.x + (area.width - w) / 2) & ~1, (area.y + (area.height - h) / 2) & ~1, w, h};
}

}  // namespace rdmavideo::av
