// SPDX-License-Identifier: Apache-2.0
// The CUDA driver, loaded at run time: one binary runs on machines with and without a GPU
// and says plainly which of driver, device or feature is missing.
//
// The driver API is opened with dlopen("libcuda.so.1") and every entry point is looked up
// through cuGetProcAddress with the driver ABI version it was introduced or last changed in
// (as NCCL and GStreamer do), so a newer driver never hands an older caller a changed
// signature. Entry points a feature needs but an old driver lacks are optional: the feature
// reports itself unavailable, naming the function and the driver version.
//
// Nothing here includes cuda.h: the few types and constants used are the driver ABI's, which
// NVIDIA keeps stable. Device pointers are CUdeviceptr values; CUDA's unified addressing
// keeps them apart from host addresses, so a Region of CUDA memory can carry one as its
// address (for registration and copies, never for the CPU to read).
//
// Contexts: every device is used through its primary context (the one the runtime API and
// FFmpeg's CUDA hwaccel share). Each call that needs it makes it current on the calling
// thread for its duration (ContextScope), so threads need no set-up.
//
// Thread safety: Driver and Device are immutable after load/open and safe to share; a
// Stream is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/format.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::cuda {

using DevicePtr = uint64_t;

/// The device address a CUDA region's byte span starts at (rdmavideo/memory.hpp).
inline DevicePtr address(const std::byte* at) { return reinterpret_cast<uintptr_t>(at); }

namespace detail {
struct Api;
}

/// What a device says about itself that matters for moving frames.
struct DeviceFacts {
  int ordinal = 0;
  std::string name;
  std::string pci_bus_id;  ///< "0000:41:00.0", for matching a GPU with a NIC
  int compute_major = 0;
  int compute_minor = 0;
  uint64_t total_memory = 0;
  bool dmabuf_supported = false;          ///< CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  bool gpudirect_rdma_supported = false;  ///< CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
  /// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: 0 none (remote writes must be
  /// flushed before a kernel reads them), 100 owner, 200 all devices.
  int rdma_writes_ordering = 0;
  /// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: bit 0 (host) says
  /// cuFlushGPUDirectRDMAWrites works on this device, bit 1 the stream memory operations.
  int rdma_flush_options = 0;
};

class Driver;

/// Whether RDMA writes into this device's memory must be flushed
/// (cuFlushGPUDirectRDMAWrites) before its own kernels read them: GPUs before Hopper.
bool needs_rdma_flush(const DeviceFacts& facts);
/// Whether cuFlushGPUDirectRDMAWrites can be made for the device: the host bit of its flush
/// options, and the entry point in the driver.
bool can_flush_rdma_writes(const DeviceFacts& facts, const Driver& driver);
/// Why RDMA writes straight into this device's memory cannot be made visible to its own
/// reads (a flush is needed and the device or driver cannot do it); empty where they can.
std::string why_rdma_writes_not_visible(const DeviceFacts& facts, const Driver& driver);

class Device;

class Driver : public std::enable_shared_from_this<Driver> {
 public:
  /// Loads `library` (a path, or a name the dynamic linker searches for) and initialises it.
  /// Errors name what is missing: "no CUDA driver (libcuda.so.1: cannot open ...)",
  /// "CUDA driver 12.2: cuInit failed: CUDA_ERROR_NO_DEVICE (100)", "... too old".
  static Result<std::shared_ptr<Driver>> load(const std::string& library = "libcuda.so.1");
  /// The process's driver, loaded once on first use (the error is kept and returned again).
  static Result<std::shared_ptr<Driver>> shared();
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  /// 13000 for CUDA 13.0, as cuDriverGetVersion gives it.
  int version() const { return version_; }
  std::string version_text() const;
  int device_count() const { return devices_; }
  /// The library as loaded (its path where dladdr tells it).
  const std::string& library() const { return library_; }

  Result<DeviceFacts> facts(int ordinal) const;
  /// The device's primary context, retained while the Device lives. An ordinal beyond the
  /// devices present is an error naming how many there are.
  Result<std::shared_ptr<Device>> open(int ordinal);
  /// Whether the driver has the entry point (optional ones may be missing on old drivers).
  bool has(std::string_view function) const;
  /// "CUDA_ERROR_OUT_OF_MEMORY (2)".
  std::string error_text(int result) const;

  const detail::Api& api() const { return *api_; }

 private:
  Driver() = default;
  void* library_handle_ = nullptr;
  std::unique_ptr<detail::Api> api_;
  std::string library_;
  int version_ = 0;
  int devices_ = 0;
};

class Stream;
class Module;

/// One side of a pitched copy (rows of `pitch` bytes): device or host memory.
struct Pitched {
  bool on_device = false;
  uint64_t at = 0;  ///< a DevicePtr, or a host address
  size_t pitch = 0;
  static Pitched device(DevicePtr at, size_t pitch) { return {true, at, pitch}; }
  static Pitched host(const std::byte* at, size_t pitch) {
    return {false, reinterpret_cast<uintptr_t>(at), pitch};
  }
};

/// One GPU, used through its primary context.
class Device : public std::enable_shared_from_this<Device> {
 public:
  /// The process's Device for `ordinal` on the shared driver (Driver::shared()), opened on
  /// first use and kept: its primary context stays retained for the process's life.
  static Result<std::shared_ptr<Device>> shared(int ordinal);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceFacts& facts() const { return facts_; }
  const Driver& driver() const { return *driver_; }
  /// "cuda:0 (NVIDIA H100 80GB HBM3)".
  std::string describe() const;

  /// Device memory, freed when the returned owner is let go. The address is 64 KiB aligned
  /// (kAlignment) and `bytes` rounded up to 64 KiB from it are allocated, so any page-aligned
  /// range of them can be exported as a dma-buf (cuMemAlloc itself promises only alignment
  /// for any variable: where it gives less, more is allocated and the address aligned).
  /// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS is set on it, so synchronous copies and RDMA into it are
  /// ordered as the NIC needs.
  Result<std::shared_ptr<DevicePtr>> allocate(size_t bytes);
  static constexpr size_t kAlignment = 64 * 1024;
  /// Page-locked host memory the GPU copies to and from at full rate (cuMemHostAlloc).
  Result<std::shared_ptr<std::byte>> allocate_pinned(size_t bytes);

  /// Page-locks host memory the caller owns for fast copies (cuMemHostRegister) until the
  /// returned owner is let go, which must happen before the memory is freed.
  Result<std::shared_ptr<const void>> pin(std::span<std::byte> host);

  /// Synchronous copies (on the null stream).
  Result<void> upload(DevicePtr to, std::span<const std::byte> from) const;
  Result<void> download(std::span<std::byte> to, DevicePtr from) const;
  Result<void> fill(DevicePtr at, std::byte value, size_t bytes) const;

  /// A dma-buf file descriptor for [at, at+bytes) (cuMemGetHandleForAddressRange), owned
  /// by the caller; `unsupported` naming why where the driver or device cannot export one.
  /// `at` and `bytes` must be aligned to the host's page size, as the driver requires:
  /// `invalid_argument` naming the value where they are not.
  Result<int> export_dmabuf(DevicePtr at, size_t bytes) const;
  /// Makes RDMA writes already completed visible to this device's kernels
  /// (cuFlushGPUDirectRDMAWrites, to the owner); a no-op where needs_rdma_flush() is false,
  /// `unsupported` where a flush is needed and cannot be made.
  Result<void> flush_rdma_writes() const;

  /// A stream of our own. It does not synchronise with the legacy NULL stream: a library
  /// that queues work for us to read (FFmpeg's NVDEC) must be given this stream (native()).
  Result<std::unique_ptr<Stream>> create_stream();
  /// The primary context (a CUcontext) and device (a CUdevice), for libraries that take
  /// them, such as GStreamer's CUDA context, so they work in the same context as ours.
  void* native_context() const { return context_; }
  int native_device() const { return handle_; }

 private:
  friend class Driver;
  friend class Stream;
  friend class Module;
  Device(std::shared_ptr<Driver> driver, DeviceFacts facts, int handle, void* context)
      : driver_(std::move(driver)), facts_(std::move(facts)), handle_(handle), context_(context) {}
  Result<void> check(int result, std::string_view what) const;
  std::shared_ptr<Driver> driver_;
  DeviceFacts facts_;
  int handle_ = 0;           // CUdevice
  void* context_ = nullptr;  // CUcontext (primary)
};

/// An ordered queue of copies with events to tell when each finished, for the staging
/// engine's double buffering.
class Stream {
 public:
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Queues a copy; `host` must be pinned memory for the copy to be asynchronous.
  Result<void> upload_async(DevicePtr to, std::span<const std::byte> host);
  Result<void> download_async(std::span<std::byte> host, DevicePtr from);
  /// Queues a copy of `rows` rows of `width_bytes` between any two of device and host
  /// memory, each side with its own pitch (cuMemcpy2DAsync): planes of a decoder's surface
  /// into a frame laid out with the stream's strides, and back.
  Result<void> copy_2d_async(Pitched to, Pitched from, size_t width_bytes, size_t rows);
  /// The GPU's copy_planes() (rdmavideo/format.hpp): each plane of a frame between its wire
  /// `layout` at `wire` (plane p at wire.at + its offset, rows its stride apart) and
  /// `foreign`'s planes, one Pitched each, rows up to the lesser of the two pitches; queued,
  /// then waited for.
  Result<void> copy_planes(const FrameLayout& layout, Pitched wire,
                           std::span<const Pitched> foreign, CopyDirection direction);
  /// Queues a copy of `bytes` from device memory to device memory (cuMemcpyDtoDAsync).
  Result<void> copy_async(DevicePtr to, DevicePtr from, size_t bytes);
  /// Marks the point reached so far; returns a ticket for done()/wait().
  Result<uint64_t> mark();
  /// Whether everything queued before the ticket has finished (cuEventQuery).
  Result<bool> done(uint64_t ticket);
  /// Waits until everything queued before the ticket has finished.
  Result<void> wait(uint64_t ticket);
  /// Makes work queued on this stream from now on wait, on the GPU, until `other` has
  /// passed its `ticket` (the host does not wait).
  Result<void> after(const Stream& other, uint64_t ticket);
  /// Waits for everything queued.
  Result<void> synchronize();
  /// The CUstream, for libraries that take one (FFmpeg's AVCUDADeviceContext.stream), so
  /// that their work and ours are queued in one order.
  void* native() const { return stream_; }
  const Device& device() const { return *device_; }

 private:
  friend class Device;
  friend class Module;
  Stream(std::shared_ptr<const Device> device, void* stream)
      : device_(std::move(device)), stream_(stream) {}
  struct Mark {
    uint64_t ticket;
    void* event;
  };
  Result<void> retire(uint64_t ticket);
  std::shared_ptr<const Device> device_;
  void* stream_ = nullptr;
  std::vector<Mark> marks_;   // events recorded, oldest first
  std::vector<void*> spare_;  // events to reuse
  uint64_t next_ticket_ = 1;
};

/// A fat binary of kernels as nvcc built it, embedded in the library of the room that owns
/// them (cmake/CudaKernels.cmake writes one for each .cu), with what built it. Empty in a
/// build configured without the CUDA toolkit.
struct EmbeddedImage {
  const unsigned char* bytes = nullptr;
  size_t size = 0;
  const char* toolkit = "";  ///< the nvcc that built it: "13.0"
  const char* sass = "";     ///< the architectures it has SASS for: "75,80,86,..."
  const char* ptx = "";      ///< and PTX for: "75,120"
  bool built() const { return size > 0; }
};

/// A room's kernels: its embedded image, the functions it launches from it (by index into
/// `functions`) and what they are, for messages.
struct KernelImage {
  const EmbeddedImage& image;
  std::span<const char* const> functions;
  std::string_view what;
};

/// For a result of loading an image that says it holds no code the GPU runs
/// (CUDA_ERROR_NO_BINARY_FOR_GPU, ..._UNSUPPORTED_PTX_VERSION, ..._INVALID_PTX): " (...)"
/// naming the nvcc that built it, what it has code for, the GPU's compute capability and the
/// driver, and the driver as what to update where it is older than that nvcc. Empty for any
/// other result.
std::string why_no_code(int result, const EmbeddedImage& image, const DeviceFacts& gpu,
                        const Driver& driver);

/// The extent of a launch's grid or of its blocks.
struct Extent {
  unsigned x = 1, y = 1;
};
/// How many blocks of `per_block` threads cover `threads` along an axis.
inline unsigned blocks(unsigned threads, unsigned per_block) {
  return (threads + per_block - 1) / per_block;
}

/// A kernel image loaded into a device's primary context (cuModuleLoadData) with its
/// functions looked up, and launched there: the one way the rooms above run their kernels.
class Module {
 public:
  /// Loaded once per device and image, and kept. `unsupported`, naming why, where it cannot
  /// be: this build has no kernels, or they hold no code this GPU runs.
  static Result<std::shared_ptr<const Module>> shared(const Device& device,
                                                      const KernelImage& kernels);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Queues functions[function] on `stream` over `grid` blocks of `block` threads, with the
  /// kernel's parameters as cuLaunchKernel takes them; the caller waits.
  Result<void> launch(Stream& stream, size_t function, Extent grid, Extent block,
                      void** params) const;
  const Device& device() const { return *device_; }

 private:
  Module(std::shared_ptr<const Device> device, const KernelImage& kernels, void* module)
      : device_(std::move(device)), kernels_(kernels), module_(module) {}
  std::shared_ptr<const Device> device_;
  KernelImage kernels_;
  void* module_ = nullptr;        // CUmodule
  std::vector<void*> functions_;  // CUfunction, as kernels_.functions
};

}  // namespace rdmavideo::cuda
