// SPDX-License-Identifier: Apache-2.0
#include "composite_canvas.hpp"

#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <utility>

#include "canvas_kernels.hpp"

namespace rdmavideo::media {

namespace {

// ---- In host memory: av::Canvas.
class HostCanvas final : public CompositeCanvas {
 public:
  explicit HostCanvas(std::unique_ptr<av::Canvas> canvas) : canvas_(std::move(canvas)) {}
  const proto::StreamStart& format() const override { return canvas_->format(); }
  const memory::MemorySpec& memory() const override { return spec_; }
  std::string describe() const override { return "in host memory, drawn with libswscale"; }
  Result<av::Rect> place(const proto::StreamStart& format, const memory::Region& held,
                         av::Rect area) override {
    return canvas_->place(format, held.bytes().first(format.layout.frame_bytes), area);
  }
  Result<void> fill(av::Rect area, av::Rgb colour) override { return canvas_->fill(area, colour); }
  Result<av::Rect> label(int x, int y, std::string_view text, int scale) override {
    return canvas_->label(x, y, text, scale);
  }
  Result<void> copy_out(const memory::Region& into) override {
    const auto frame = canvas_->frame();
    std::memcpy(into.bytes().data(), frame.data(), frame.size());
    return {};
  }
  std::optional<proto::StreamStart> held_as(const proto::StreamStart& format,
                                            av::Rect area) const override {
    auto fitted = canvas_->fitted(format, area);
    if (!fitted) return std::nullopt;
    return *fitted;
  }
  Copier copier() const override { return Copier(canvas_->fitter()); }

 private:
  std::unique_ptr<av::Canvas> canvas_;
  memory::MemorySpec spec_{memory::MemoryKind::host};
};

// ---- In GPU memory: an NV12 frame drawn by the library's kernels.

// How the kernels read a stream's frames; nullopt for v210, which they do not.
struct Readable {
  CanvasKernels::Layout layout;
  int bits = 8;
};
std::optional<Readable> readable(PixelFormat format) {
  using L = CanvasKernels::Layout;
  switch (format) {
    case PixelFormat::nv12: return Readable{L::nv12};
    case PixelFormat::i420: return Readable{L::i420};
    case PixelFormat::p010: return Readable{L::p010, 10};
    case PixelFormat::uyvy: return Readable{L::uyvy};
    case PixelFormat::yuy2: return Readable{L::yuy2};
    case PixelFormat::rgba: return Readable{L::rgba};
    case PixelFormat::bgra: return Readable{L::bgra};
    case PixelFormat::rgb24: return Readable{L::rgb24};
    case PixelFormat::yuv422p10: return Readable{L::yuv422p16, 10};
    case PixelFormat::yuv444p: return Readable{L::yuv444p};
    case PixelFormat::yuv444p10: return Readable{L::yuv444p16, 10};
    case PixelFormat::yuv444p12: return Readable{L::yuv444p16, 12};
    case PixelFormat::v210: return std::nullopt;
  }
  return std::nullopt;
}

CanvasKernels::Planes planes_of(const proto::StreamStart& format, cuda::DevicePtr at) {
  CanvasKernels::Planes planes;
  for (int p = 0; p < format.layout.plane_count && p < 3; ++p) {
    planes.at[p] = at + format.layout.planes[p].offset;
    planes.pitch[p] = format.layout.planes[p].stride;
  }
  return planes;
}

CanvasKernels::Area area_of(av::Rect r) { return {r.x, r.y, r.width, r.height}; }

class GpuCanvas final : public CompositeCanvas {
 public:
  // On the GPU the frames are received on (`device`).
  static Result<std::unique_ptr<CompositeCanvas>> create(std::shared_ptr<cuda::Device> device,
                                                         CanvasKernels kernels,
                                                         const CompositeOptions& o) {
    auto layout = canonical_layout(PixelFormat::nv12, o.width, o.height);
    if (!layout)
      return Unexpected(layout.error().context(
          fmt::format("{} {}x{}", o.writer.names.canvas_size, o.width, o.height)));
    std::unique_ptr<GpuCanvas> c(new GpuCanvas(o.memory, std::move(device), std::move(kernels)));
    c->format_.pixel_format = PixelFormat::nv12;
    c->format_.width = o.width;
    c->format_.height = o.height;
    c->format_.frame_rate = o.rate;
    c->format_.layout = *layout;
    c->format_.colour = av::canvas_colour(PixelFormat::nv12, o.height);
    auto region = memory::Region::allocate(o.memory, layout->frame_bytes);
    if (!region) return Unexpected(region.error().context("the composite's canvas"));
    c->canvas_ = std::move(*region);
    auto stream = c->device_->create_stream();
    if (!stream) return Unexpected(stream.error());
    c->stream_ = std::move(*stream);
    if (auto ok = c->fill({0, 0, static_cast<int>(o.width), static_cast<int>(o.height)}, {}); !ok) {
      return Unexpected(ok.error());
    }
    return std::unique_ptr<CompositeCanvas>(std::move(c));
  }

  const proto::StreamStart& format() const override { return format_; }
  const memory::MemorySpec& memory() const override { return spec_; }
  std::string describe() const override {
    return fmt::format("in GPU memory ({}), drawn by the library's CUDA kernels",
                       device_->describe());
  }

  Result<av::Rect> place(const proto::StreamStart& format, const memory::Region& held,
                         av::Rect area) override {
    const auto how = readable(format.pixel_format);
    if (!how) {
      return make_error(ErrorCode::unsupported,
                        "canvas: the GPU canvas's kernels cannot read {} frames",
                        name(format.pixel_format));
    }
    area = clip(area);
    if (area.empty()) return area;
    const av::Rect picture = clip(av::fit(area, format.width, format.height));
    for (const av::Rect& bar : av::bars(area, picture)) {
      if (bar.empty()) continue;
      if (auto ok = fill(bar, {}); !ok) return Unexpected(ok.error());
    }
    CanvasKernels::Picture from;
    from.layout = how->layout;
    from.bits = how->bits;
    from.width = format.width;
    from.height = format.height;
    from.planes = planes_of(format, cuda::address(held.bytes().data()));
    if (auto ok = kernels_.place(*stream_, from, nv12(), area_of(picture)); !ok)
      return Unexpected(ok.error());
    // Done reading `held` before it is handed back: the tile's next frame is copied into it on
    // another stream.
    if (auto ok = stream_->synchronize(); !ok) return Unexpected(ok.error());
    return picture;
  }

  Result<void> fill(av::Rect area, av::Rgb colour) override {
    area = clip(area);
    if (area.empty()) return {};
    return kernels_.fill(*stream_, nv12(), area_of(area), colour.r, colour.g, colour.b);
  }

  Result<av::Rect> label(int x, int y, std::string_view text, int scale) override {
    const av::Band band = av::label_band(x, y, text, scale, format_.width, format_.height);
    if (band.rect.empty()) return band.rect;
    // The band's gray levels go up into a buffer of their own, queued before the kernel that
    // reads them; the next label's upload is queued after it.
    if (!band_ || band_->size() < band.gray.size()) {
      // A kernel queued before may still read the buffer this one replaces.
      if (auto ok = stream_->synchronize(); !ok) return Unexpected(ok.error());
      auto region = memory::Region::allocate(spec_, band.gray.size());
      if (!region) return Unexpected(region.error());
      band_ = std::move(*region);
    }
    const cuda::DevicePtr at = cuda::address(band_->bytes().data());
    if (auto ok = stream_->upload_async(at, std::as_bytes(std::span(band.gray))); !ok)
      return Unexpected(ok.error());
    if (auto ok = kernels_.gray(*stream_, at, static_cast<size_t>(band.rect.width), nv12(),
                                area_of(band.rect));
        !ok) {
      return Unexpected(ok.error());
    }
    return band.rect;
  }

  Result<void> copy_out(const memory::Region& into) override {
    if (auto ok =
            stream_->copy_async(cuda::address(into.bytes().data()),
                                cuda::address(canvas_->bytes().data()), format_.layout.frame_bytes);
        !ok) {
      return ok;
    }
    return stream_->synchronize();
  }

  std::optional<proto::StreamStart> held_as(const proto::StreamStart&, av::Rect) const override {
    return std::nullopt;
  }
  Copier copier() const override { return Copier(); }

 private:
  GpuCanvas(memory::MemorySpec spec, std::shared_ptr<cuda::Device> device, CanvasKernels kernels)
      : spec_(spec), device_(std::move(device)), kernels_(std::move(kernels)) {}
  av::Rect clip(av::Rect r) const { return av::clip(r, format_.width, format_.height); }
  CanvasKernels::Nv12 nv12() const {
    CanvasKernels::Nv12 n;
    n.planes = planes_of(format_, cuda::address(canvas_->bytes().data()));
    n.width = format_.width;
    n.height = format_.height;
    n.bt709 = format_.colour.matrix == colour::kBt709;
    return n;
  }

  memory::MemorySpec spec_;
  std::shared_ptr<cuda::Device> device_;
  CanvasKernels kernels_;
  proto::StreamStart format_;
  std::shared_ptr<memory::Region> canvas_;  // the frame drawn
  std::shared_ptr<memory::Region> band_;    // a label's gray levels
  std::unique_ptr<cuda::Stream> stream_;    // everything drawn, in order
};

}  // namespace

Result<std::unique_ptr<CompositeCanvas>> CompositeCanvas::create(const CompositeOptions& o,
                                                                 std::string* why_host) {
  if (o.memory.kind == memory::MemoryKind::cuda) {
    auto device = cuda::Device::shared(o.memory.device);
    if (!device) return Unexpected(device.error());
    if (o.format != PixelFormat::nv12) {
      *why_host = fmt::format("a canvas in GPU memory is nv12, and {} asks for {}",
                              o.writer.names.canvas_format, name(o.format));
    } else if (auto kernels = CanvasKernels::load(**device); !kernels) {
      *why_host = kernels.error().message();
    } else {
      return GpuCanvas::create(std::move(*device), std::move(*kernels), o);
    }
  }
  auto canvas = av::Canvas::create(o.format, o.width, o.height, o.rate, {},
                                   {o.writer.names.canvas_size, o.writer.names.canvas_format});
  if (!canvas) return Unexpected(canvas.error());
  return std::unique_ptr<CompositeCanvas>(std::make_unique<HostCanvas>(std::move(*canvas)));
}

Result<CompositeCanvas::Copier::Way> CompositeCanvas::Copier::hold(const FrameLease& frame,
                                                                   const memory::Region& into,
                                                                   const proto::StreamStart* as) {
  const auto bytes = frame.data();
  const bool from_gpu = frame.memory_kind() == memory::MemoryKind::cuda;
  if (into.kind() != memory::MemoryKind::cuda) {
    if (!from_gpu && as && fitter_) {
      if (auto ok = fitter_->fit(frame.format(), bytes, *as, into.bytes()); !ok)
        return Unexpected(ok.error());
      return Way::fitted;
    }
    if (!from_gpu) {
      std::memcpy(into.bytes().data(), bytes.data(), bytes.size());
      return Way::host;
    }
    if (auto ok = frame.cuda_device()->download(into.bytes().first(bytes.size()),
                                                cuda::address(bytes.data()));
        !ok) {
      return Unexpected(ok.error());
    }
    return Way::download;
  }
  // A GPU frame is on the canvas's GPU: rings and canvas are both on the GPU the frames are
  // received on.
  if (!stream_) {
    auto made = into.cuda_device()->create_stream();
    if (!made) return Unexpected(made.error());
    stream_ = std::move(*made);
  }
  const cuda::DevicePtr to = cuda::address(into.bytes().data());
  auto queued = from_gpu ? stream_->copy_async(to, cuda::address(bytes.data()), bytes.size())
                         : stream_->upload_async(to, bytes);
  if (!queued) return Unexpected(queued.error());
  if (auto ok = stream_->synchronize(); !ok) return Unexpected(ok.error());
  return from_gpu ? Way::device : Way::upload;
}

}  // namespace rdmavideo::media
