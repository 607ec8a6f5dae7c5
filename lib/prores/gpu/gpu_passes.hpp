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
  // control's passes read and move on.

  /// Each slice's DCT coefficients into `coefficients` (kSliceCoefficients 32-bit numbers a
  /// slice, interleaved: number k of slice i at k x count + i): a thread block a slice, a
  /// thread an 8x8 block.
  Result<void> dct(cuda::Stream& stream, const DevicePicture& picture, cuda::DevicePtr slices,
                   unsigned count, cuda::DevicePtr coefficients) const;
  /// Each slice (a thread a slice) coded at quantisers[i] (32-bit numbers) where `quantiser`
  /// is 0, at `quantiser` where it is above 0, or at the one `rate` gives (QuantiserFrom; no
  /// slice is coded where it gives none), into its slot (`slot_bytes` apart; with `slots` 0
  /// the slices are only counted), its size (64 bits; 0: over its cap) into sizes[i].
  Result<void> code(cuda::Stream& stream, cuda::DevicePtr coefficients, cuda::DevicePtr slices,
                    unsigned count, cuda::DevicePtr matrix, cuda::DevicePtr quantisers,
                    int quantiser, cuda::DevicePtr slots, uint64_t slot_bytes,
                    cuda::DevicePtr sizes, cuda::DevicePtr rate) const;
  /// The search for the frame's quantiser moved one step on from the slices' sizes at the one
  /// it tried (nothing once it has ended).
  Result<void> search(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                      cuda::DevicePtr rate) const;
  /// Each slice's quantiser (32-bit numbers) once the search has ended, from the slices' sizes
  /// at its quantiser and at the next finer.
  Result<void> finer(cuda::Stream& stream, cuda::DevicePtr sizes, cuda::DevicePtr finer,
                     unsigned count, cuda::DevicePtr rate, cuda::DevicePtr quantisers) const;
  /// Each coded slice's place behind the table (64 bits), and into `rate` where they end and
  /// the first slice over its cap.
  Result<void> offsets(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                       cuda::DevicePtr rate, cuda::DevicePtr offsets) const;
  /// Each coded slice from its slot to `frame_slices` + offsets[i] (64 bits), and its size into
  /// the slice table at `table`.
  Result<void> gather(cuda::Stream& stream, cuda::DevicePtr slots, uint64_t slot_bytes,
                      cuda::DevicePtr sizes, cuda::DevicePtr offsets, unsigned count,
                      cuda::DevicePtr table, cuda::DevicePtr frame_slices) const;

 private:
  explicit GpuPasses(std::shared_ptr<const cuda::Module> module) : module_(std::move(module)) {}
  std::shared_ptr<const cuda::Module> module_;
};

}  // namespace rdmavideo::prores
