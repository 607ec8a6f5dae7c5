// SPDX-License-Identifier: Apache-2.0
// The canvas's geometry, which needs no FFmpeg (built with or without it).
#include <algorithm>

#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/glyphs.hpp"

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

Rect clip(Rect r, uint32_t width, uint32_t height) {
  const int cw = static_cast<int>(width), ch = static_cast<int>(height);
  auto even_down = [](int v) { return v & ~1; };
  auto even_up = [](int v) { return (v + 1) & ~1; };
  const int x0 = std::clamp(even_down(r.x), 0, cw), y0 = std::clamp(even_down(r.y), 0, ch);
  const int x1 = std::clamp(even_up(r.x + r.width), 0, cw),
            y1 = std::clamp(even_up(r.y + r.height), 0, ch);
  return {x0, y0, x1 - x0, y1 - y0};
}

std::array<Rect, 4> bars(Rect area, Rect picture) {
  return {Rect{area.x, area.y, area.width, picture.y - area.y},
          Rect{area.x, picture.y + picture.height, area.width,
               area.y + area.height - picture.y - picture.height},
          Rect{area.x, picture.y, picture.x - area.x, picture.height},
          Rect{picture.x + picture.width, picture.y,
               area.x + area.width - picture.x - picture.width, picture.height}};
}

Colour canvas_colour(PixelFormat format, uint32_t height) {
  if (traits(format).rgb) return {colour::kBt709, colour::kTransferSrgb, 0, colour::kFull};
  const uint8_t c = height >= 720 ? colour::kBt709 : colour::kBt601_525;
  return {c, height >= 720 ? colour::kBt709 : colour::kTransferBt601, c, colour::kLimited};
}

Band label_band(int x, int y, std::string_view text, int scale, uint32_t width, uint32_t height) {
  scale = std::max(scale, 1);
  const glyphs::Mask ink = glyphs::mask(text, scale);
  const int pad = 2 * scale;
  Band band;
  band.rect = clip({x, y, ink.width + 2 * pad, ink.height + 2 * pad}, width, height);
  if (band.rect.empty()) return band;
  // The band as the canvas clipped it, from its own top left (x and y snapped to even).
  const int dx = band.rect.x - x, dy = band.rect.y - y;
  band.gray.resize(static_cast<size_t>(band.rect.width) * static_cast<size_t>(band.rect.height));
  for (int row = 0; row < band.rect.height; ++row) {
    for (int col = 0; col < band.rect.width; ++col) {
      const int ix = col + dx - pad, iy = row + dy - pad;
      const bool on = ix >= 0 && iy >= 0 && ix < ink.width && iy < ink.height && ink.at(ix, iy);
      band.gray[static_cast<size_t>(row) * static_cast<size_t>(band.rect.width) +
                static_cast<size_t>(col)] = on ? 255 : 24;
    }
  }
  return band;
}

}  // namespace rdmavideo::av
