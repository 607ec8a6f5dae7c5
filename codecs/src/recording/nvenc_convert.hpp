// SPDX-License-Identifier: Apache-2.0
// The conversions into what NVENC takes from GPU memory (nvenc_convert.cu, whose arithmetic
// nvenc_pixels.hpp says), loaded once per device: for a stream whose format the encoder does
// not take from there.
#pragma once

#include <cstddef>
#include <memory>

#include "rdmavideo/cuda.hpp"

namespace rdmavideo::av {

extern const cuda::EmbeddedImage kNvencConvertImage;  // as this build embeds it

class NvencConvert {
 public:
  enum class Conversion { uyvy_to_nv12, yuy2_to_nv12, yuv422p10_to_p010, rgb24_to_rgb0 };
  /// Up to three planes in device memory, each with its pitch in bytes.
  struct Planes {
    cuda::DevicePtr at[3] = {};
    size_t pitch[3] = {};
  };

  /// `unsupported`, naming why, where the device cannot run the kernels.
  static Result<NvencConvert> load(const cuda::Device& device);
  /// Queues the conversion of a `width` x `height` frame on `stream`; the caller waits.
  Result<void> convert(cuda::Stream& stream, Conversion conversion, const Planes& from,
                       const Planes& to, unsigned width, unsigned height) const;

 private:
  explicit NvencConvert(std::shared_ptr<const cuda::Module> module) : module_(std::move(module)) {}
  std::shared_ptr<const cuda::Module> module_;
};

}  // namespace rdmavideo::av
