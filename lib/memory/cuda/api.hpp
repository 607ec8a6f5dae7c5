// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API entry points the library uses, as the driver ABI defines them (no
// cuda.h), filled by Driver::load() through cuGetProcAddress.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmavideo::cuda::detail {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUstream = void*;
using CUevent = void*;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the ABI's type
using CUmodule = void*;
using CUfunction = void*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kNotReady = 600;
inline constexpr CUresult kErrorNoDevice = 100;
inline constexpr CUresult kErrorNoBinaryForGpu = 209;
inline constexpr CUresult kErrorInvalidPtx = 218;
inline constexpr CUresult kErrorUnsupportedPtxVersion = 222;

// Device attributes (CUdevice_attribute).
inline constexpr int kAttrComputeMajor = 75;
inline constexpr int kAttrComputeMinor = 76;
inline constexpr int kAttrGpuDirectRdmaSupported = 116;
inline constexpr int kAttrGpuDirectRdmaFlushWritesOptions = 117;
inline constexpr int kAttrGpuDirectRdmaWritesOrdering = 118;
inline constexpr int kAttrDmaBufSupported = 124;
// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS.
inline constexpr int kPointerSyncMemops = 6;
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD.
inline constexpr int kHandleDmaBufFd = 1;
// cuFlushGPUDirectRDMAWrites: target current context, scope to owner.
inline constexpr int kFlushTargetCurrentCtx = 0;
inline constexpr int kFlushToOwner = 100;
// CUflushGPUDirectRDMAWritesOptions: cuFlushGPUDirectRDMAWrites is supported.
inline constexpr int kFlushOptionHost = 1;
// cuEventCreate: CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING; cuStreamCreate:
// CU_STREAM_NON_BLOCKING.
inline constexpr unsigned kEventBlockingSync = 1;
inline constexpr unsigned kEventDisableTiming = 2;
inline constexpr unsigned kStreamNonBlocking = 1;

// CUmemorytype, for CUDA_MEMCPY2D.
inline constexpr unsigned kMemoryHost = 1;
inline constexpr unsigned kMemoryDevice = 2;

// CUDA_MEMCPY2D (the _v2 ABI, CUDA 3.2 on): a pitched copy between host and device memory.
struct Memcpy2D {
  size_t srcXInBytes = 0, srcY = 0;
  unsigned srcMemoryType = 0;
  const void* srcHost = nullptr;
  CUdeviceptr srcDevice = 0;
  void* srcArray = nullptr;
  size_t srcPitch = 0;
  size_t dstXInBytes = 0, dstY = 0;
  unsigned dstMemoryType = 0;
  void* dstHost = nullptr;
  CUdeviceptr dstDevice = 0;
  void* dstArray = nullptr;
  size_t dstPitch = 0;
  size_t WidthInBytes = 0;
  size_t Height = 0;
};

struct Api {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char* id, int length, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;
  CUresult (*cuGetErrorName)(CUresult result, const char** name) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext context) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext* context) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* at, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr at) = nullptr;
  CUresult (*cuMemHostAlloc)(void** at, size_t bytes, unsigned flags) = nullptr;
  CUresult (*cuMemFreeHost)(void* at) = nullptr;
  CUresult (*cuMemHostRegister)(void* at, size_t bytes, unsigned flags) = nullptr;
  CUresult (*cuMemHostUnregister)(void* at) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr to, const void* from, size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoH)(void* to, CUdeviceptr from, size_t bytes) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr to, const void* from, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void* to, CUdeviceptr from, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr at, unsigned char value, size_t bytes) = nullptr;
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags) = nullptr;
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventQuery)(CUevent event) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuPointerSetAttribute)(const void* value, int attribute, CUdeviceptr at) = nullptr;
  CUresult (*cuMemcpy2DAsync)(const Memcpy2D* copy, CUstream stream) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module,
                                  const char* name) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;
  // Optional: older drivers lack them, and the features that need them say so.
  CUresult (*cuMemGetHandleForAddressRange)(void* handle, CUdeviceptr at, size_t bytes, int type,
                                            unsigned long long flags) = nullptr;  // NOLINT
  CUresult (*cuFlushGPUDirectRDMAWrites)(int target, int scope) = nullptr;
};

// Makes a device's primary context current on this thread for one call, as it was after.
class ContextScope {
 public:
  ContextScope(const Api& api, void* context) : api_(api) {
    ok_ = api_.cuCtxPushCurrent(context) == kSuccess;
  }
  ~ContextScope() {
    if (ok_) {
      CUcontext popped = nullptr;
      api_.cuCtxPopCurrent(&popped);
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  bool ok() const { return ok_; }

 private:
  const Api& api_;
  bool ok_ = false;
};

}  // namespace rdmavideo::cuda::detail
