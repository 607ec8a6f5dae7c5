// SPDX-License-Identifier: Apache-2.0
// Loading a room's embedded kernels and launching them through the driver API.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "cuda/api.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::cuda {

using namespace detail;

namespace {

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

std::string why_no_code(int result, const EmbeddedImage& image, const DeviceFacts& gpu,
                        const Driver& driver) {
  if (result != kErrorNoBinaryForGpu && result != kErrorUnsupportedPtxVersion &&
      result != kErrorInvalidPtx) {
    return {};
  }
  const std::string built =
      fmt::format("built by nvcc {} with code for compute capability {} and PTX for {}",
                  image.toolkit, capabilities(image.sass), capabilities(image.ptx));
  const std::string own = fmt::format("{}.{}", gpu.compute_major, gpu.compute_minor);
  // A driver older than the toolkit cannot JIT its PTX (its PTX ISA is newer than the driver
  // knows), and may refuse its SASS: the driver is what to update, not the GPU.
  const int toolkit = [&] {
    int major = 0, minor = 0;
    return std::sscanf(image.toolkit, "%d.%d", &major, &minor) == 2 ? major * 1000 + minor * 10 : 0;
  }();
  if (toolkit > 0 && driver.version() < toolkit) {
    return fmt::format(
        " (the kernels were {}; CUDA driver {} is older than that toolkit and runs none of it on "
        "compute capability {}: update the NVIDIA driver to {} or newer)",
        built, driver.version_text(), own, image.toolkit);
  }
  return fmt::format(
      " (the kernels were {}; none of it runs on compute capability {} with CUDA driver {})", built,
      own, driver.version_text());
}

Result<std::shared_ptr<const Module>> Module::shared(const Device& device,
                                                     const KernelImage& kernels) {
  static std::mutex mu;
  // By device and image; the entry keeps the device open, so its address names it for good.
  static std::map<std::pair<const Device*, const EmbeddedImage*>,
                  std::pair<std::shared_ptr<const Device>, Result<std::shared_ptr<const Module>>>>
      loaded;
  std::lock_guard lock(mu);
  const auto key = std::pair{&device, &kernels.image};
  if (auto it = loaded.find(key); it != loaded.end()) return it->second.second;
  auto load = [&]() -> Result<std::shared_ptr<const Module>> {
    if (!kernels.image.built()) {
      return make_error(ErrorCode::unsupported,
                        "this build has no CUDA kernels, {} among them (the CUDA toolkit was not "
                        "found when it was configured: install nvcc and configure again)",
                        kernels.what);
    }
    const Api& a = device.driver().api();
    ContextScope scope(a, device.context_);
    CUmodule module = nullptr;
    if (CUresult rc = a.cuModuleLoadData(&module, kernels.image.bytes); rc != kSuccess) {
      return make_error(ErrorCode::unsupported, "{}: {} cannot be loaded: {}{}", device.describe(),
                        kernels.what, device.driver().error_text(rc),
                        why_no_code(rc, kernels.image, device.facts(), device.driver()));
    }
    std::shared_ptr<Module> loaded_module(new Module(device.shared_from_this(), kernels, module));
    for (const char* name : kernels.functions) {
      CUfunction function = nullptr;
      if (CUresult rc = a.cuModuleGetFunction(&function, module, name); rc != kSuccess) {
        return make_error(ErrorCode::unsupported, "{}: cuModuleGetFunction({}) failed: {}",
                          device.describe(), name, device.driver().error_text(rc));
      }
      loaded_module->functions_.push_back(function);
    }
    return std::shared_ptr<const Module>(std::move(loaded_module));
  };
  return loaded.emplace(key, std::pair{device.shared_from_this(), load()}).first->second.second;
}

Module::~Module() {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  a.cuModuleUnload(module_);
}

Result<void> Module::launch(Stream& stream, size_t function, Extent grid, Extent block,
                            void** params) const {
  if (function >= functions_.size()) {
    return make_error(ErrorCode::invalid_argument, "{}: no function {} (it has {})", kernels_.what,
                      function, functions_.size());
  }
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuLaunchKernel(functions_[function], grid.x, grid.y, 1, block.x, block.y,
                                         1, 0, stream.stream_, params, nullptr),
                        fmt::format("cuLaunchKernel({})", kernels_.functions[function]));
}

}  // namespace rdmavideo::cuda
