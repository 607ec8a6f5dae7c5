// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/test_pattern.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace rdmavideo {
namespace {

constexpr char kStampTag[8] = {'R', 'D', 'V', 'F', 'R', 'A', 'M', 'E'};

struct Rgb {
  double r, g, b;  // 0..255
};
struct Yuv {
  double y, u, v;  // 8-bit scale, BT.709 limited range
};

// 75% colour bars over the top two thirds, a grey ramp below, and a white box that moves
// across the middle from one phase to the next.
Rgb pattern_rgb(uint32_t x, uint32_t y, uint32_t width, uint32_t height, uint32_t phase,
                uint32_t phases) {
  const uint32_t box_w = std::max<uint32_t>(1, width / 8);
  const uint32_t box_h = std::max<uint32_t>(1, height / 6);
  const uint32_t box_x = phases > 1 ? phase * (width - box_w) / (phases - 1) : 0;
  const uint32_t box_y = height / 3;
  if (x >= box_x && x < box_x + box_w && y >= box_y && y < box_y + box_h) {
    return {255, 255, 255};
  }
  if (y < height * 2 / 3) {
    static constexpr Rgb kBars[8] = {{191, 191, 191}, {191, 191, 0}, {0, 191, 191}, {0, 191, 0},
                                     {191, 0, 191},   {191, 0, 0},   {0, 0, 191},   {0, 0, 0}};
    return kBars[std::min<uint64_t>(7, uint64_t{x} * 8 / width)];
  }
  const double level = width > 1 ? 255.0 * x / (width - 1) : 0;
  return {level, level, level};
}

Yuv to_yuv(Rgb c) {
  const double y = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
  return {16 + y * 219 / 255, 128 + (c.b - y) / 1.8556 * 224 / 255,
          128 + (c.r - y) / 1.5748 * 224 / 255};
}

uint16_t quantize(double value, int bits) {
  const double scaled = value * (1 << (bits - 8));
  const double top = (1 << bits) - 1;
  return static_cast<uint16_t>(std::clamp(std::lround(scaled), 0L, static_cast<long>(top)));
}

void put16(std::byte* p, uint16_t v) {
  p[0] = std::byte(v & 0xff);
  p[1] = std::byte(v >> 8);
}
void put32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}

// Renders one phase into `out` (frame_bytes long), or with `white` the flash; bytes between
// rows and planes are zero.
void render(const proto::StreamStart& f, uint32_t phase, uint32_t phases, std::span<std::byte> out,
            bool white = false) {
  std::memset(out.data(), 0, out.size());
  const uint32_t w = f.width, h = f.height;
  auto rgb = [&](uint32_t x, uint32_t y) {
    return white ? Rgb{255, 255, 255} : pattern_rgb(x, y, w, h, phase, phases);
  };
  auto yuv = [&](uint32_t x, uint32_t y) { return to_yuv(rgb(std::min(x, w - 1), y)); };
  auto row = [&](int plane, uint32_t y) {
    return out.data() + f.layout.planes[plane].offset + size_t{y} * f.layout.planes[plane].stride;
  };
  const FormatTraits t = traits(f.pixel_format);
  // A row's pixels depend on y only through which band it is in (bars or ramp, box or not),
  // so a row that is in the same band as the one above is a copy of it: rendering is then
  // a handful of rows plus memcpy, even for 4K.
  const uint32_t box_h = std::max<uint32_t>(1, h / 6), box_y = h / 3;
  auto band = [&](uint32_t y) {
    return (y < h * 2 / 3 ? 2 : 0) + (y >= box_y && y < box_y + box_h);
  };
  auto repeat_row = [&](uint32_t y, uint32_t luma_y, uint32_t prev_luma_y,
                        std::initializer_list<int> planes) {
    if (y == 0 || band(luma_y) != band(prev_luma_y)) return false;
    for (int p : planes) std::memcpy(row(p, y), row(p, y - 1), min_row_bytes(f.pixel_format, w, p));
    return true;
  };
  switch (f.pixel_format) {
    case PixelFormat::rgba:
    case PixelFormat::bgra:
    case PixelFormat::rgb24: {
      const int step = f.pixel_format == PixelFormat::rgb24 ? 3 : 4;
      const bool bgr = f.pixel_format == PixelFormat::bgra;
      for (uint32_t y = 0; y < h; ++y) {
        if (repeat_row(y, y, y - 1, {0})) continue;
        std::byte* p = row(0, y);
        for (uint32_t x = 0; x < w; ++x, p += step) {
          const Rgb c = rgb(x, y);
          p[bgr ? 2 : 0] = std::byte(quantize(c.r, 8));
          p[1] = std::byte(quantize(c.g, 8));
          p[bgr ? 0 : 2] = std::byte(quantize(c.b, 8));
          if (step == 4) p[3] = std::byte{255};
        }
      }
      break;
    }
    case PixelFormat::uyvy:
    case PixelFormat::yuy2: {
      const bool uyvy = f.pixel_format == PixelFormat::uyvy;
      for (uint32_t y = 0; y < h; ++y) {
        if (repeat_row(y, y, y - 1, {0})) continue;
        std::byte* p = row(0, y);
        for (uint32_t x = 0; x < w; x += 2, p += 4) {
          const Yuv a = yuv(x, y), b = yuv(x + 1, y);
          const auto y0 = std::byte(quantize(a.y, 8)), y1 = std::byte(quantize(b.y, 8));
          const auto u = std::byte(quantize(a.u, 8)), v = std::byte(quantize(a.v, 8));
          if (uyvy) {
            p[0] = u, p[1] = y0, p[2] = v, p[3] = y1;
          } else {
            p[0] = y0, p[1] = u, p[2] = y1, p[3] = v;
          }
        }
      }
      break;
    }
    case PixelFormat::v210: {
      for (uint32_t y = 0; y < h; ++y) {
        if (repeat_row(y, y, y - 1, {0})) continue;
        std::byte* p = row(0, y);
        for (uint32_t x = 0; x < w; x += 6, p += 16) {
          uint16_t ys[6], us[3], vs[3];
          for (uint32_t i = 0; i < 6; ++i) ys[i] = quantize(yuv(x + i, y).y, 10);
          for (uint32_t i = 0; i < 3; ++i) {
            const Yuv c = yuv(x + 2 * i, y);
            us[i] = quantize(c.u, 10);
            vs[i] = quantize(c.v, 10);
          }
          put32(p, us[0] | uint32_t{ys[0]} << 10 | uint32_t{vs[0]} << 20);
          put32(p + 4, ys[1] | uint32_t{us[1]} << 10 | uint32_t{ys[2]} << 20);
          put32(p + 8, vs[1] | uint32_t{ys[3]} << 10 | uint32_t{us[2]} << 20);
          put32(p + 12, ys[4] | uint32_t{vs[2]} << 10 | uint32_t{ys[5]} << 20);
        }
      }
      break;
    }
    case PixelFormat::nv12:
    case PixelFormat::i420:
    case PixelFormat::p010:
    case PixelFormat::yuv422p10:
    case PixelFormat::yuv444p:
    case PixelFormat::yuv444p10:
    case PixelFormat::yuv444p12: {
      const bool wide = t.bits > 8;                          // 16-bit samples
      const bool msb = f.pixel_format == PixelFormat::p010;  // p010 keeps bits at the top
      auto put = [&](std::byte* p, double value) {
        const uint16_t q = quantize(value, t.bits);
        if (!wide) {
          *p = std::byte(q);
        } else {
          put16(p, msb ? static_cast<uint16_t>(q << 6) : q);
        }
      };
      const int bytes = wide ? 2 : 1;
      for (uint32_t y = 0; y < h; ++y) {
        if (repeat_row(y, y, y - 1, {0})) continue;
        std::byte* p = row(0, y);
        for (uint32_t x = 0; x < w; ++x, p += bytes) put(p, yuv(x, y).y);
      }
      const uint32_t cw = (w + (1u << t.chroma_shift_x) - 1) >> t.chroma_shift_x;
      const uint32_t ch = plane_rows(f.pixel_format, h, 1);
      const bool interleaved = t.planes == 2;
      for (uint32_t cy = 0; cy < ch; ++cy) {
        if (interleaved
                ? repeat_row(cy, cy << t.chroma_shift_y, (cy - 1) << t.chroma_shift_y, {1})
                : repeat_row(cy, cy << t.chroma_shift_y, (cy - 1) << t.chroma_shift_y, {1, 2})) {
          continue;
        }
        std::byte* pu = row(1, cy);
        std::byte* pv = interleaved ? pu + bytes : row(2, cy);
        const int step = interleaved ? 2 * bytes : bytes;
        for (uint32_t cx = 0; cx < cw; ++cx, pu += step, pv += step) {
          const Yuv c = yuv(cx << t.chroma_shift_x, cy << t.chroma_shift_y);
          put(pu, c.u);
          put(pv, c.v);
        }
      }
      break;
    }
  }
}

}  // namespace

uint32_t TestPattern::phase_count(uint32_t frame_bytes) {
  // Enough phases to move, few enough that 4K RGBA stays under about 200 MB.
  return std::clamp<uint32_t>((192u << 20) / std::max<uint32_t>(1, frame_bytes), 2, 8);
}

bool TestPattern::flashes(const proto::StreamStart& format, uint64_t sequence) {
  if (!(format.flags & proto::kStreamFlash)) return false;
  if (sequence == 0) return true;
  // A whole second in ((n - 1) / rate, n / rate]: the seconds count steps at frame n.
  const uint64_t num = format.frame_rate.num, den = format.frame_rate.den;
  return (sequence * den) / num > ((sequence - 1) * den) / num;
}

uint32_t TestPattern::buffer_count(const proto::StreamStart& format) {
  return phase_count(format.layout.frame_bytes) + (format.flags & proto::kStreamFlash ? 1 : 0);
}

uint32_t TestPattern::buffer_index(const proto::StreamStart& format, uint64_t sequence) {
  const uint32_t phases = phase_count(format.layout.frame_bytes);
  return flashes(format, sequence) ? phases : static_cast<uint32_t>(sequence % phases);
}

void TestPattern::render_buffer(const proto::StreamStart& format, uint32_t index,
                                std::span<std::byte> out) {
  const uint32_t phases = phase_count(format.layout.frame_bytes);
  render(format, index, phases, out.first(std::min<size_t>(out.size(), format.layout.frame_bytes)),
         /*white=*/index >= phases);
}

TestPattern::TestPattern(const proto::StreamStart& format) : format_(format) {
  const uint32_t buffers = buffer_count(format);
  phases_.reserve(buffers);
  for (uint32_t i = 0; i < buffers; ++i) {
    phases_.emplace_back(format.layout.frame_bytes);
    render_buffer(format, i, phases_.back());
  }
}

void TestPattern::render_phase(const proto::StreamStart& format, uint32_t phase,
                               std::span<std::byte> out) {
  render(format, phase, phase_count(format.layout.frame_bytes),
         out.first(std::min<size_t>(out.size(), format.layout.frame_bytes)));
}

void TestPattern::stamp(const proto::StreamStart& format, std::span<std::byte> frame,
                        uint64_t sequence) {
  TestPattern::stamp_into(format, frame, sequence);
}

size_t TestPattern::stamp_bytes() const { return stamp_bytes(format_.pixel_format); }

size_t TestPattern::stamp_bytes(PixelFormat format) {
  switch (format) {
    case PixelFormat::p010:
    case PixelFormat::yuv422p10:
    case PixelFormat::yuv444p10:
    case PixelFormat::yuv444p12: return kStampPayloadBytes * 2;       // a 16-bit word per byte
    case PixelFormat::v210: return (kStampPayloadBytes + 2) / 3 * 4;  // 3 samples per word
    default: return kStampPayloadBytes;
  }
}

void TestPattern::stamp(std::span<std::byte> frame, uint64_t sequence) const {
  stamp_into(format_, frame, sequence);
}

void TestPattern::stamp_into(const proto::StreamStart& format_, std::span<std::byte> frame,
                             uint64_t sequence) {
  uint8_t payload[kStampPayloadBytes + 2] = {};  // + padding for v210's last word
  std::memcpy(payload, kStampTag, sizeof kStampTag);
  for (int i = 0; i < 8; ++i) payload[8 + i] = static_cast<uint8_t>((sequence >> (8 * i)) & 0xff);

  std::array<uint8_t, kStampBytes> stamp{};
  auto put_le = [&](size_t at, uint32_t value, size_t bytes) {
    for (size_t b = 0; b < bytes; ++b) stamp[at + b] = static_cast<uint8_t>(value >> (8 * b));
  };
  switch (format_.pixel_format) {
    case PixelFormat::p010:  // the sample in the high 10 bits of each word
      for (size_t i = 0; i < kStampPayloadBytes; ++i) put_le(2 * i, uint32_t{payload[i]} << 6, 2);
      break;
    case PixelFormat::yuv422p10:  // the sample in the low bits
    case PixelFormat::yuv444p10:
    case PixelFormat::yuv444p12:
      for (size_t i = 0; i < kStampPayloadBytes; ++i) put_le(2 * i, payload[i], 2);
      break;
    case PixelFormat::v210:  // three 10-bit samples in bits 0-29 of each word
      for (size_t w = 0; w * 3 < kStampPayloadBytes; ++w) {
        put_le(4 * w,
               uint32_t{payload[3 * w]} | uint32_t{payload[3 * w + 1]} << 10 |
                   uint32_t{payload[3 * w + 2]} << 20,
               4);
      }
      break;
    default: std::memcpy(stamp.data(), payload, kStampPayloadBytes); break;
  }
  const size_t offset = format_.layout.planes[0].offset;
  const size_t n =
      std::min(stamp_bytes(format_.pixel_format), frame.size() - std::min(frame.size(), offset));
  std::memcpy(frame.data() + offset, stamp.data(), n);
}

std::span<std::byte> TestPattern::frame(uint64_t sequence) {
  auto& buffer = phases_[buffer_index(format_, sequence)];
  stamp(buffer, sequence);
  return buffer;
}

std::optional<TestPattern::Mismatch> TestPattern::verify(uint64_t sequence,
                                                         std::span<const std::byte> data) const {
  const auto& phase = phases_[buffer_index(format_, sequence)];
  const size_t stamp_end =
      std::min(phase.size(), size_t{format_.layout.planes[0].offset} + stamp_bytes());
  std::vector<std::byte> expected_stamp(phase.begin(),
                                        phase.begin() + static_cast<ptrdiff_t>(stamp_end));
  stamp(expected_stamp, sequence);
  auto locate = [&](size_t at) {
    const size_t got = at < data.size() ? static_cast<size_t>(data[at]) : 0;
    const size_t want = at < expected_stamp.size() ? static_cast<size_t>(expected_stamp[at])
                        : at < phase.size()        ? static_cast<size_t>(phase[at])
                                                   : 0;  // data runs past the frame
    return Mismatch::at(format_, at, static_cast<uint8_t>(got), static_cast<uint8_t>(want));
  };
  if (data.size() != phase.size()) return locate(std::min(data.size(), phase.size()));
  const size_t head = expected_stamp.size();
  if (std::memcmp(data.data(), expected_stamp.data(), head) != 0 ||
      std::memcmp(data.data() + head, phase.data() + head, phase.size() - head) != 0) {
    size_t at = 0;
    while (at < data.size() && data[at] == (at < head ? expected_stamp[at] : phase[at])) {
      ++at;
    }
    return locate(at);
  }
  return std::nullopt;
}

TestPattern::Mismatch TestPattern::Mismatch::at(const proto::StreamStart& format, size_t at,
                                                uint8_t got, uint8_t expected) {
  int plane = 0;
  for (int p = 1; p < format.layout.plane_count; ++p) {
    if (at >= format.layout.planes[p].offset) plane = p;
  }
  return Mismatch{plane, at - format.layout.planes[plane].offset, got, expected};
}

std::string TestPattern::Mismatch::describe(uint64_t sequence) const {
  return fmt::format("frame {} plane {} byte {}: got 0x{:02x}, expected 0x{:02x}", sequence, plane,
                     offset, got, expected);
}

}  // namespace rdmavideo
