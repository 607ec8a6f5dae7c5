// SPDX-License-Identifier: Apache-2.0
#include "display_convert.hpp"

#include <SDL.h>

#include <algorithm>

#include "rdmavideo/convert.hpp"

namespace rdmavideo::recv_cli {
namespace {

// Byte by byte: a peer may put a plane at an odd offset.
uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

}  // namespace

uint32_t texture_format(PixelFormat format) {
  switch (format) {
    case PixelFormat::nv12:
    case PixelFormat::p010: return SDL_PIXELFORMAT_NV12;  // p010: the top 8 bits of each sample
    case PixelFormat::i420: return SDL_PIXELFORMAT_IYUV;
    case PixelFormat::uyvy: return SDL_PIXELFORMAT_UYVY;
    case PixelFormat::yuy2:
    case PixelFormat::v210:                                    // unpacked to 8-bit 4:2:2
    case PixelFormat::yuv422p10: return SDL_PIXELFORMAT_YUY2;  // interleaved to 8-bit 4:2:2
    case PixelFormat::rgba: return SDL_PIXELFORMAT_RGBA32;
    case PixelFormat::bgra: return SDL_PIXELFORMAT_BGRA32;
    case PixelFormat::rgb24: return SDL_PIXELFORMAT_RGB24;
    case PixelFormat::yuv444p:
    case PixelFormat::yuv444p10:
    case PixelFormat::yuv444p12: return SDL_PIXELFORMAT_IYUV;  // chroma halved to 4:2:0
  }
  return SDL_PIXELFORMAT_UNKNOWN;
}

const uint8_t* plane_data(const proto::StreamStart& format, std::span<const std::byte> frame,
                          int plane) {
  return reinterpret_cast<const uint8_t*>(frame.data()) + format.layout.planes[plane].offset;
}

// The high byte of each little-endian 16-bit sample is its top 8 bits.
int p010_to_nv12(const proto::StreamStart& f, std::span<const std::byte> frame,
                 std::vector<uint8_t>& out) {
  const uint32_t w = f.width, h = f.height;
  const uint32_t cw = 2 * ((w + 1) / 2), ch = (h + 1) / 2;
  // One pitch for both planes: a chroma row has as many bytes as a luma row padded to even.
  out.resize(size_t{cw} * h + size_t{cw} * ch);
  for (int p = 0; p < 2; ++p) {
    const uint32_t rows = p == 0 ? h : ch;
    const uint32_t samples = p == 0 ? w : cw;
    uint8_t* dst = out.data() + (p == 0 ? 0 : size_t{cw} * h);
    const uint8_t* src = plane_data(f, frame, p);
    for (uint32_t y = 0; y < rows; ++y, dst += cw, src += f.layout.planes[p].stride) {
      for (uint32_t x = 0; x < samples; ++x) dst[x] = src[2 * x + 1];
    }
  }
  return static_cast<int>(cw);
}

int yuv422p10_to_yuy2(const proto::StreamStart& f, std::span<const std::byte> frame,
                      std::vector<uint8_t>& out) {
  const uint32_t w = f.width, h = f.height;
  const int pitch = static_cast<int>(4 * ((w + 1) / 2));
  out.resize(size_t(pitch) * h);
  for (uint32_t y = 0; y < h; ++y) {
    const uint8_t* py = plane_data(f, frame, 0) + size_t{y} * f.layout.planes[0].stride;
    const uint8_t* pu = plane_data(f, frame, 1) + size_t{y} * f.layout.planes[1].stride;
    const uint8_t* pv = plane_data(f, frame, 2) + size_t{y} * f.layout.planes[2].stride;
    uint8_t* d = out.data() + size_t(pitch) * y;
    for (uint32_t x = 0; x < w; x += 2, d += 4) {
      const uint32_t x1 = std::min(x + 1, w - 1);  // an odd width's last pair repeats its Y
      d[0] = static_cast<uint8_t>(load16(py + 2 * x) >> 2);
      d[1] = static_cast<uint8_t>(load16(pu + x) >> 2);  // chroma sample x/2, 2 bytes each
      d[2] = static_cast<uint8_t>(load16(py + 2 * x1) >> 2);
      d[3] = static_cast<uint8_t>(load16(pv + x) >> 2);
    }
  }
  return pitch;
}

int yuv444_to_i420(const proto::StreamStart& f, std::span<const std::byte> frame,
                   std::vector<uint8_t>& out) {
  const uint32_t w = f.width, h = f.height, cw = (w + 1) / 2, ch = (h + 1) / 2;
  const int bits = traits(f.pixel_format).bits;
  const int pitch = static_cast<int>(2 * cw);
  out.resize(size_t(pitch) * h + 2 * size_t{cw} * ch);
  auto sample = [&](const uint8_t* row, uint32_t x) {
    return bits == 8 ? row[x] : static_cast<uint8_t>(load16(row + 2 * x) >> (bits - 8));
  };
  for (uint32_t y = 0; y < h; ++y) {
    const uint8_t* src = plane_data(f, frame, 0) + size_t{y} * f.layout.planes[0].stride;
    uint8_t* d = out.data() + size_t(pitch) * y;
    for (uint32_t x = 0; x < w; ++x) d[x] = sample(src, x);
  }
  for (int p = 1; p < 3; ++p) {
    uint8_t* d = out.data() + size_t(pitch) * h + size_t(p - 1) * cw * ch;
    for (uint32_t y = 0; y < ch; ++y, d += cw) {
      const uint8_t* src = plane_data(f, frame, p) + size_t{2 * y} * f.layout.planes[p].stride;
      for (uint32_t x = 0; x < cw; ++x) d[x] = sample(src, 2 * x);
    }
  }
  return pitch;
}

int yuv_conversion_mode(const Colour& colour, uint32_t height) {
  if (colour.range == colour::kFull) return SDL_YUV_CONVERSION_JPEG;
  if (colour.matrix == colour::kBt601_525 || colour.matrix == colour::kBt601_625) {
    return SDL_YUV_CONVERSION_BT601;
  }
  if (colour.matrix == 0 && height < 720) return SDL_YUV_CONVERSION_BT601;
  return SDL_YUV_CONVERSION_BT709;
}

int v210_to_yuy2(const proto::StreamStart& f, std::span<const std::byte> frame,
                 std::vector<uint8_t>& out) {
  const uint32_t w = f.width, h = f.height, pairs = (w + 1) / 2;
  const int pitch = static_cast<int>(4 * pairs);
  out.resize(size_t(pitch) * h);
  // One row of samples at a time, so the 16-bit copy stays in cache. YUY2 holds whole pairs,
  // so an odd width unpacks one Y more: the last group's padding sample, which v210 always has.
  std::vector<uint16_t> samples(4 * size_t{pairs});
  uint16_t* ys = samples.data();
  uint16_t* cbs = ys + 2 * size_t{pairs};
  uint16_t* crs = cbs + pairs;
  for (uint32_t y = 0; y < h; ++y) {
    const std::byte* src =
        frame.data() + f.layout.planes[0].offset + size_t{y} * f.layout.planes[0].stride;
    unpack_v210_row(src, 2 * pairs, ys, cbs, crs);
    uint8_t* d = out.data() + size_t(pitch) * y;
    for (uint32_t i = 0; i < pairs; ++i, d += 4) {
      d[0] = static_cast<uint8_t>(ys[2 * i] >> 2);
      d[1] = static_cast<uint8_t>(cbs[i] >> 2);
      d[2] = static_cast<uint8_t>(ys[2 * i + 1] >> 2);
      d[3] = static_cast<uint8_t>(crs[i] >> 2);
    }
  }
  return pitch;
}

}  // namespace rdmavideo::recv_cli
