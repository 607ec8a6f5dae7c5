// SPDX-License-Identifier: Apache-2.0
#include "canvas_kernels.hpp"

#include "canvas_pixels.hpp"

namespace rdmavideo::media {
namespace {

enum Function { kPlaceNv12, kFillNv12, kGrayNv12 };
constexpr const char* kFunctions[] = {"rdmavideo_place_nv12", "rdmavideo_fill_nv12",
                                      "rdmavideo_gray_nv12"};
const cuda::KernelImage kKernels{kCanvasKernelImage, kFunctions, "the GPU canvas's kernels"};

// Launches in blocks of 32 x 8 threads.
constexpr unsigned kBlockX = 32, kBlockY = 8;

static_assert(static_cast<int>(CanvasKernels::Layout::yuv444p16) == canvas::layout::kYuv444p16 &&
              static_cast<int>(CanvasKernels::Layout::rgb24) == canvas::layout::kRgb24);

canvas::Target target(const CanvasKernels::Nv12& nv12) {
  return {reinterpret_cast<uint8_t*>(nv12.planes.at[0]),
          reinterpret_cast<uint8_t*>(nv12.planes.at[1]),
          nv12.planes.pitch[0],
          nv12.planes.pitch[1],
          nv12.width,
          nv12.height,
          nv12.bt709 ? 1 : 0};
}

}  // namespace

Result<CanvasKernels> CanvasKernels::load(const cuda::Device& device) {
  auto module = cuda::Module::shared(device, kKernels);
  if (!module) return Unexpected(module.error());
  return CanvasKernels(std::move(*module));
}

Result<void> CanvasKernels::launch_over(cuda::Stream& stream, int function, const Nv12& nv12,
                                        Area area, void** params) const {
  if (area.x < 0 || area.y < 0 || area.width <= 0 || area.height <= 0 ||
      (area.x | area.y | area.width | area.height) % 2 != 0 ||
      static_cast<unsigned>(area.x + area.width) > nv12.width ||
      static_cast<unsigned>(area.y + area.height) > nv12.height) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: {}x{} at ({}, {}) is not an even rectangle inside the {}x{} canvas",
                      kFunctions[function], area.width, area.height, area.x, area.y, nv12.width,
                      nv12.height);
  }
  // A thread a block of two pixels in two rows of the area.
  return module_->launch(stream, static_cast<size_t>(function),
                         {cuda::blocks(static_cast<unsigned>(area.width) / 2, kBlockX),
                          cuda::blocks(static_cast<unsigned>(area.height) / 2, kBlockY)},
                         {kBlockX, kBlockY}, params);
}

Result<void> CanvasKernels::place(cuda::Stream& stream, const Picture& picture, const Nv12& nv12,
                                  Area area) const {
  if (picture.width == 0 || picture.height == 0 ||
      ((picture.layout == Layout::yuv422p16 || picture.layout == Layout::yuv444p16) &&
       (picture.bits < 8 || picture.bits > 16))) {
    return make_error(ErrorCode::invalid_argument, "place: a {}x{} picture of {} bits",
                      picture.width, picture.height, picture.bits);
  }
  canvas::Source source{};
  for (int p = 0; p < 3; ++p) {
    source.plane[p] = reinterpret_cast<const uint8_t*>(picture.planes.at[p]);
    source.pitch[p] = picture.planes.pitch[p];
  }
  source.width = picture.width;
  source.height = picture.height;
  source.layout = static_cast<int>(picture.layout);
  source.bits = picture.bits;
  canvas::Target to = target(nv12);
  canvas::Area at{area.x, area.y, area.width, area.height};
  void* params[] = {&source, &to, &at};
  return launch_over(stream, kPlaceNv12, nv12, area, params);
}

Result<void> CanvasKernels::fill(cuda::Stream& stream, const Nv12& nv12, Area area, uint8_t r,
                                 uint8_t g, uint8_t b) const {
  canvas::Target to = target(nv12);
  canvas::Area at{area.x, area.y, area.width, area.height};
  canvas::Yuv colour = canvas::rgb_to_yuv(r, g, b, nv12.bt709 ? 1 : 0);
  void* params[] = {&to, &at, &colour};
  return launch_over(stream, kFillNv12, nv12, area, params);
}

Result<void> CanvasKernels::gray(cuda::Stream& stream, cuda::DevicePtr luma, size_t pitch,
                                 const Nv12& nv12, Area area) const {
  cuda::DevicePtr from = luma;
  unsigned long long from_pitch = pitch;  // NOLINT(google-runtime-int): the kernel's
  canvas::Target to = target(nv12);
  canvas::Area at{area.x, area.y, area.width, area.height};
  void* params[] = {&from, &from_pitch, &to, &at};
  return launch_over(stream, kGrayNv12, nv12, area, params);
}

}  // namespace rdmavideo::media
