// SPDX-License-Identifier: Apache-2.0
// The one bitmap font of rdmavideo's pictures: a 5x8 glyph table (0-9, A-Z, a-z and
// . / % : - _ # ( ) , + !), built in so that nothing needs a font file. The display's overlay
// draws it with SDL, the receiver's canvas labels its tiles with it (av::Canvas::label),
// each through mask(): which pixels of a line of text are ink.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rdmavideo::glyphs {

inline constexpr int kWidth = 5;    ///< font pixels of a glyph, across
inline constexpr int kHeight = 8;   ///< and down (row 6 is the baseline, row 7 descenders)
inline constexpr int kAdvance = 6;  ///< from one glyph's left edge to the next one's

/// One byte a row, top first; bit 4 is the left column.
using Glyph = std::array<uint8_t, kHeight>;

/// `c`'s glyph; blank for a space and for characters the table has none for.
Glyph glyph(char c);

/// A line of text as pixels: `scale` x `scale` pixels a font pixel, 1 where there is ink.
struct Mask {
  int width = 0;             ///< text.size() * kAdvance * scale
  int height = 0;            ///< kHeight * scale
  std::vector<uint8_t> ink;  ///< width * height, row by row
  bool at(int x, int y) const {
    return ink[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)] != 0;
  }
};
Mask mask(std::string_view text, int scale);

}  // namespace rdmavideo::glyphs
