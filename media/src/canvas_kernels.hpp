// SPDX-License-Identifier: Apache-2.0
// The GPU canvas's kernels (canvas_kernels.cu, whose arithmetic canvas_pixels.hpp says),
// loaded once per device: a picture scaled into an area of an NV12 canvas, an area in one
// colour, and a label's gray levels. Each queues its work on a stream; the caller waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rdmavideo/cuda.hpp"

namespace rdmavideo::media {

extern const cuda::EmbeddedImage kCanvasKernelImage;  // as this build embeds it

class CanvasKernels {
 public:
  /// Up to three planes in device memory, each with its pitch in bytes.
  struct Planes {
    cuda::DevicePtr at[3] = {};
    size_t pitch[3] = {};
  };
  /// How a picture the canvas reads is laid out: 8-bit 4:2:0 (nv12, i420), p010, packed
  /// 4:2:2 (uyvy, yuy2), RGB, and planar 4:2:2 and 4:4:4 (16-bit samples with the value in
  /// their low `bits`).
  enum class Layout {
    nv12,
    i420,
    p010,
    uyvy,
    yuy2,
    rgba,
    bgra,
    rgb24,
    yuv422p16,
    yuv444p,
    yuv444p16
  };
  struct Picture {
    Layout layout = Layout::nv12;
    Planes planes;
    unsigned width = 0, height = 0;
    int bits = 8;  ///< yuv422p16, yuv444p16: 10, 12 or 16
  };
  /// An NV12 canvas in device memory (planes 0 and 1) and the matrix RGB pictures are made
  /// YUV with.
  struct Nv12 {
    Planes planes;
    unsigned width = 0, height = 0;
    bool bt709 = true;
  };
  /// A rectangle of a canvas: even corners and sizes, inside it.
  struct Area {
    int x = 0, y = 0, width = 0, height = 0;
  };

  /// `unsupported`, naming why, where the device cannot run the kernels.
  static Result<CanvasKernels> load(const cuda::Device& device);

  /// `picture` scaled into `area` of `canvas` (bilinear, filling the area).
  Result<void> place(cuda::Stream& stream, const Picture& picture, const Nv12& canvas,
                     Area area) const;
  /// `area` of `canvas` in one sRGB colour.
  Result<void> fill(cuda::Stream& stream, const Nv12& canvas, Area area, uint8_t r, uint8_t g,
                    uint8_t b) const;
  /// `area` of `canvas` from a picture of gray levels (0 black, 255 white) of its size in
  /// device memory, rows `pitch` apart.
  Result<void> gray(cuda::Stream& stream, cuda::DevicePtr luma, size_t pitch, const Nv12& canvas,
                    Area area) const;

 private:
  explicit CanvasKernels(std::shared_ptr<const cuda::Module> module) : module_(std::move(module)) {}
  // `function` over the blocks of `area` of `canvas`, once the area is seen to be an even
  // rectangle inside it.
  Result<void> launch_over(cuda::Stream& stream, int function, const Nv12& canvas, Area area,
                           void** params) const;
  std::shared_ptr<const cuda::Module> module_;
};

}  // namespace rdmavideo::media
