// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/composite_layout.hpp"

#include <toml++/toml.h>

#include <cmath>

#include "rdmavideo/log.hpp"

namespace rdmavideo::media {

std::optional<CompositeKind> parse_composite_kind(std::string_view text) {
  if (text == "grid") return CompositeKind::grid;
  if (text == "row") return CompositeKind::row;
  if (text == "pip") return CompositeKind::pip;
  return std::nullopt;
}

CompositeLayout CompositeLayout::make(CompositeKind kind, uint32_t count, uint32_t width,
                                      uint32_t height) {
  CompositeLayout layout;
  count = std::max(count, 1u);
  const int w = static_cast<int>(width), h = static_cast<int>(height);
  auto add = [&](int x, int y, int tw, int th) {
    layout.tiles.push_back({{x & ~1, y & ~1, tw & ~1, th & ~1}, {}, {}});
  };
  switch (kind) {
    case CompositeKind::grid: {
      const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(count))));
      const int rows = (static_cast<int>(count) + cols - 1) / cols;
      for (int i = 0; i < static_cast<int>(count); ++i) {
        const int c = i % cols, r = i / cols;
        add(c * w / cols, r * h / rows, (c + 1) * w / cols - c * w / cols,
            (r + 1) * h / rows - r * h / rows);
      }
      break;
    }
    case CompositeKind::row:
      for (int i = 0; i < static_cast<int>(count); ++i) {
        const int n = static_cast<int>(count);
        add(i * w / n, 0, (i + 1) * w / n - i * w / n, h);
      }
      break;
    case CompositeKind::pip: {
      add(0, 0, w, h);
      // The others a quarter of the canvas each way, right to left along the bottom, a
      // margin of 1/32 of the height from the edges and between them.
      const int tw = w / 4, th = h / 4, margin = h / 32;
      for (int i = 1; i < static_cast<int>(count); ++i) {
        add(w - i * (tw + margin), h - margin - th, tw, th);
      }
      break;
    }
  }
  return layout;
}

Result<CompositeLayout> CompositeLayout::load(const std::filesystem::path& path, uint32_t width,
                                              uint32_t height) {
  toml::table file;
  try {
    file = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    return make_error(ErrorCode::invalid_argument, "{}: line {}, column {}: {}", path.string(),
                      at.line, at.column, e.description());
  }
  const toml::array* tiles = file["tile"].as_array();
  if (!tiles || tiles->empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: no [[tile]] tables (each tile: x, y, width, height, and name or stream)",
                      path.string());
  }
  CompositeLayout layout;
  int n = 0;
  for (const toml::node& node : *tiles) {
    ++n;
    const toml::table* t = node.as_table();
    if (!t)
      return make_error(ErrorCode::invalid_argument, "{}: tile {} is not a table", path.string(),
                        n);
    for (const auto& [key, value] : *t) {
      (void)value;
      const std::string_view k = key.str();
      if (k != "name" && k != "stream" && k != "x" && k != "y" && k != "width" && k != "height") {
        return make_error(ErrorCode::invalid_argument,
                          "{}: tile {}: unknown field \"{}\" (x, y, width, height, name, stream)",
                          path.string(), n, k);
      }
    }
    TileSpec spec;
    auto number = [&](const char* field, int64_t low, int64_t high) -> Result<int64_t> {
      const auto v = (*t)[field].value<int64_t>();
      if (!v) {
        return make_error(ErrorCode::invalid_argument, "{}: tile {}: {} {}", path.string(), n,
                          field, (*t)[field] ? "must be an integer" : "is missing");
      }
      if (*v < low || *v > high) {
        return make_error(ErrorCode::invalid_argument, "{}: tile {}: {} {} is outside {}..{}",
                          path.string(), n, field, *v, low, high);
      }
      return *v;
    };
    auto x = number("x", 0, width - 2);
    auto y = number("y", 0, height - 2);
    if (!x) return Unexpected(x.error());
    if (!y) return Unexpected(y.error());
    auto w = number("width", 2, width - *x);
    auto h = number("height", 2, height - *y);
    if (!w) return Unexpected(w.error());
    if (!h) return Unexpected(h.error());
    spec.rect = {static_cast<int>(*x), static_cast<int>(*y), static_cast<int>(*w),
                 static_cast<int>(*h)};
    if (auto name = (*t)["name"]; name) {
      if (!name.is_string()) {
        return make_error(ErrorCode::invalid_argument, "{}: tile {}: name must be a string",
                          path.string(), n);
      }
      spec.name = *name.value<std::string>();
    }
    if ((*t)["stream"]) {
      auto s = number("stream", 1, 1 << 20);
      if (!s) return Unexpected(s.error());
      spec.stream = static_cast<uint64_t>(*s);
    }
    layout.tiles.push_back(std::move(spec));
  }
  return layout;
}

std::optional<size_t> CompositeLayout::place(const std::string& name, uint64_t number,
                                             const std::vector<bool>& taken) const {
  auto first = [&](auto&& fits) -> std::optional<size_t> {
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (!taken[i] && fits(tiles[i])) return i;
    }
    return std::nullopt;
  };
  if (auto i = first([&](const TileSpec& t) { return !t.name.empty() && t.name == name; }))
    return i;
  if (auto i = first([&](const TileSpec& t) { return t.stream && *t.stream == number; })) return i;
  return first([](const TileSpec& t) { return t.name.empty() && !t.stream; });
}

}  // namespace rdmavideo::media
