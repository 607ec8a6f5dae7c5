// SPDX-License-Identifier: Apache-2.0
// Where each stream goes on the composite's canvas (rdmavideo-recv --composite, --layout).
//
// A layout is a list of tiles, each a rectangle of the canvas. The built-in ones make one tile
// for each of --max-streams streams: `grid` (as square as the count allows, row by row),
// `row` (side by side) and `pip` (the first full-size, the others small along the bottom
// right corner, in front of it). A layout file (TOML) names its own:
//
//     [[tile]]                 # one table per tile, in the order they are drawn
//     name = "cam1"            # the stream named so (StreamStart.name) goes here, or
//     stream = 2               # the second stream to arrive, or neither: any stream
//     x = 0                    # the rectangle, in canvas pixels
//     y = 0
//     width = 960
//     height = 540
//
// A stream takes the first free tile that names it, then the first free tile for its
// arrival number, then the first free tile that names nothing. Tiles are drawn in order, so a
// later tile covers an earlier one where they overlap (pip's small tiles are later).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::media {

enum class CompositeKind { grid, row, pip };

/// "grid", "row", "pip".
std::optional<CompositeKind> parse_composite_kind(std::string_view text);

struct TileSpec {
  av::Rect rect;
  std::string name;                ///< only the stream of this name; empty: any
  std::optional<uint64_t> stream;  ///< only the stream that arrived n-th
};

struct CompositeLayout {
  std::vector<TileSpec> tiles;

  /// A built-in layout of `count` tiles on a `width` x `height` canvas.
  static CompositeLayout make(CompositeKind kind, uint32_t count, uint32_t width, uint32_t height);
  /// A layout file; errors name the file, the tile (from 1) and the field, and a rectangle
  /// that is not inside the canvas.
  static Result<CompositeLayout> load(const std::filesystem::path& path, uint32_t width,
                                      uint32_t height);

  /// The tile stream `number` named `name` takes among those `taken` says are not free, or
  /// nullopt where none is free for it.
  std::optional<size_t> place(const std::string& name, uint64_t number,
                              const std::vector<bool>& taken) const;
};

}  // namespace rdmavideo::media
