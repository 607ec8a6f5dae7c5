// SPDX-License-Identifier: Apache-2.0
// --output as a template, one file per stream: {name} (the sender's --name, reduced to
// file-name-safe characters), {n} (1, 2, ... in order of arrival), {peer} (host and port,
// made safe the same way), {date} and {time} (the stream's first frame, by the sender's
// clock, in this machine's time zone: 2026-11-23, 22-28-05). A file made from a template
// never replaces one that exists: the first free "stem-1.ext", "stem-2.ext", ... is taken
// and logged. A plain path (no placeholder) is replaced, as a single-stream receiver always
// did.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo::media {

struct TemplateFields {
  std::string_view name;
  uint64_t number = 0;
  std::string_view peer;
  uint64_t first_frame_ns = 0;  ///< the first frame's FrameWritten.sent_ns
};

class OutputTemplate {
 public:
  /// The usage rules, checked before anything starts: a placeholder must be known; with
  /// more than one stream at once a file output must hold {name} or {n} (and cannot be
  /// stdout); serving one stream after another into a plain file path would replace the file
  /// with each stream; a plain path's folder must exist. Errors begin with `setting` (how the
  /// front end spells the output) and the path.
  static Result<void> check(const std::string& output, uint32_t max_streams, bool serve,
                            std::string_view setting = "the output");
  static bool is_template(std::string_view output);
  /// The path for one stream.
  static std::string expand(std::string_view output, const TemplateFields& fields);
  /// Creates `path` empty and exclusively, or the first free "stem-K.ext" beside it when
  /// it exists (and the folders above it when they do not); returns the path taken.
  static Result<std::string> reserve(const std::string& path,
                                     std::string_view setting = "the output");
  /// Letters, digits, '-', '_' and inner single dots; everything else becomes '_', so no
  /// '/' and no "..", and a leading '.' or '-' too. "stream" when nothing is left.
  static std::string safe_name(std::string_view text);
};

}  // namespace rdmavideo::media
