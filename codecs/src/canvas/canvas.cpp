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
    planes[p] = {step, chroma_only ? desc->log2_chroma_w : 0,
                 chroma_only ? desc->log2_chroma_h : 0};
  }
  return planes;
}

// Whether a format's samples are full range: RGB always, YUV where its colour says so.
bool full_range(PixelFormat format, const Colour& colour) {
  return traits(format).rgb || colour.range == colour::kFull;
}

// Drawing into pictures of one pixel format and colour (a canvas's) with libswscale: its
// scalers by what they convert (source format, sizes, range and matrix), each reused for every
// frame of its kind (tiles of different sizes would re-initialise one by turns), and the scratch
// picture they write into. The canvas draws with one; each Fitter, on its own thread, with
// another.
struct Scaling {
  proto::StreamStart
      format;  // its pixel format and colour (and the canvas's height, for the matrix)
  AVPixelFormat av_format = AV_PIX_FMT_NONE;
  std::vector<PlaneGeometry> planes;
  using Key = std::tuple<int, int, int, int, int, int, int, int>;
  std::map<Key, UniqueSws> scalers;
  // What libswscale writes, before it is copied into the picture: it writes whole vectors, past
  // the end of each row, so it must never write into the picture itself (a tile's row ends
  // where the next tile's begins).
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> padded;  // a source that ends where its memory may, copied (scale_within)

  // The planes of a picture laid out as `layout` at `base`, from (r.x, r.y) on.
  void destination(uint8_t* base, const FrameLayout& layout, Rect r, uint8_t* data[4],
                   int linesize[4]) const {
    for (size_t p = 0; p < planes.size(); ++p) {
      const auto& plane = layout.planes[p];
      data[p] = base + plane.offset + static_cast<size_t>(r.y >> planes[p].shift_h) * plane.stride +
                static_cast<size_t>((r.x >> planes[p].shift_w) * planes[p].step);
      linesize[p] = static_cast<int>(plane.stride);
    }
  }

  // Scales the source (src, src_linesize, a `src_w` x `src_h` picture of `src_format`) with
  // `sws` into `to` of the picture at `base` (`layout`): into the scratch picture first, then
  // row by row, exactly the rectangle's bytes. Nothing past the source's last rows is read
  // (scale_within).
  void blit(SwsContext* sws, AVPixelFormat src_format, int src_w, int src_h,
            const uint8_t* const src[4], const int src_linesize[4], uint8_t* base,
            const FrameLayout& layout, Rect to) {
    // Rows padded to 64 bytes, and 64 more after the last, for what libswscale writes past them.
    uint8_t* tmp[4] = {};
    int tmp_linesize[4] = {};
    const int size = av_image_get_buffer_size(av_format, to.width, to.height, 64);
    if (size < 0) return;
    scratch.resize(static_cast<size_t>(size) + 64);
    av_image_fill_arrays(tmp, tmp_linesize, scratch.data(), av_format, to.width, to.height, 64);
    scale_within(sws, src_format, src_w, src_h, src, src_linesize, tmp, tmp_linesize, padded);
    copy(tmp, tmp_linesize, base, layout, to);
  }

  // A picture in this format and `to`'s size (planes `from`, rows `from_linesize` apart) into
  // `to` of the picture at `base` (`layout`), row by row, exactly the rectangle's bytes.
  void copy(const uint8_t* const from[4], const int from_linesize[4], uint8_t* base,
            const FrameLayout& layout, Rect to) const {
    uint8_t* dst[4] = {};
    int dst_linesize[4] = {};
    destination(base, layout, to, dst, dst_linesize);
    for (size_t p = 0; p < planes.size(); ++p) {
      const int rows = (to.height + (1 << planes[p].shift_h) - 1) >> planes[p].shift_h;
      const size_t row_bytes =
          static_cast<size_t>((to.width + (1 << planes[p].shift_w) - 1) >> planes[p].shift_w) *
          static_cast<size_t>(planes[p].step);
      for (int row = 0; row < rows; ++row) {
        std::memcpy(dst[p] + static_cast<ptrdiff_t>(row) * dst_linesize[p],
                    from[p] + static_cast<ptrdiff_t>(row) * from_linesize[p], row_bytes);
      }
    }
  }

  Result<SwsContext*> scaler(AVPixelFormat from, int from_w, int from_h, bool from_full,
                             int from_matrix, int to_w, int to_h, int flags) {
    const Key key{from, from_w, from_h, from_full, from_matrix, to_w, to_h, flags};
    if (auto it = scalers.find(key); it != scalers.end()) return it->second.get();
    if (scalers.size() >= 64) scalers.clear();  // tiles came and went: start again
    UniqueSws sws(sws_getContext(from_w, from_h, from, to_w, to_h, av_format, flags, nullptr,
                                 nullptr, nullptr));
    if (!sws) {
      return make_error(ErrorCode::unsupported,
                        "canvas: libswscale cannot scale {}x{} {} into {}x{} {}", from_w, from_h,
                        av_name(from), to_w, to_h, av_name(av_format));
    }
    const bool to_full = full_range(format.pixel_format, format.colour);
    sws_setColorspaceDetails(sws.get(), sws_getCoefficients(from_matrix), from_full ? 1 : 0,
                             sws_getCoefficients(sws_matrix(format.colour.matrix, format.height)),
                             to_full ? 1 : 0, 0, 1 << 16, 1 << 16);
    return scalers.emplace(key, std::move(sws)).first->second.get();
  }

  // A stream's frame scaled into `to` of the picture at `base` (`layout`), or copied where it
  // is already in this format, size, range and matrix.
  Result<void> draw(const proto::StreamStart& from, std::span<const std::byte> frame, uint8_t* base,
                    const FrameLayout& layout, Rect to) {
    const auto av = to_av(from.pixel_format);
    if (!av || !sws_isSupportedInput(*av)) {
      return make_error(ErrorCode::unsupported, "canvas: libswscale cannot read {} frames",
                        name(from.pixel_format));
    }
    if (frame.size() < from.layout.frame_bytes) {
      return make_error(ErrorCode::invalid_argument,
                        "canvas: a {} frame of {} bytes where its layout has {}",
                        name(from.pixel_format), frame.size(), from.layout.frame_bytes);
    }
    const uint8_t* src[4] = {};
    int src_linesize[4] = {};
    for (int p = 0; p < from.layout.plane_count && p < 4; ++p) {
      src[p] = reinterpret_cast<const uint8_t*>(frame.data()) + from.layout.planes[p].offset;
      src_linesize[p] = static_cast<int>(from.layout.planes[p].stride);
    }
    const bool full = full_range(from.pixel_format, from.colour);
    const int matrix = sws_matrix(from.colour.matrix, from.height);
    // This format, size, matrix and range: copied as it is. (Nothing to scale; and
    // libswscale's unscaled copy of FFmpeg 5.1 writes no chroma of NV12 or P010.)
    if (from.pixel_format == format.pixel_format && static_cast<int>(from.width) == to.width &&
        static_cast<int>(from.height) == to.height &&
        full == full_range(format.pixel_format, format.colour) &&
        matrix == sws_matrix(format.colour.matrix, format.height)) {
      copy(src, src_linesize, base, layout, to);
      return {};
    }
    auto sws = scaler(*av, static_cast<int>(from.width), static_cast<int>(from.height), full,
                      matrix, to.width, to.height, SWS_BILINEAR);
    if (!sws) return Unexpected(sws.error());
    blit(*sws, *av, static_cast<int>(from.width), static_cast<int>(from.height), src, src_linesize,
         base, layout, to);
    return {};
  }
};

}  // namespace

struct Canvas::Impl : Scaling {
  std::vector<std::byte> bytes;
  std::vector<uint8_t> bgra;  // fills and labels, drawn here first

  Rect clip(Rect r) const { return av::clip(r, format.width, format.height); }
  uint8_t* base() { return reinterpret_cast<uint8_t*>(bytes.data()); }

  // The BGRA image in `bgra` (`w` x `h`) into `to`, scaled to its size.
  Result<void> draw_bgra(int w, int h, Rect to, int flags) {
    auto sws = scaler(AV_PIX_FMT_BGRA, w, h, true, SWS_CS_DEFAULT, to.width, to.height, flags);
    if (!sws) return Unexpected(sws.error());
    const uint8_t* src[4] = {bgra.data(), nullptr, nullptr, nullptr};
    const int src_linesize[4] = {w * 4, 0, 0, 0};
    blit(*sws, AV_PIX_FMT_BGRA, w, h, src, src_linesize, base(), format.layout, to);
    return {};
  }
};

struct Canvas::Fitter::Impl : Scaling {};

Result<std::unique_ptr<Canvas>> Canvas::create(PixelFormat format, uint32_t width, uint32_t height,
                                               Rational rate, Colour colour,
                                               CanvasSettingNames names) {
  const auto av = to_av(format);
  if (!av || !sws_isSupportedOutput(*av)) {
    return make_error(ErrorCode::unsupported, "{} {}: libswscale cannot draw a canvas in it",
                      names.format, name(format));
  }
  if (width % 2 != 0 || height % 2 != 0) {
    return make_error(ErrorCode::invalid_argument, "{} {}x{}: width and height must be even",
                      names.size, width, height);
  }
  auto layout = canonical_layout(format, width, height);
  if (!layout)
    return Unexpected(layout.error().context(fmt::format("{} {}x{}", names.size, width, height)));
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

Result<Rect> Canvas::place(const proto::StreamStart& format, std::span<const std::byte> frame,
                           Rect area) {
  Impl& s = *impl_;
  area = s.clip(area);
  if (area.empty()) return area;
  const Rect picture = s.clip(fit(area, format.width, format.height));
  // The bars beside the picture, black.
  for (const Rect& bar : bars(area, picture)) {
    if (bar.empty()) continue;
    if (auto ok = fill(bar, {}); !ok) return Unexpected(ok.error());
  }
  if (auto ok = s.draw(format, frame, s.base(), s.format.layout, picture); !ok)
    return Unexpected(ok.error());
  return picture;
}

Result<proto::StreamStart> Canvas::fitted(const proto::StreamStart& format, Rect area) const {
  const Impl& s = *impl_;
  const Rect picture = s.clip(fit(s.clip(area), format.width, format.height));
  if (picture.empty())
    return make_error(ErrorCode::invalid_argument, "canvas: an area outside the canvas");
  auto layout = canonical_layout(s.format.pixel_format, static_cast<uint32_t>(picture.width),
                                 static_cast<uint32_t>(picture.height));
  if (!layout) return Unexpected(layout.error());
  proto::StreamStart to = format;
  to.pixel_format = s.format.pixel_format;
  to.width = static_cast<uint32_t>(picture.width);
  to.height = static_cast<uint32_t>(picture.height);
  to.layout = *layout;
  to.colour = s.format.colour;
  return to;
}

std::unique_ptr<Canvas::Fitter> Canvas::fitter() const {
  auto impl = std::make_unique<Fitter::Impl>();
  impl->format = impl_->format;
  impl->av_format = impl_->av_format;
  impl->planes = impl_->planes;
  return std::unique_ptr<Fitter>(new Fitter(std::move(impl)));
}

Canvas::Fitter::Fitter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Canvas::Fitter::~Fitter() = default;

Result<void> Canvas::Fitter::fit(const proto::StreamStart& format, std::span<const std::byte> frame,
                                 const proto::StreamStart& to, std::span<std::byte> into) {
  if (into.size() < to.layout.frame_bytes || to.pixel_format != impl_->format.pixel_format) {
    return make_error(ErrorCode::invalid_argument,
                      "canvas: a fitted {} picture of {} bytes where {} are needed",
                      name(to.pixel_format), into.size(), to.layout.frame_bytes);
  }
  return impl_->draw(format, frame, reinterpret_cast<uint8_t*>(into.data()), to.layout,
                     Rect{0, 0, static_cast<int>(to.width), static_cast<int>(to.height)});
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
  if (auto ok = s.draw_bgra(band.rect.width, band.rect.height, band.rect, SWS_POINT); !ok)
    return Unexpected(ok.error());
  return band.rect;
}

}  // namespace rdmavideo::av
