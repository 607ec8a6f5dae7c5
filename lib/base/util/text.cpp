// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/text.hpp"

#include <fmt/format.h>

namespace rdmavideo {
namespace {

bool dangerous(char32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) ||  // C0, DEL, C1
         c == 0x061c || c == 0x200e || c == 0x200f ||          // bidi marks
         (c >= 0x202a && c <= 0x202e) ||                       // embeddings, overrides
         (c >= 0x2066 && c <= 0x2069) ||                       // isolates
         c == 0x2028 || c == 0x2029;                           // line, paragraph separators
}

// The length of the well-formed UTF-8 sequence at `s` (and its code point), or 0.
size_t decode_utf8(std::string_view s, char32_t& out) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t n;
  char32_t c;
  if (b0 < 0x80) {
    out = b0;
    return 1;
  } else if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, c = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, c = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, c = b0 & 0x07;
  } else {
    return 0;  // a continuation byte, an overlong lead (0xc0, 0xc1) or past U+10FFFF
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    c = (c << 6) | (b & 0x3f);
  }
  const char32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;  // overlong, surrogate
  out = c;
  return n;
}

// `text` rewritten character by character: `character(code point, its bytes, out)` for each
// well-formed UTF-8 sequence, `malformed(byte, out)` for each byte that starts none.
template <typename Character, typename Malformed>
std::string rewrite(std::string_view text, Character character, Malformed malformed) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    char32_t c = 0;
    const size_t n = decode_utf8(text.substr(at), c);
    if (n == 0) {
      malformed(static_cast<unsigned char>(text[at]), out);
      ++at;
      continue;
    }
    character(c, text.substr(at, n), out);
    at += n;
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  return rewrite(
      text, [](char32_t, std::string_view whole, std::string& out) { out.append(whole); },
      [](unsigned char, std::string& out) { out += "\xef\xbf\xbd"; });  // U+FFFD
}

std::string printable(std::string_view text) {
  return rewrite(
      text,
      [](char32_t c, std::string_view whole, std::string& out) {
        if (!dangerous(c)) {
          out.append(whole);
        } else {
          out += c < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(c))
                          : fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        }
      },
      [](unsigned char byte, std::string& out) { out += fmt::format("\\x{:02x}", byte); });
}

}  // namespace rdmavideo
