// SPDX-License-Identifier: Apache-2.0
#include "nvenc_convert.hpp"

namespace rdmavideo::av {
namespace {

enum Function { kPacked422ToNv12, kYuv422p10ToP010, kRgb24ToRgb0 };
constexpr const char* kFunctions[] = {"rdmavideo_packed422_to_nv12", "rdmavideo_yuv422p10_to_p010",
                                      "rdmavideo_rgb24_to_rgb0"};
const cuda::KernelImage kKernels{kNvencConvertImage, kFunctions,
                                 "the conversions for NVENC's kernels"};

// Launches in blocks of 32 x 8 threads.
constexpr unsigned kBlockX = 32, kBlockY = 8;

}  // namespace

Result<NvencConvert> NvencConvert::load(const cuda::Device& device) {
  auto module = cuda::Module::shared(device, kKernels);
  if (!module) return Unexpected(module.error());
  return NvencConvert(std::move(*module));
}

Result<void> NvencConvert::convert(cuda::Stream& stream, Conversion conversion, const Planes& from,
                                   const Planes& to, unsigned width, unsigned height) const {
  // A thread a block: a pixel pair in a row pair (4:2:2 to 4:2:0), or a pixel (rgb24).
  const bool per_pixel = conversion == Conversion::rgb24_to_rgb0;
  const cuda::Extent grid{cuda::blocks(per_pixel ? width : (width + 1) / 2, kBlockX),
                          cuda::blocks(per_pixel ? height : (height + 1) / 2, kBlockY)};
  unsigned long long at[3], pitch[3], out[2],
      out_pitch[2];  // NOLINT(google-runtime-int): the kernels'
  for (int p = 0; p < 3; ++p) at[p] = from.at[p], pitch[p] = from.pitch[p];
  for (int p = 0; p < 2; ++p) out[p] = to.at[p], out_pitch[p] = to.pitch[p];
  switch (conversion) {
    case Conversion::uyvy_to_nv12:
    case Conversion::yuy2_to_nv12: {
      int order = conversion == Conversion::uyvy_to_nv12 ? 0 : 1;
      void* params[] = {&at[0],        &pitch[0], &out[0], &out_pitch[0], &out[1],
                        &out_pitch[1], &width,    &height, &order};
      return module_->launch(stream, kPacked422ToNv12, grid, {kBlockX, kBlockY}, params);
    }
    case Conversion::yuv422p10_to_p010: {
      void* params[] = {&at[0],  &pitch[0],     &at[1],  &pitch[1],     &at[2], &pitch[2],
                        &out[0], &out_pitch[0], &out[1], &out_pitch[1], &width, &height};
      return module_->launch(stream, kYuv422p10ToP010, grid, {kBlockX, kBlockY}, params);
    }
    case Conversion::rgb24_to_rgb0: {
      void* params[] = {&at[0], &pitch[0], &out[0], &out_pitch[0], &width, &height};
      return module_->launch(stream, kRgb24ToRgb0, grid, {kBlockX, kBlockY}, params);
    }
  }
  return make_error(ErrorCode::invalid_argument, "unknown conversion");
}

}  // namespace rdmavideo::av
