// SPDX-License-Identifier: Apache-2.0
#include "overlay_font.hpp"

#include <SDL.h>

#include <vector>

#include "rdmavideo/glyphs.hpp"

namespace rdmavideo::recv_cli {

int draw_text(SDL_Renderer* renderer, const std::string& text, int x, int y, int scale) {
  const int pad = 2 * scale;
  const SDL_Rect band{x, y, static_cast<int>(text.size()) * kFontAdvance * scale + 2 * pad,
                      glyphs::kHeight * scale + 2 * pad};
  SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(renderer, 0, 0, 0, 170);
  SDL_RenderFillRect(renderer, &band);
  std::vector<SDL_Rect> dots;
  for (size_t i = 0; i < text.size(); ++i) {
    const glyphs::Glyph g = glyphs::glyph(text[i]);
    const int gx = x + pad + static_cast<int>(i) * kFontAdvance * scale;
    for (int row = 0; row < glyphs::kHeight; ++row) {
      for (int col = 0; col < glyphs::kWidth; ++col) {
        if (g[row] & (0x10 >> col)) {
          dots.push_back({gx + col * scale, y + pad + row * scale, scale, scale});
        }
      }
    }
  }
  SDL_SetRenderDrawColor(renderer, 255, 255, 255, 255);
  SDL_RenderFillRects(renderer, dots.data(), static_cast<int>(dots.size()));
  SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_NONE);
  return band.h;
}

}  // namespace rdmavideo::recv_cli
