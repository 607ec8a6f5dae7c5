// SPDX-License-Identifier: Apache-2.0
// Loading the embedded kernels (kernels.cu) and launching them through the driver API.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "cuda/api.hpp"
#include "cuda/composite_pixels.hpp"
#include "cuda/convert_pixels.hpp"
#include "cuda/kernels.hpp"
#include "cuda/prores_slices.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::cuda {

using namespace detail;

bool kernels_built() { return kKernelImageBytes > 0; }

namespace {

// Launches in blocks of 32 x 8 threads: as many blocks as cover `threads` along an axis.
constexpr unsigned kBlockX = 32, kBlockY = 8;
unsigned blocks(unsigned threads, unsigned per_block) {
  return (threads + per_block - 1) / per_block;
}

// "7.5" for "75", "12.0" for "120".
std::string capability(std::string_view arch) {
  if (arch.size() < 2) return std::string(arch);
  return fmt::format("{}.{}", arch.substr(0, arch.size() - 1), arch.substr(arch.size() - 1));
}

std::string capabilities(std::string_view list) {
  std::string out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    out += (out.empty() ? "" : ", ") + capability(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

}  // namespace

std::string why_no_code(int result, const DeviceFacts& gpu, const Driver& driver) {
  if (result != kErrorNoBinaryForGpu && result != kErrorUnsupportedPtxVersion &&
      result != kErrorInvalidPtx) {
    return {};
  }
  const std::string built =
      fmt::format("built by nvcc {} with code for compute capability {} and PTX for {}",
                  kKernelToolkit, capabilities(kKernelSass), capabilities(kKernelPtx));
  const std::string own = fmt::format("{}.{}", gpu.compute_major, gpu.compute_minor);
  // A driver older than the toolkit cannot JIT its PTX (its PTX ISA is newer than the driver
  // knows), and may refuse its SASS: the driver is what to update, not the GPU.
  const int toolkit = [] {
    int major = 0, minor = 0;
    return std::sscanf(kKernelToolkit, "%d.%d", &major, &minor) == 2 ? major * 1000 + minor * 10
                                                                     : 0;
  }();
  if (toolkit > 0 && driver.version() < toolkit) {
    return fmt::format(
        " (the kernels were {}; CUDA driver {} is older than that toolkit and runs none of it on "
        "compute capability {}: update the NVIDIA driver to {} or newer)",
        built, driver.version_text(), own, kKernelToolkit);
  }
  return fmt::format(
      " (the kernels were {}; none of it runs on compute capability {} with CUDA driver {})", built,
      own, driver.version_text());
}

Result<std::shared_ptr<const Kernels>> Kernels::shared(const std::shared_ptr<Device>& device) {
  static std::mutex mu;
  // By device, which the entry keeps open so its address names it for good.
  static std::map<const Device*,
                  std::pair<std::shared_ptr<Device>, Result<std::shared_ptr<const Kernels>>>>
      loaded;
  std::lock_guard lock(mu);
  if (auto it = loaded.find(device.get()); it != loaded.end()) return it->second.second;
  auto load = [&]() -> Result<std::shared_ptr<const Kernels>> {
    if (!kernels_built()) {
      return make_error(ErrorCode::unsupported,
                        "this build has no CUDA kernels (the CUDA toolkit was not found when it "
                        "was configured: install nvcc and configure again)");
    }
    const Api& a = device->driver().api();
    ContextScope scope(a, device->context_);
    CUmodule module = nullptr;
    if (CUresult rc = a.cuModuleLoadData(&module, kKernelImage); rc != kSuccess) {
      return make_error(ErrorCode::unsupported, "{}: the kernels cannot be loaded: {}{}",
                        device->describe(), device->driver().error_text(rc),
                        why_no_code(rc, device->facts(), device->driver()));
    }
    std::shared_ptr<Kernels> kernels(new Kernels(device, module));
    static constexpr const char* kNames[kFunctions] = {
        "rdmavideo_first_difference", "rdmavideo_packed422_to_nv12", "rdmavideo_yuv422p10_to_p010",
        "rdmavideo_rgb24_to_rgb0",    "rdmavideo_place_nv12",        "rdmavideo_fill_nv12",
        "rdmavideo_gray_nv12",        "rdmavideo_prores_dct",        "rdmavideo_prores_code",
        "rdmavideo_prores_gather",    "rdmavideo_to_yuv422p10",      "rdmavideo_prores_search",
        "rdmavideo_prores_finer",     "rdmavideo_prores_offsets"};
    for (int f = 0; f < kFunctions; ++f) {
      CUfunction function = nullptr;
      if (CUresult rc = a.cuModuleGetFunction(&function, module, kNames[f]); rc != kSuccess) {
        return make_error(ErrorCode::unsupported, "{}: cuModuleGetFunction({}) failed: {}",
                          device->describe(), kNames[f], device->driver().error_text(rc));
      }
      kernels->functions_[f] = function;
    }
    return std::shared_ptr<const Kernels>(std::move(kernels));
  };
  return loaded.emplace(device.get(), std::pair{device, load()}).first->second.second;
}

Kernels::~Kernels() {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  a.cuModuleUnload(module_);
}

Result<std::optional<uint64_t>> Kernels::first_difference(Stream& stream, DevicePtr a_at,
                                                          DevicePtr b_at, uint64_t from,
                                                          uint64_t bytes) const {
  if ((a_at | b_at) % 16 != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "first_difference: 0x{:x} and 0x{:x} must be 16-byte aligned", a_at, b_at);
  }
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  if (!stream.scratch_) {
    auto scratch = device_->allocate(sizeof(uint64_t));
    if (!scratch) return Unexpected(scratch.error());
    stream.scratch_ = std::move(*scratch);
  }
  const DevicePtr answer_at = *stream.scratch_;
  uint64_t answer = UINT64_MAX;
  if (auto ok =
          device_->check(a.cuMemcpyHtoDAsync(answer_at, &answer, sizeof answer, stream.stream_),
                         "cuMemcpyHtoDAsync");
      !ok) {
    return Unexpected(ok.error());
  }
  // A grid of up to 1024 blocks of 256 threads strides over the 16-byte words.
  constexpr unsigned kThreads = 256;
  const uint64_t words = bytes / 16;
  const auto blocks =
      static_cast<unsigned>(std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, 1024));
  CUdeviceptr pa = a_at, pb = b_at, pfirst = answer_at;
  unsigned long long from_arg = from,
                     bytes_arg = bytes;  // NOLINT(google-runtime-int): the kernel's
  void* params[] = {&pa, &pb, &from_arg, &bytes_arg, &pfirst};
  if (auto ok = launch(stream, kFirstDifference, blocks, 1, kThreads, 1, params,
                       "rdmavideo_first_difference");
      !ok) {
    return Unexpected(ok.error());
  }
  if (auto ok =
          device_->check(a.cuMemcpyDtoHAsync(&answer, answer_at, sizeof answer, stream.stream_),
                         "cuMemcpyDtoHAsync");
      !ok) {
    return Unexpected(ok.error());
  }
  if (auto ok = device_->check(a.cuStreamSynchronize(stream.stream_), "cuStreamSynchronize"); !ok) {
    return Unexpected(ok.error());
  }
  if (answer == UINT64_MAX) return std::optional<uint64_t>{};
  return std::optional<uint64_t>{answer};
}

Result<void> Kernels::launch(Stream& stream, Function function, unsigned grid_x, unsigned grid_y,
                             unsigned block_x, unsigned block_y, void** params,
                             const char* name) const {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuLaunchKernel(functions_[function], grid_x, grid_y, 1, block_x, block_y,
                                         1, 0, stream.stream_, params, nullptr),
                        fmt::format("cuLaunchKernel({})", name));
}

Result<void> Kernels::convert(Stream& stream, Conversion conversion, const Planes& from,
                              const Planes& to, unsigned width, unsigned height) const {
  // A thread a block: a pixel pair in a row pair (4:2:2 to 4:2:0), or a pixel (rgb24).
  const bool per_pixel = conversion == Conversion::rgb24_to_rgb0;
  const unsigned grid_x = blocks(per_pixel ? width : (width + 1) / 2, kBlockX);
  const unsigned grid_y = blocks(per_pixel ? height : (height + 1) / 2, kBlockY);
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
      return launch(stream, kPacked422ToNv12, grid_x, grid_y, kBlockX, kBlockY, params,
                    "rdmavideo_packed422_to_nv12");
    }
    case Conversion::yuv422p10_to_p010: {
      void* params[] = {&at[0],  &pitch[0],     &at[1],  &pitch[1],     &at[2], &pitch[2],
                        &out[0], &out_pitch[0], &out[1], &out_pitch[1], &width, &height};
      return launch(stream, kYuv422p10ToP010, grid_x, grid_y, kBlockX, kBlockY, params,
                    "rdmavideo_yuv422p10_to_p010");
    }
    case Conversion::rgb24_to_rgb0: {
      void* params[] = {&at[0], &pitch[0], &out[0], &out_pitch[0], &width, &height};
      return launch(stream, kRgb24ToRgb0, grid_x, grid_y, kBlockX, kBlockY, params,
                    "rdmavideo_rgb24_to_rgb0");
    }
  }
  return make_error(ErrorCode::invalid_argument, "unknown conversion");
}

Result<void> Kernels::to_yuv422p10(Stream& stream, Input422 input, const Planes& from,
                                   const Picture422& to) const {
  static_assert(static_cast<int>(Input422::v210) == pixels::kInV210 &&
                static_cast<int>(Input422::nv12) == pixels::kInNv12);
  // A thread a pixel pair of a row.
  pixels::Planes3 planes{};
  for (int p = 0; p < 3; ++p) {
    planes.in[p] = reinterpret_cast<const uint8_t*>(from.at[p]);
    planes.in_pitch[p] = from.pitch[p];
    planes.out[p] = reinterpret_cast<uint8_t*>(to.planes.at[p]);
    planes.out_pitch[p] = to.planes.pitch[p];
  }
  int kind = static_cast<int>(input);
  unsigned width = to.width, height = to.height;
  void* params[] = {&kind, &planes, &width, &height};
  return launch(stream, kToYuv422p10, blocks((width + 1) / 2, kBlockX), blocks(height, kBlockY),
                kBlockX, kBlockY, params, "rdmavideo_to_yuv422p10");
}

namespace {

static_assert(static_cast<int>(Kernels::Layout::yuv444p16) == pixels::layout::kYuv444p16 &&
              static_cast<int>(Kernels::Layout::rgb24) == pixels::layout::kRgb24);

pixels::Target target(const Kernels::Nv12& canvas) {
  return {reinterpret_cast<uint8_t*>(canvas.planes.at[0]),
          reinterpret_cast<uint8_t*>(canvas.planes.at[1]),
          canvas.planes.pitch[0],
          canvas.planes.pitch[1],
          canvas.width,
          canvas.height,
          canvas.bt709 ? 1 : 0};
}

}  // namespace

Result<void> Kernels::launch_over(Stream& stream, Function function, const Nv12& canvas, Area area,
                                  void** params, const char* name) const {
  if (area.x < 0 || area.y < 0 || area.width <= 0 || area.height <= 0 ||
      (area.x | area.y | area.width | area.height) % 2 != 0 ||
      static_cast<unsigned>(area.x + area.width) > canvas.width ||
      static_cast<unsigned>(area.y + area.height) > canvas.height) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: {}x{} at ({}, {}) is not an even rectangle inside the {}x{} canvas",
                      name, area.width, area.height, area.x, area.y, canvas.width, canvas.height);
  }
  // A thread a block of two pixels in two rows of the area.
  return launch(stream, function, blocks(static_cast<unsigned>(area.width) / 2, kBlockX),
                blocks(static_cast<unsigned>(area.height) / 2, kBlockY), kBlockX, kBlockY, params,
                name);
}

Result<void> Kernels::place(Stream& stream, const Picture& picture, const Nv12& canvas,
                            Area area) const {
  if (picture.width == 0 || picture.height == 0 ||
      ((picture.layout == Layout::yuv422p16 || picture.layout == Layout::yuv444p16) &&
       (picture.bits < 8 || picture.bits > 16))) {
    return make_error(ErrorCode::invalid_argument, "place: a {}x{} picture of {} bits",
                      picture.width, picture.height, picture.bits);
  }
  pixels::Source source{};
  for (int p = 0; p < 3; ++p) {
    source.plane[p] = reinterpret_cast<const uint8_t*>(picture.planes.at[p]);
    source.pitch[p] = picture.planes.pitch[p];
  }
  source.width = picture.width;
  source.height = picture.height;
  source.layout = static_cast<int>(picture.layout);
  source.bits = picture.bits;
  pixels::Target to = target(canvas);
  pixels::Area at{area.x, area.y, area.width, area.height};
  void* params[] = {&source, &to, &at};
  return launch_over(stream, kPlaceNv12, canvas, area, params, "rdmavideo_place_nv12");
}

Result<void> Kernels::fill(Stream& stream, const Nv12& canvas, Area area, uint8_t r, uint8_t g,
                           uint8_t b) const {
  pixels::Target to = target(canvas);
  pixels::Area at{area.x, area.y, area.width, area.height};
  pixels::Yuv colour = pixels::rgb_to_yuv(r, g, b, canvas.bt709 ? 1 : 0);
  void* params[] = {&to, &at, &colour};
  return launch_over(stream, kFillNv12, canvas, area, params, "rdmavideo_fill_nv12");
}

Result<void> Kernels::gray(Stream& stream, DevicePtr luma, size_t pitch, const Nv12& canvas,
                           Area area) const {
  CUdeviceptr from = luma;
  unsigned long long from_pitch = pitch;  // NOLINT(google-runtime-int): the kernel's
  pixels::Target to = target(canvas);
  pixels::Area at{area.x, area.y, area.width, area.height};
  void* params[] = {&from, &from_pitch, &to, &at};
  return launch_over(stream, kGrayNv12, canvas, area, params, "rdmavideo_gray_nv12");
}

// A thread a slice, in blocks of this many.
constexpr unsigned kSliceThreads = 64;

Result<void> Kernels::prores_dct(Stream& stream, const Picture422& picture, DevicePtr slices,
                                 unsigned count, DevicePtr coefficients) const {
  const auto samples = [](DevicePtr at) {
    return reinterpret_cast<const uint16_t*>(static_cast<uintptr_t>(at));
  };
  prores::PlanesRef planes{samples(picture.planes.at[0]),
                           samples(picture.planes.at[1]),
                           samples(picture.planes.at[2]),
                           picture.planes.pitch[0] / 2,
                           picture.planes.pitch[1] / 2,
                           picture.width,
                           picture.height};
  CUdeviceptr slices_arg = slices, coefficients_arg = coefficients;
  void* params[] = {&planes, &slices_arg, &count, &coefficients_arg};
  // A block a slice, a thread each of its blocks (8 a macroblock).
  return launch(stream, kProresDct, count, 1, prores::kMaxSliceMacroblocks * 8, 1, params,
                "rdmavideo_prores_dct");
}

Result<void> Kernels::prores_code(Stream& stream, DevicePtr coefficients, DevicePtr slices,
                                  unsigned count, DevicePtr matrix, DevicePtr quantisers,
                                  int quantiser, DevicePtr slots, uint64_t slot_bytes,
                                  DevicePtr sizes, DevicePtr rate) const {
  CUdeviceptr args[] = {coefficients, slices, matrix, quantisers, slots, sizes, rate};
  unsigned long long slot_arg = slot_bytes;  // NOLINT(google-runtime-int): the kernel's
  void* params[] = {&args[0],   &args[1], &count,    &args[2], &args[3],
                    &quantiser, &args[4], &slot_arg, &args[5], &args[6]};
  return launch(stream, kProresCode, blocks(count, kSliceThreads), 1, kSliceThreads, 1, params,
                "rdmavideo_prores_code");
}

Result<void> Kernels::prores_search(Stream& stream, DevicePtr sizes, unsigned count,
                                    DevicePtr rate) const {
  CUdeviceptr args[] = {sizes, rate};
  void* params[] = {&args[0], &count, &args[1]};
  return launch(stream, kProresSearch, 1, 1, prores::kRateThreads, 1, params,
                "rdmavideo_prores_search");
}

Result<void> Kernels::prores_finer(Stream& stream, DevicePtr sizes, DevicePtr finer, unsigned count,
                                   DevicePtr rate, DevicePtr quantisers) const {
  CUdeviceptr args[] = {sizes, finer, rate, quantisers};
  void* params[] = {&args[0], &args[1], &count, &args[2], &args[3]};
  return launch(stream, kProresFiner, 1, 1, prores::kRateThreads, 1, params,
                "rdmavideo_prores_finer");
}

Result<void> Kernels::prores_offsets(Stream& stream, DevicePtr sizes, unsigned count,
                                     DevicePtr rate, DevicePtr offsets) const {
  CUdeviceptr args[] = {sizes, rate, offsets};
  void* params[] = {&args[0], &count, &args[1], &args[2]};
  return launch(stream, kProresOffsets, 1, 1, prores::kRateThreads, 1, params,
                "rdmavideo_prores_offsets");
}

Result<void> Kernels::prores_gather(Stream& stream, DevicePtr slots, uint64_t slot_bytes,
                                    DevicePtr sizes, DevicePtr offsets, unsigned count,
                                    DevicePtr table, DevicePtr frame_slices) const {
  CUdeviceptr args[] = {slots, sizes, offsets, table, frame_slices};
  unsigned long long slot_arg = slot_bytes;  // NOLINT(google-runtime-int): the kernel's
  void* params[] = {&args[0], &slot_arg, &args[1], &args[2], &count, &args[3], &args[4]};
  return launch(stream, kProresGather, blocks(count, kSliceThreads), 1, kSliceThreads, 1, params,
                "rdmavideo_prores_gather");
}

}  // namespace rdmavideo::cuda
