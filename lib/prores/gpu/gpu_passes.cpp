// SPDX-License-Identifier: Apache-2.0
#include "gpu/gpu_passes.hpp"

#include "gpu/picture422.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

enum Function { kMakePicture, kDct, kCount, kSearch, kPlace, kWrite };
constexpr const char* kFunctions[] = {"rdmavideo_to_yuv422p10", "rdmavideo_prores_dct",
                                      "rdmavideo_prores_count", "rdmavideo_prores_search",
                                      "rdmavideo_prores_place", "rdmavideo_prores_write"};
const cuda::KernelImage kKernels{kKernelImage, kFunctions, "the ProRes encoder's kernels"};

// Launches in blocks of 32 x 8 threads.
constexpr unsigned kBlockX = 32, kBlockY = 8;

static_assert(static_cast<int>(GpuInput::v210) == input::kInV210 &&
              static_cast<int>(GpuInput::nv12) == input::kInNv12);

}  // namespace

Result<GpuPasses> GpuPasses::load(const cuda::Device& device) {
  auto module = cuda::Module::shared(device, kKernels);
  if (!module) return Unexpected(module.error());
  return GpuPasses(std::move(*module));
}

Result<void> GpuPasses::make_picture(cuda::Stream& stream, GpuInput kind, const DevicePlanes& from,
                                     const DevicePicture& to) const {
  // A thread a pixel pair of a row.
  input::Planes3 planes{};
  for (int p = 0; p < 3; ++p) {
    planes.in[p] = reinterpret_cast<const uint8_t*>(from.at[p]);
    planes.in_pitch[p] = from.pitch[p];
    planes.out[p] = reinterpret_cast<uint8_t*>(to.planes.at[p]);
    planes.out_pitch[p] = to.planes.pitch[p];
  }
  int input = static_cast<int>(kind);
  unsigned width = to.width, height = to.height;
  void* params[] = {&input, &planes, &width, &height};
  return module_->launch(stream, kMakePicture,
                         {cuda::blocks((width + 1) / 2, kBlockX), cuda::blocks(height, kBlockY)},
                         {kBlockX, kBlockY}, params);
}

Result<void> GpuPasses::dct(cuda::Stream& stream, const DevicePicture& picture,
                            cuda::DevicePtr slices, unsigned count,
                            cuda::DevicePtr coefficients) const {
  const auto samples = [](cuda::DevicePtr at) {
    return reinterpret_cast<const uint16_t*>(static_cast<uintptr_t>(at));
  };
  PlanesRef planes{samples(picture.planes.at[0]),
                   samples(picture.planes.at[1]),
                   samples(picture.planes.at[2]),
                   picture.planes.pitch[0] / 2,
                   picture.planes.pitch[1] / 2,
                   picture.width,
                   picture.height};
  cuda::DevicePtr slices_arg = slices, coefficients_arg = coefficients;
  void* params[] = {&planes, &slices_arg, &count, &coefficients_arg};
  // A block a slice, a thread each of its blocks (8 a macroblock).
  return module_->launch(stream, kDct, {count, 1}, {kMaxSliceMacroblocks * 8, 1}, params);
}

Result<void> GpuPasses::count(cuda::Stream& stream, cuda::DevicePtr coefficients,
                              cuda::DevicePtr slices, unsigned count, cuda::DevicePtr matrix,
                              cuda::DevicePtr rate, int first_row, int rows,
                              cuda::DevicePtr sizes) const {
  cuda::DevicePtr args[] = {coefficients, slices, matrix, rate, sizes};
  void* params[] = {&args[0], &args[1], &count, &args[2], &args[3], &first_row, &args[4]};
  return module_->launch(stream, kCount, {count, static_cast<unsigned>(rows)}, {kSliceThreads, 1},
                         params);
}

Result<void> GpuPasses::search(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                               cuda::DevicePtr rate) const {
  cuda::DevicePtr args[] = {sizes, rate};
  void* params[] = {&args[0], &count, &args[1]};
  return module_->launch(stream, kSearch, {1, 1}, {kRateThreads, 1}, params);
}

Result<void> GpuPasses::place(cuda::Stream& stream, cuda::DevicePtr sizes, unsigned count,
                              cuda::DevicePtr rate, cuda::DevicePtr quantisers,
                              cuda::DevicePtr chosen, cuda::DevicePtr offsets) const {
  cuda::DevicePtr args[] = {sizes, rate, quantisers, chosen, offsets};
  void* params[] = {&args[0], &count, &args[1], &args[2], &args[3], &args[4]};
  return module_->launch(stream, kPlace, {1, 1}, {kRateThreads, 1}, params);
}

Result<void> GpuPasses::write(cuda::Stream& stream, cuda::DevicePtr coefficients,
                              cuda::DevicePtr slices, unsigned count, cuda::DevicePtr matrix,
                              cuda::DevicePtr quantisers, cuda::DevicePtr chosen,
                              cuda::DevicePtr offsets, cuda::DevicePtr table,
                              cuda::DevicePtr frame_slices) const {
  cuda::DevicePtr args[] = {coefficients, slices,  matrix, quantisers,
                            chosen,       offsets, table,  frame_slices};
  void* params[] = {&args[0], &args[1], &count,   &args[2], &args[3],
                    &args[4], &args[5], &args[6], &args[7]};
  return module_->launch(stream, kWrite, {count, 1}, {kSliceThreads, 1}, params);
}

}  // namespace rdmavideo::prores
