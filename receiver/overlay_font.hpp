// SPDX-License-Identifier: Apache-2.0
// The display's overlay text: a 5x8 bitmap font (0-9, A-Z, a-z and . / % : -) and the drawing
// of a line of it onto an SDL renderer. A built-in font keeps --display free of a font file or
// SDL_ttf. The display thread calls draw_text() for each overlay line, between clearing the
// renderer and presenting it; like every SDL call, only from the thread that owns the renderer.
#pragma once

#include <string>

struct SDL_Renderer;

namespace rdmavideo::receiver {

/// Font pixels from one character's left edge to the next one's (5 wide plus 1 of space).
inline constexpr int kFontAdvance = 6;

/// Draws `text` in white on a dark translucent band with its top left at (x, y), each font
/// pixel `scale` x `scale` screen pixels. Returns the band's height, where the next line
/// goes. Characters without a glyph draw as spaces.
int draw_text(SDL_Renderer* renderer, const std::string& text, int x, int y, int scale);

}  // namespace rdmavideo::receiver
