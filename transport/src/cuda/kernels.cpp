// SPDX-License-Identifier: Apache-2.0
// Loading the embedded kernels (kernels.cu) and launching them through the driver API.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "cuda/api.hpp"
#include "cuda/kernels.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::cuda {

using namespace detail;

bool kernels_built() { return kKernelImageBytes > 0; }

Result<std::shared_ptr<const Kernels>> Kernels::shared(const std::shared_ptr<Device>& device) {
  static std::mutex mu;
  // By device, which the entry keeps open so its address names it for good.
  static std::map<const Device*, std::pair<std::shared_ptr<Device>, Result<std::shared_ptr<const Kernels>>>>
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
      const auto& f = device->facts();
      return make_error(ErrorCode::unsupported, "{}: the kernels cannot be loaded: {}{}",
                        device->describe(), device->driver().error_text(rc),
                        rc == kErrorNoBinaryForGpu
                            ? fmt::format(" (this build has no code for compute capability {}.{})",
                                          f.compute_major, f.compute_minor)
                            : "");
    }
    CUfunction first_difference = nullptr;
    if (CUresult rc = a.cuModuleGetFunction(&first_difference, module, "rdmavideo_first_difference");
        rc != kSuccess) {
      a.cuModuleUnload(module);
      return make_error(ErrorCode::unsupported, "{}: cuModuleGetFunction(rdmavideo_first_difference) failed: {}",
                        device->describe(), device->driver().error_text(rc));
    }
    return std::shared_ptr<const Kernels>(new Kernels(device, module, first_difference));
  };
  return loaded.emplace(device.get(), std::pair{device, load()}).first->second.second;
}

Kernels::~Kernels() {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  a.cuModuleUnload(module_);
}

Result<std::optional<uint64_t>> Kernels::first_difference(Stream& stream, DevicePtr a_at, DevicePtr b_at,
                                                           uint64_t from, uint64_t bytes) const {
  if ((a_at | b_at) % 16 != 0) {
    return make_error(ErrorCode::invalid_argument, "first_difference: 0x{:x} and 0x{:x} must be 16-byte aligned",
                      a_at, b_at);
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
  if (auto ok = device_->check(a.cuMemcpyHtoDAsync(answer_at, &answer, sizeof answer, stream.stream_),
                               "cuMemcpyHtoDAsync");
      !ok) {
    return Unexpected(ok.error());
  }
  // A grid of up to 1024 blocks of 256 threads strides over the 16-byte words.
  constexpr unsigned kThreads = 256;
  const uint64_t words = bytes / 16;
  const auto blocks = static_cast<unsigned>(std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, 1024));
  CUdeviceptr pa = a_at, pb = b_at, pfirst = answer_at;
  unsigned long long from_arg = from, bytes_arg = bytes;  // NOLINT(google-runtime-int): the kernel's
  void* params[] = {&pa, &pb, &from_arg, &bytes_arg, &pfirst};
  if (auto ok = device_->check(a.cuLaunchKernel(first_difference_, blocks, 1, 1, kThreads, 1, 1, 0,
                                                stream.stream_, params, nullptr),
                               "cuLaunchKernel(rdmavideo_first_difference)");
      !ok) {
    return Unexpected(ok.error());
  }
  if (auto ok = device_->check(a.cuMemcpyDtoHAsync(&answer, answer_at, sizeof answer, stream.stream_),
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

}  // namespace rdmavideo::cuda
