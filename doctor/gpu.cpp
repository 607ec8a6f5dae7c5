// SPDX-License-Identifier: Apache-2.0
// check_gpu: GPU memory as a frame source or ring, all informational (skip or warn, never
// fail: host memory works without any of it). The CUDA driver is loaded with dlopen, so the
// doctor has no link-time CUDA dependency and starts on machines without a GPU.
//
// GPUDirect RDMA registers GPU memory either as a dma-buf (ibv_reg_dmabuf_mr, rdma-core 34+,
// and a kernel and RDMA driver that import dma-bufs) or through nvidia-peermem (plain
// ibv_reg_mr on a device pointer). Whether the driver imports a dma-buf can only be learnt
// by registering a GPU buffer, which the doctor does not do.
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <string>

#include "checks.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::doctor {
namespace {

struct LibraryDeleter {
  void operator()(void* handle) const noexcept {
    if (dlclose(handle) != 0) {
      try {
        log().warn("dlclose failed: {}", dlerror());
      } catch (...) {
      }
    }
  }
};
using UniqueLibrary = std::unique_ptr<void, LibraryDeleter>;

// RTLD_NODELETE: libcuda keeps threads and atexit handlers once initialised; closing the
// handle must not unmap it.
UniqueLibrary open_library(const char* name, std::string& error) {
  UniqueLibrary library(dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE));
  if (!library) {
    const char* text = dlerror();
    error = text ? text : "dlopen failed";
  }
  return library;
}

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// The driver API's types, as cuda.h declares them.
using CUresult = int;
using CUdevice = int;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoDevice = 100;

struct CudaFacts {
  bool driver = false;  // libcuda.so.1 loaded
  int driver_version = 0;
  int devices = 0;
  std::vector<std::string> names;
};

Check check_cuda(CudaFacts& facts) {
  Check c{"cuda", "CUDA", Status::ok, "", "", {}};
  std::string error;
  UniqueLibrary cuda = open_library("libcuda.so.1", error);
  if (!cuda) {
    c.status = Status::skip;
    c.detail = fmt::format("no CUDA driver ({}); frames use host memory", error);
    return c;
  }
  facts.driver = true;
  using InitFn = CUresult (*)(unsigned);
  using CountFn = CUresult (*)(int*);
  using VersionFn = CUresult (*)(int*);
  using GetFn = CUresult (*)(CUdevice*, int);
  using NameFn = CUresult (*)(char*, int, CUdevice);
  using ErrorNameFn = CUresult (*)(CUresult, const char**);
  auto cu_init = symbol<InitFn>(cuda.get(), "cuInit");
  auto cu_count = symbol<CountFn>(cuda.get(), "cuDeviceGetCount");
  auto cu_version = symbol<VersionFn>(cuda.get(), "cuDriverGetVersion");
  auto cu_get = symbol<GetFn>(cuda.get(), "cuDeviceGet");
  auto cu_name = symbol<NameFn>(cuda.get(), "cuDeviceGetName");
  auto cu_error_name = symbol<ErrorNameFn>(cuda.get(), "cuGetErrorName");
  if (!cu_init || !cu_count || !cu_version || !cu_get || !cu_name) {
    c.status = Status::warn;
    c.detail =
        "libcuda.so.1 lacks cuInit/cuDeviceGetCount/cuDriverGetVersion: not an NVIDIA CUDA driver";
    c.fix = "reinstall the NVIDIA driver (its libcuda.so.1)";
    return c;
  }
  auto error_text = [&](CUresult rc) {
    const char* text = nullptr;
    if (cu_error_name && cu_error_name(rc, &text) == kCudaSuccess && text) {
      return fmt::format("{} ({})", text, rc);
    }
    return fmt::format("CUresult {}", rc);
  };
  cu_version(&facts.driver_version);
  const std::string version =
      fmt::format("{}.{}", facts.driver_version / 1000, (facts.driver_version % 1000) / 10);
  if (CUresult rc = cu_init(0); rc != kCudaSuccess) {
    c.status = rc == kCudaErrorNoDevice ? Status::skip : Status::warn;
    c.detail = fmt::format("CUDA driver {} found, but cuInit failed: {}", version, error_text(rc));
    if (rc != kCudaErrorNoDevice) {
      c.fix = "nvidia-smi shows whether the kernel driver and libcuda match and the GPU is visible";
    }
    return c;
  }
  if (CUresult rc = cu_count(&facts.devices); rc != kCudaSuccess) {
    c.status = Status::warn;
    c.detail = fmt::format("CUDA driver {}: cuDeviceGetCount failed: {}", version, error_text(rc));
    c.fix = "nvidia-smi shows whether the GPU is visible";
    return c;
  }
  for (int i = 0; i < facts.devices; ++i) {
    CUdevice device = 0;
    char name[256] = {};
    if (cu_get(&device, i) == kCudaSuccess && cu_name(name, sizeof name, device) == kCudaSuccess) {
      facts.names.emplace_back(name);
    }
  }
  if (facts.devices == 0) {
    c.status = Status::skip;
    c.detail = fmt::format("CUDA driver {} found, no CUDA device", version);
    return c;
  }
  std::string names;
  for (const auto& n : facts.names) names += (names.empty() ? "" : ", ") + n;
  c.detail = fmt::format("CUDA driver {}, {} device{}: {}", version, facts.devices,
                         facts.devices == 1 ? "" : "s", names);
  return c;
}

Check check_dmabuf_verbs(const CudaFacts& cuda, bool& has_dmabuf) {
  Check c{"dmabuf_verbs", "dma-buf (libibverbs)", Status::ok, "", "", {}};
  std::string error;
  UniqueLibrary verbs = open_library("libibverbs.so.1", error);
  if (!verbs) {
    c.status = Status::warn;
    c.detail = fmt::format("cannot load libibverbs.so.1: {}", error);
    c.fix = "install rdma-core's libibverbs1";
    return c;
  }
  has_dmabuf = dlsym(verbs.get(), "ibv_reg_dmabuf_mr") != nullptr;
  if (has_dmabuf) {
    c.detail = "libibverbs has ibv_reg_dmabuf_mr: GPU memory can be registered as a dma-buf";
    return c;
  }
  c.status = cuda.devices > 0 ? Status::warn : Status::skip;
  c.detail = "libibverbs has no ibv_reg_dmabuf_mr (rdma-core older than 34)";
  if (cuda.devices > 0) c.fix = "upgrade rdma-core to 34 or newer, or load nvidia-peermem";
  return c;
}

Check check_dmabuf_driver(const CudaFacts& cuda, bool has_dmabuf) {
  Check c{"dmabuf_driver", "dma-buf (RDMA driver)", Status::skip, "", "", {}};
  if (cuda.devices == 0) {
    c.detail =
        "not testable without a GPU: whether the kernel and RDMA driver import GPU "
        "dma-bufs shows only when one is registered";
  } else if (!has_dmabuf) {
    c.detail = "not testable: libibverbs has no ibv_reg_dmabuf_mr";
  } else {
    c.detail =
        "not tried: the doctor does not allocate GPU memory; a failing ibv_reg_dmabuf_mr "
        "(EOPNOTSUPP) means the kernel or RDMA driver lacks dma-buf import";
  }
  return c;
}

Check check_peermem(const CudaFacts& cuda) {
  Check c{"nvidia_peermem", "nvidia-peermem", Status::ok, "", "", {}};
  std::error_code ec;
  if (std::filesystem::exists("/sys/module/nvidia_peermem", ec)) {
    c.detail = "module loaded: ibv_reg_mr takes CUDA device pointers";
    return c;
  }
  if (cuda.devices == 0) {
    c.status = Status::skip;
    c.detail = "module not loaded (not needed without a GPU)";
    return c;
  }
  c.status = Status::warn;
  c.detail = "module not loaded: GPUDirect RDMA goes through dma-buf only";
  c.fix = "modprobe nvidia-peermem, if the RDMA driver cannot import dma-bufs";
  return c;
}

}  // namespace

Section check_gpu() {
  Section s{"GPU memory (informational)", "gpu", {}, nullptr};
  CudaFacts cuda;
  bool has_dmabuf = false;
  s.checks.push_back(check_cuda(cuda));
  s.checks.push_back(check_dmabuf_verbs(cuda, has_dmabuf));
  s.checks.push_back(check_dmabuf_driver(cuda, has_dmabuf));
  s.checks.push_back(check_peermem(cuda));
  s.facts = {{"cuda_driver", cuda.driver},
             {"cuda_driver_version", cuda.driver_version},
             {"cuda_devices", cuda.devices},
             {"cuda_device_names", cuda.names},
             {"ibv_reg_dmabuf_mr", has_dmabuf}};
  return s;
}

}  // namespace rdmavideo::doctor
