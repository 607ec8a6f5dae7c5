// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's kernels (prores.cu), loaded once per device and launched: its input's
// conversion and the encoder's passes, each queued on a stream, the caller waiting.
#pragma once

#include <cstdint>
#include <memory>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/prores.hpp"

namespace rdmavideo::prores {

extern const cuda::EmbeddedImage kKernelImage;  // prores.cu, as this build embeds it

class GpuPasses {
 public:
  /// `unsupported`, naming why, where the device cannot run the kernels.
  static Result<GpuPasses> load(const cuda::Device& device);

  /// `from` (planes as `input` lays them out) into `to`, a picture of its size.
  Result<void> make_picture(cuda::Stream& stream, GpuInput input, const DevicePlanes& from,
                            const DevicePicture& to) const;
  // `slices` is an array of `count` slices, three 32-bit numbers each (first macroblock across
  // and down, macroblocks), in device memory; `rate` a RateState there, which the rate
  // control's passes read and move on; `sizes` kSizeRows rows of `count` 64-bit sizes, a row
  // for each quantiser the search counts at.

  /// Each slice's DCT coefficients into `coefficients` (kSliceCoefficients 16-bit numbers a
  /// slice, in coding order): a thread block a slice, a thread an 8x8 block.
  Result<void> dct(cuda::Stream& stream, const DevicePicture& picture, cuda::DevicePtr slices,
                   unsigned count, cuda::DevicePtr coefficients) const;
  /// Every slice's size (0: over its cap) at the quantisers of rows [first_row, first_row +
  /// rows) of `rate`, into those rows of `sizes`: a thread block a slice and row.
  Result<void> count(cuda::Stream& stream, cuda::DevicePtr coefficients, cuda::DevicePtr slices,
                     unsigned count, cuda::DevicePtr matrix, cuda::DevicePtr rate, int first_row,
                     int rows, cuda::DevicePtr sizes) const;
  /// The search's current pass ended from the slices' sizes at its rows.
  Result<void> search(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                      cuda::DevicePtr rate) const;
  /// Once the search has ended: each slice's quantiser (32 bits), its size at it and its place
  /// behind the table (64 bits), and into `rate` where the slices end and the first over its
  /// cap.
  Result<void> place(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                     cuda::DevicePtr rate, cuda::DevicePtr quantisers, cuda::DevicePtr chosen,
                     cuda::DevicePtr offsets) const;
  /// Every slice coded at its quantiser into `frame_slices` + its offset (which counts from the
  /// table's start), its size into the slice table at `table`: a thread block a slice.
  Result<void> write(cuda::Stream& stream, cuda::DevicePtr coefficients, cuda::DevicePtr slices,
                     unsigned count, cuda::DevicePtr matrix, cuda::DevicePtr quantisers,
                     cuda::DevicePtr chosen, cuda::DevicePtr offsets, cuda::DevicePtr table,
                     cuda::DevicePtr frame_slices) const;

 private:
  explicit GpuPasses(std::shared_ptr<const cuda::Module> module) : module_(std::move(module)) {}
  std::shared_ptr<const cuda::Module> module_;
};

}  // namespace rdmavideo::prores
