// SPDX-License-Identifier: Apache-2.0
// Text a peer sent, made safe to print. A stream name, a software string or an Error's text
// comes from the other end and reaches logs and terminals: control characters (C0, DEL, C1
// such as 0x9b, the 8-bit CSI that starts a terminal escape), bidirectional overrides and
// isolates (U+202A..U+202E, U+2066..U+2069, U+200E/U+200F, U+061C) and the line and paragraph
// separators could rewrite what the log shows, and bytes that are not UTF-8 may confuse
// whatever reads it. printable() writes each of those as an escape (\x1b, \u202e) and passes
// everything else, including well-formed UTF-8, through unchanged. File names take a stricter
// path of their own (the receiver's output templates keep only ASCII letters, digits and
// a few marks).
#pragma once

#include <string>
#include <string_view>

namespace rdmavideo {

/// `text` with control, bidirectional-formatting and malformed bytes escaped.
std::string printable(std::string_view text);

/// `text` as well-formed UTF-8: each byte that does not start a well-formed sequence (a
/// stray continuation, an overlong form, a surrogate, a cut-off sequence) becomes U+FFFD.
/// What leaves the library as text (names on the wire, GStreamer tags) goes through it.
std::string valid_utf8(std::string_view text);

}  // namespace rdmavideo
