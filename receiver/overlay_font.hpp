// SPDX-License-Identifier: Apache-2.0
// The display's overlay text: a line of the library's bitmap font (rdmavideo/glyphs.hpp, the
// one the canvas labels its tiles with) drawn onto an SDL renderer. A built-in font keeps
// --display free of a font file or SDL_ttf. The display thread calls draw_text() for each overlay
// line, between clearing the renderer and presenting it; like every SDL call, only from the thread
// that owns the renderer.
#pragma once

#include <string>

#include "rdmavideo/glyphs.hpp"

struct SDL_Renderer;

namespace rdmavideo::recv_cli {

/// Font pixels from one character's left edge to the next one's (5 wide plus 1 of space).
inline constexpr int kFontAdvance = glyphs::kAdvance;

/// Draws `text` in white on a dark translucent band with its top left at (x, y), each font
/// pixel `scale` x `scale` screen pixels. Returns the band's height, where the next line
/// goes. Characters without a glyph draw as spaces.
int draw_text(SDL_Renderer* renderer, const std::string& text, int x, int y, int scale);

}  // namespace rdmavideo::recv_cli
