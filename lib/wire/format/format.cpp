// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>

namespace rdmavideo {
namespace {

struct FormatEntry {
  PixelFormat format;
  std::string_view name;   // FFmpeg's name
  std::string_view alias;  // another common name, or empty
  FormatTraits traits;
};

constexpr FormatEntry kFormats[] = {
    {PixelFormat::nv12, "nv12", "", {2, 8, false, 1, 1}},
    {PixelFormat::i420, "yuv420p", "i420", {3, 8, false, 1, 1}},
    {PixelFormat::p010, "p010le", "p010", {2, 10, false, 1, 1}},
    {PixelFormat::uyvy, "uyvy422", "uyvy", {1, 8, false, 1, 0}},
    {PixelFormat::yuy2, "yuyv422", "yuy2", {1, 8, false, 1, 0}},
    {PixelFormat::v210, "v210", "", {1, 10, false, 1, 0}},
    {PixelFormat::rgba, "rgba", "", {1, 8, true, 0, 0}},
    {PixelFormat::bgra, "bgra", "", {1, 8, true, 0, 0}},
    {PixelFormat::rgb24, "rgb24", "rgb", {1, 8, true, 0, 0}},
    {PixelFormat::yuv422p10, "yuv422p10le", "yuv422p10", {3, 10, false, 1, 0}},
    {PixelFormat::yuv444p, "yuv444p", "i444", {3, 8, false, 0, 0}},
    {PixelFormat::yuv444p10, "yuv444p10le", "yuv444p10", {3, 10, false, 0, 0}},
    {PixelFormat::yuv444p12, "yuv444p12le", "yuv444p12", {3, 12, false, 0, 0}},
};

constexpr std::array<PixelFormat, std::size(kFormats)> kAll = [] {
  std::array<PixelFormat, std::size(kFormats)> all{};
  for (size_t i = 0; i < all.size(); ++i) all[i] = kFormats[i].format;
  return all;
}();

const FormatEntry& entry(PixelFormat format) {
  for (const auto& e : kFormats) {
    if (e.format == format) return e;
  }
  return kFormats[0];  // unreachable for a PixelFormat that passed pixel_format_from_wire
}

// FFmpeg's names of H.273's code points; empty where H.273 reserves the value.
constexpr std::string_view kPrimaries[] = {
    "",     "bt709",  "",         "",         "bt470m",   "bt470bg", "smpte170m", "smpte240m",
    "film", "bt2020", "smpte428", "smpte431", "smpte432", "",        "",          "",
    "",     "",       "",         "",         "",         "",        "ebu3213"};
constexpr std::string_view kTransfers[] = {
    "",          "bt709",     "",          "",         "bt470m",       "bt470bg", "smpte170m",
    "smpte240m", "linear",    "log100",    "log316",   "iec61966-2-4", "bt1361e", "iec61966-2-1",
    "bt2020-10", "bt2020-12", "smpte2084", "smpte428", "arib-std-b67"};
constexpr std::string_view kMatrices[] = {"",
                                          "bt709",
                                          "",
                                          "",
                                          "fcc",
                                          "bt470bg",
                                          "smpte170m",
                                          "smpte240m",
                                          "ycgco",
                                          "bt2020nc",
                                          "bt2020c",
                                          "smpte2085",
                                          "chroma-derived-nc",
                                          "chroma-derived-c",
                                          "ictcp"};
constexpr std::string_view kRanges[] = {"", "limited", "full"};
static_assert(std::size(kPrimaries) == colour::kMaxPrimaries + 1);
static_assert(std::size(kTransfers) == colour::kMaxTransfer + 1);
static_assert(std::size(kMatrices) == colour::kMaxMatrix + 1);
static_assert(std::size(kRanges) == colour::kMaxRange + 1);

std::string_view code_name(std::span<const std::string_view> names, uint8_t value) {
  return value < names.size() && !names[value].empty() ? names[value] : "unknown";
}

std::optional<uint8_t> code_of(std::span<const std::string_view> names, std::string_view text) {
  if (text == "unknown") return uint8_t{0};
  for (size_t i = 1; i < names.size(); ++i) {
    if (!names[i].empty() && names[i] == text) return static_cast<uint8_t>(i);
  }
  return std::nullopt;
}

uint32_t ceil_shift(uint32_t value, int shift) { return (value + (1u << shift) - 1) >> shift; }

}  // namespace

std::span<const PixelFormat> all_pixel_formats() { return kAll; }

std::string_view name(PixelFormat format) { return entry(format).name; }

std::optional<PixelFormat> parse_pixel_format(std::string_view text) {
  for (const auto& e : kFormats) {
    if (text == e.name || (!e.alias.empty() && text == e.alias)) return e.format;
  }
  return std::nullopt;
}

std::optional<PixelFormat> pixel_format_from_wire(uint32_t value) {
  for (const auto& e : kFormats) {
    if (static_cast<uint32_t>(e.format) == value) return e.format;
  }
  return std::nullopt;
}

std::string pixel_format_names() {
  std::string names;
  for (const auto& e : kFormats) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

FormatTraits traits(PixelFormat format) { return entry(format).traits; }

Result<void> validate(const Colour& c) {
  const auto check = [](std::string_view field, uint8_t value,
                        std::span<const std::string_view> names) -> Result<void> {
    if (value == 0 || (value < names.size() && !names[value].empty())) return {};
    return make_error(ErrorCode::protocol, "colour {} {} is not an ITU-T H.273 code point (1..{})",
                      field, value, names.size() - 1);
  };
  if (auto ok = check("primaries", c.primaries, kPrimaries); !ok) return ok;
  if (auto ok = check("transfer", c.transfer, kTransfers); !ok) return ok;
  if (auto ok = check("matrix", c.matrix, kMatrices); !ok) return ok;
  return check("range", c.range, kRanges);
}

std::string describe(const Colour& c) {
  if (!c.said()) return "not said";
  std::string text = std::string(code_name(kPrimaries, c.primaries)) + "/" +
                     std::string(code_name(kTransfers, c.transfer)) + "/" +
                     std::string(code_name(kMatrices, c.matrix));
  if (c.range != 0) text += " " + std::string(code_name(kRanges, c.range));
  return text;
}

std::optional<Colour> parse_colour(std::string_view text) {
  std::string_view what = text;
  std::string_view range;
  if (const auto space = text.find(' '); space != std::string_view::npos) {
    what = text.substr(0, space);
    range = text.substr(space + 1);
  }
  Colour c;
  using namespace colour;
  if (what == "bt601") {
    c = {kBt601_525, kTransferBt601, kBt601_525, kLimited};
  } else if (what == "bt709") {
    c = {kBt709, kBt709, kBt709, kLimited};
  } else if (what == "srgb") {
    c = {kBt709, kTransferSrgb, kBt709, kFull};
  } else if (what == "bt2100-pq") {
    c = {kBt2020, kTransferPq, kMatrixBt2020Ncl, kLimited};
  } else if (what == "bt2100-hlg") {
    c = {kBt2020, kTransferHlg, kMatrixBt2020Ncl, kLimited};
  } else {
    const auto slash1 = what.find('/');
    const auto slash2 = slash1 == std::string_view::npos ? slash1 : what.find('/', slash1 + 1);
    if (slash2 == std::string_view::npos) return std::nullopt;
    const auto p = code_of(kPrimaries, what.substr(0, slash1));
    const auto t = code_of(kTransfers, what.substr(slash1 + 1, slash2 - slash1 - 1));
    const auto m = code_of(kMatrices, what.substr(slash2 + 1));
    if (!p || !t || !m) return std::nullopt;
    c = {*p, *t, *m, 0};
  }
  if (!range.empty()) {
    const auto r = code_of(kRanges, range);
    if (!r || *r == 0) return std::nullopt;
    c.range = *r;
  }
  return c;
}

uint32_t min_row_bytes(PixelFormat format, uint32_t width, int plane) {
  const uint32_t chroma_w = ceil_shift(width, 1);
  switch (format) {
    case PixelFormat::nv12: return plane == 0 ? width : chroma_w * 2;
    case PixelFormat::i420: return plane == 0 ? width : chroma_w;
    case PixelFormat::p010: return plane == 0 ? width * 2 : chroma_w * 4;
    case PixelFormat::uyvy:
    case PixelFormat::yuy2: return chroma_w * 4;
    case PixelFormat::v210: return (width + 47) / 48 * 128;
    case PixelFormat::rgba:
    case PixelFormat::bgra: return width * 4;
    case PixelFormat::rgb24: return width * 3;
    case PixelFormat::yuv422p10: return plane == 0 ? width * 2 : chroma_w * 2;
    case PixelFormat::yuv444p: return width;
    case PixelFormat::yuv444p10:
    case PixelFormat::yuv444p12: return width * 2;
  }
  return 0;
}

uint32_t plane_rows(PixelFormat format, uint32_t height, int plane) {
  return plane == 0 ? height : ceil_shift(height, traits(format).chroma_shift_y);
}

Result<FrameLayout> canonical_layout(PixelFormat format, uint32_t width, uint32_t height) {
  if (width == 0 || width > kMaxDimension || height == 0 || height > kMaxDimension) {
    return make_error(ErrorCode::invalid_argument, "{}x{} {}: size out of range (1..{} each)",
                      width, height, name(format), kMaxDimension);
  }
  FrameLayout layout;
  layout.plane_count = traits(format).planes;
  uint64_t offset = 0;
  for (int p = 0; p < layout.plane_count; ++p) {
    Plane& plane = layout.planes[p];
    plane.offset = static_cast<uint32_t>(offset);
    plane.stride = min_row_bytes(format, width, p);
    plane.rows = plane_rows(format, height, p);
    offset += uint64_t{plane.stride} * plane.rows;
  }
  if (offset > kMaxFrameBytesOfAnyFormat) {
    return make_error(ErrorCode::invalid_argument,
                      "{}x{} {}: a frame of {} bytes is more than the protocol carries ({} bytes)",
                      width, height, name(format), offset, kMaxFrameBytesOfAnyFormat);
  }
  layout.frame_bytes = static_cast<uint32_t>(offset);
  return layout;
}

Result<void> validate_layout(PixelFormat format, uint32_t width, uint32_t height,
                             const FrameLayout& layout) {
  const int planes = traits(format).planes;
  if (layout.plane_count != planes) {
    return make_error(ErrorCode::protocol, "plane_count {} wrong for {} (has {} planes)",
                      layout.plane_count, name(format), planes);
  }
  uint64_t end = 0;
  for (int p = 0; p < kMaxPlanes; ++p) {
    const Plane& plane = layout.planes[p];
    if (p >= planes) {
      if (plane.offset != 0 || plane.stride != 0 || plane.rows != 0) {
        return make_error(ErrorCode::protocol, "planes[{}] set but {} has {} planes", p,
                          name(format), planes);
      }
      continue;
    }
    const uint32_t rows = plane_rows(format, height, p);
    if (plane.rows != rows) {
      return make_error(ErrorCode::protocol, "planes[{}].rows {} wrong for {} {}x{} (needs {})", p,
                        plane.rows, name(format), width, height, rows);
    }
    const uint32_t row_bytes = min_row_bytes(format, width, p);
    if (plane.stride < row_bytes) {
      return make_error(ErrorCode::protocol,
                        "planes[{}].stride {} less than a row of {} {}x{} ({} bytes)", p,
                        plane.stride, name(format), width, height, row_bytes);
    }
    if (plane.offset < end) {
      return make_error(ErrorCode::protocol,
                        "planes[{}].offset {} overlaps the plane before (ends at {})", p,
                        plane.offset, end);
    }
    end = uint64_t{plane.offset} + uint64_t{plane.stride} * plane.rows;
  }
  if (end > layout.frame_bytes) {
    return make_error(ErrorCode::protocol, "frame_bytes {} less than the planes need ({})",
                      layout.frame_bytes, end);
  }
  return {};
}

std::optional<Rational> parse_frame_rate(std::string_view text) {
  auto parse_u64 = [](std::string_view s, uint64_t& out) {
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
  };
  uint64_t num = 0, den = 1;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    if (!parse_u64(text.substr(0, slash), num) || !parse_u64(text.substr(slash + 1), den)) {
      return std::nullopt;
    }
  } else if (auto dot = text.find('.'); dot != std::string_view::npos) {
    std::string_view frac = text.substr(dot + 1);
    uint64_t whole = 0, part = 0;
    if (frac.size() > 6 || !parse_u64(text.substr(0, dot), whole) || !parse_u64(frac, part) ||
        whole > 1000000) {  // bounds whole * den below overflow
      return std::nullopt;
    }
    den = 1;
    for (size_t i = 0; i < frac.size(); ++i) den *= 10;
    num = whole * den + part;
    // NTSC rates written as decimals (23.976, 29.97, 59.94, 119.88) mean N*1000/1001.
    for (uint64_t base : {24u, 30u, 48u, 60u, 120u}) {
      const double ntsc = base * 1000.0 / 1001.0;
      const double given = static_cast<double>(num) / static_cast<double>(den);
      if (given != static_cast<double>(base) && std::abs(given - ntsc) < 0.006) {
        num = base * 1000;
        den = 1001;
        break;
      }
    }
  } else if (!parse_u64(text, num)) {
    return std::nullopt;
  }
  if (num == 0 || den == 0) return std::nullopt;
  const uint64_t g = std::gcd(num, den);
  num /= g;
  den /= g;
  if (num > 1000000 || den > 1000000 || static_cast<double>(num) / den > 1000.0) {
    return std::nullopt;
  }
  return Rational{static_cast<uint32_t>(num), static_cast<uint32_t>(den)};
}

std::string to_string(Rational rate) {
  if (rate.den == 1) return fmt::format("{}", rate.num);
  return fmt::format("{}/{}", rate.num, rate.den);
}

std::optional<std::pair<uint32_t, uint32_t>> parse_size(std::string_view text) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  uint32_t w = 0, h = 0;
  auto parse = [](std::string_view s, uint32_t& out) {
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
  };
  if (!parse(text.substr(0, x), w) || !parse(text.substr(x + 1), h)) return std::nullopt;
  return std::pair{w, h};
}

void copy_planes(const FrameLayout& wire, std::byte* wire_frame,
                 std::span<const ForeignPlane> foreign, CopyDirection direction) {
  const int planes = std::min<int>(wire.plane_count, static_cast<int>(foreign.size()));
  for (int p = 0; p < planes; ++p) {
    const Plane& plane = wire.planes[p];
    std::byte* on_wire = wire_frame + plane.offset;
    std::byte* other = foreign[p].data;
    const size_t other_stride = foreign[p].stride;
    auto* to = direction == CopyDirection::to_wire ? on_wire : other;
    const auto* from = direction == CopyDirection::to_wire ? other : on_wire;
    if (other_stride == plane.stride) {
      std::memcpy(to, from, size_t{plane.stride} * plane.rows);
      continue;
    }
    const size_t row_bytes = std::min<size_t>(plane.stride, other_stride);
    const size_t to_stride = direction == CopyDirection::to_wire ? plane.stride : other_stride;
    const size_t from_stride = direction == CopyDirection::to_wire ? other_stride : plane.stride;
    for (uint32_t row = 0; row < plane.rows; ++row) {
      std::memcpy(to + row * to_stride, from + row * from_stride, row_bytes);
    }
  }
}

}  // namespace rdmavideo
