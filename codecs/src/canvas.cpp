// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/canvas.hpp"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "av_util.hpp"

namespace rdmavideo::av {
namespace {


// Where a pixel lands in each plane of a format: bytes from one pixel to the next in that
// plane, and how far its coordinates are shifted (chroma planes of subsampled formats).
struct PlaneGeometry {
  int step = 0;
  int shift_w = 0;
  int shift_h = 0;
};

std::vector<PlaneGeometry> geometry(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  std::vector<PlaneGeometry> planes(static_cast<size_t>(av_pix_fmt_count_planes(format)));
  const bool rgb = (desc->flags & AV_PIX_FMT_FLAG_RGB) != 0;
  for (size_t p = 0; p < planes.size(); ++p) {
    bool chroma_only = !rgb;
    int step = 0;
    for (int c = 0; c < desc->nb_components; ++c) {
      if (desc->comp[c].plane != static_cast<int>(p)) continue;
      step = step ? std::min(step, desc->comp[c].step) : desc->comp[c].step;
      if (c == 0 || c == 3) chroma_only = false;  // luma or alpha
    }
    planes[p] = {step, chroma_only ? desc->log2_chroma_w : 0, chroma_only ? desc->log2_chroma_h : 0};
  }
  return planes;
}

// Whether a format's samples are full range: RGB always, YUV where its colour says so.
bool full_range(PixelFormat format, const Colour& colour) {
  return traits(format).rgb || colour.range == colour::kFull;
}

}  // namespace

struct Canvas::Impl {
  proto::StreamStart format;
  AVPixelFormat av_format = AV_PIX_FMT_NONE;
  std::vector<PlaneGeometry> planes;
  std::vector<std::byte> bytes;
  // Scalers by what they convert (source format, sizes, range and matrix), each reused for
  // every frame of its kind: tiles of different sizes would re-initialise one by turns.
  using Key = std::tuple<int, int, int, int, int, int, int, int>;
  std::map<Key, UniqueSws> scalers;
  std::vector<uint8_t> bgra;  // fills and labels, drawn here first
  // What libswscale writes, before it is copied into the canvas: it writes whole vectors, past
  // the end of each row, so it must never write into the canvas itself (a tile's row ends
  // where the next tile's begins).
  std::vector<uint8_t> scratch;

  Rect clip(Rect r) const { return av::clip(r, format.width, format.height); }

  // The canvas's planes from (x, y) on.
  void destination(Rect r, uint8_t* data[4], int linesize[4]) {
    for (size_t p = 0; p < planes.size(); ++p) {
      const auto& plane = format.layout.planes[p];
      data[p] = reinterpret_cast<uint8_t*>(bytes.data()) + plane.offset +
                static_cast<size_t>(r.y >> planes[p].shift_h) * plane.stride +
                static_cast<size_t>((r.x >> planes[p].shift_w) * planes[p].step);
      linesize[p] = static_cast<int>(plane.stride);
    }
  }

  // Scales the source (src, src_linesize, src_h rows) with `sws` into `to`: into the scratch
  // picture first, then row by row into the canvas, exactly the rectangle's bytes.
  void blit(SwsContext* sws, const uint8_t* const src[4], const int src_linesize[4], int src_h, Rect to) {
    // Rows padded to 64 bytes, and 64 more after the last, for what libswscale writes past them.
    uint8_t* tmp[4] = {};
    int tmp_linesize[4] = {};
    const int size = av_image_get_buffer_size(av_format, to.width, to.height, 64);
    if (size < 0) return;
    scratch.resize(static_cast<size_t>(size) + 64);
    av_image_fill_arrays(tmp, tmp_linesize, scratch.data(), av_format, to.width, to.height, 64);
    sws_scale(sws, src, src_linesize, 0, src_h, tmp, tmp_linesize);
    copy(tmp, tmp_linesize, to);
  }

  // A picture in the canvas's format and `to`'s size (planes `from`, rows `from_linesize`
  // apart) into `to`, row by row, exactly the rectangle's bytes.
  void copy(const uint8_t* const from[4], const int from_linesize[4], Rect to) {
    uint8_t* dst[4] = {};
    int dst_linesize[4] = {};
    destination(to, dst, dst_linesize);
    for (size_t p = 0; p < planes.size(); ++p) {
      const int rows = (to.height + (1 << planes[p].shift_h) - 1) >> planes[p].shift_h;
      const size_t row_bytes = static_cast<size_t>(((to.width + (1 << planes[p].shift_w) - 1) >> planes[p].shift_w) *
                                                   planes[p].step);
      for (int row = 0; row < rows; ++row) {
        std::memcpy(dst[p] + static_cast<ptrdiff_t>(row) * dst_linesize[p],
                    from[p] + static_cast<ptrdiff_t>(row) * from_linesize[p], row_bytes);
      }
    }
  }

  Result<SwsContext*> scaler(AVPixelFormat from, int from_w, int from_h, bool from_full, int from_matrix, int to_w,
                             int to_h, int flags) {
    const Key key{from, from_w, from_h, from_full, from_matrix, to_w, to_h, flags};
    if (auto it = scalers.find(key); it != scalers.end()) return it->second.get();
    if (scalers.size() >= 64) scalers.clear();  // tiles came and went: start again
    UniqueSws sws(sws_getContext(from_w, from_h, from, to_w, to_h, av_format, flags, nullptr, nullptr, nullptr));
    if (!sws) {
      return make_error(ErrorCode::unsupported, "canvas: libswscale cannot scale {}x{} {} into {}x{} {}", from_w,
                        from_h, av_name(from), to_w, to_h, av_name(av_format));
    }
    const bool to_full = full_range(format.pixel_format, format.colour);
    sws_setColorspaceDetails(sws.get(), sws_getCoefficients(from_matrix), from_full ? 1 : 0,
                             sws_getCoefficients(sws_matrix(format.colour.matrix, format.height)), to_full ? 1 : 0,
                             0, 1 << 16, 1 << 16);
    return scalers.emplace(key, std::move(sws)).first->second.get();
  }

  // The BGRA image in `bgra` (`w` x `h`) into `to`, scaled to its size.
  Result<void> draw_bgra(int w, int h, Rect to, int flags) {
    auto sws = scaler(AV_PIX_FMT_BGRA, w, h, true, SWS_CS_DEFAULT, to.width, to.height, flags);
    if (!sws) return Unexpected(sws.error());
    const uint8_t* src[4] = {bgra.data(), nullptr, nullptr, nullptr};
    const int src_linesize[4] = {w * 4, 0, 0, 0};
    blit(*sws, src, src_linesize, h, to);
    return {};
  }
};

Result<std::unique_ptr<Canvas>> Canvas::create(PixelFormat format, uint32_t width, uint32_t height, Rational rate,
                                               Colour colour) {
  const auto av = to_av(format);
  if (!av || !sws_isSupportedOutput(*av)) {
    return make_error(ErrorCode::unsupported, "--pix-fmt {}: libswscale cannot draw a canvas in it", name(format));
  }
  if (width % 2 != 0 || height % 2 != 0) {
    return make_error(ErrorCode::invalid_argument, "--canvas {}x{}: width and height must be even", width, height);
  }
  auto layout = canonical_layout(format, width, height);
  if (!layout) return Unexpected(layout.error().context(fmt::format("--canvas {}x{}", width, height)));
  auto impl = std::make_unique<Impl>();
  impl->format.pixel_format = format;
  impl->format.width = width;
  impl->format.height = height;
  impl->format.frame_rate = rate;
  impl->format.layout = *layout;
  if (!colour.said()) colour = canvas_colour(format, height);
  impl->format.colour = colour;
  impl->av_format = *av;
  impl->planes = geometry(*av);
  impl->bytes.resize(layout->frame_bytes);
  std::unique_ptr<Canvas> canvas(new Canvas(std::move(impl)));
  if (auto ok = canvas->fill({0, 0, static_cast<int>(width), static_cast<int>(height)}, {}); !ok) {
    return Unexpected(ok.error());
  }
  return canvas;
}

Canvas::Canvas(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Canvas::~Canvas() = default;

const proto::StreamStart& Canvas::format() const { return impl_->format; }
std::span<const std::byte> Canvas::frame() const { return impl_->bytes; }

Result<Rect> Canvas::place(const proto::StreamStart& format, std::span<const std::byte> frame, Rect area) {
  Impl& s = *impl_;
  const auto av = to_av(format.pixel_format);
  if (!av || !sws_isSupportedInput(*av)) {
    return make_error(ErrorCode::unsupported, "canvas: libswscale cannot read {} frames", name(format.pixel_format));
  }
  if (frame.size() < format.layout.frame_bytes) {
    return make_error(ErrorCode::invalid_argument, "canvas: a {} frame of {} bytes where its layout has {}",
                      name(format.pixel_format), frame.size(), format.layout.frame_bytes);
  }
  area = s.clip(area);
  if (area.empty()) return area;
  const Rect picture = s.clip(fit(area, format.width, format.height));
  // The bars beside the picture, black.
  for (const Rect& bar : bars(area, picture)) {
    if (bar.empty()) continue;
    if (auto ok = fill(bar, {}); !ok) return Unexpected(ok.error());
  }
  const uint8_t* src[4] = {};
  int src_linesize[4] = {};
  for (int p = 0; p < format.layout.plane_count && p < 4; ++p) {
    src[p] = reinterpret_cast<const uint8_t*>(frame.data()) + format.layout.planes[p].offset;
    src_linesize[p] = static_cast<int>(format.layout.planes[p].stride);
  }
  const bool full = full_range(format.pixel_format, format.colour);
  const int matrix = sws_matrix(format.colour.matrix, format.height);
  // The canvas's own format, size, matrix and range: copied as it is. (Nothing to scale; and
  // libswscale's unscaled copy of FFmpeg 5.1 writes no chroma of NV12 or P010.)
  if (format.pixel_format == s.format.pixel_format && static_cast<int>(format.width) == picture.width &&
      static_cast<int>(format.height) == picture.height && full == full_range(s.format.pixel_format, s.format.colour) &&
      matrix == sws_matrix(s.format.colour.matrix, s.format.height)) {
    s.copy(src, src_linesize, picture);
    return picture;
  }
  auto sws = s.scaler(*av, static_cast<int>(format.width), static_cast<int>(format.height), full, matrix,
                      picture.width, picture.height, SWS_BILINEAR);
  if (!sws) return Unexpected(sws.error());
  s.blit(*sws, src, src_linesize, static_cast<int>(format.height), picture);
  return picture;
}

Result<void> Canvas::fill(Rect area, Rgb colour) {
  Impl& s = *impl_;
  area = s.clip(area);
  if (area.empty()) return {};
  // An 8x8 patch of the colour, scaled up by point sampling: the same colour everywhere.
  constexpr int kPatch = 8;
  s.bgra.resize(kPatch * kPatch * 4);
  for (size_t i = 0; i < s.bgra.size(); i += 4) {
    s.bgra[i] = colour.b;
    s.bgra[i + 1] = colour.g;
    s.bgra[i + 2] = colour.r;
    s.bgra[i + 3] = 255;
  }
  return s.draw_bgra(kPatch, kPatch, area, SWS_POINT);
}

Result<Rect> Canvas::label(int x, int y, std::string_view text, int scale) {
  Impl& s = *impl_;
  const Band band = label_band(x, y, text, scale, s.format.width, s.format.height);
  if (band.rect.empty()) return band.rect;
  s.bgra.resize(band.gray.size() * 4);
  for (size_t i = 0; i < band.gray.size(); ++i) {
    s.bgra[i * 4] = s.bgra[i * 4 + 1] = s.bgra[i * 4 + 2] = band.gray[i];
    s.bgra[i * 4 + 3] = 255;
  }
  if (auto ok = s.draw_bgra(band.rect.width, band.rect.height, band.rect, SWS_POINT); !ok) return Unexpected(ok.error());
  return band.rect;
}

}  // namespace rdmavideo::av
