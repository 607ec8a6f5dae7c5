// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <map>
#include <mutex>

#include "cuda/api.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/library.hpp"
#include "rdmavideo/platform/pages.hpp"

namespace rdmavideo::cuda {

using namespace detail;

namespace {

// cuGetProcAddress as CUDA 12 and later export it (cuGetProcAddress_v2), and as 11.3 to
// 11.8 did (no status argument).
using GetProcAddress12 = CUresult (*)(const char*, void**, int, uint64_t, int*);
using GetProcAddress11 = CUresult (*)(const char*, void**, int, uint64_t);
constexpr uint64_t kLegacyStream = 1;  // CU_GET_PROC_ADDRESS_LEGACY_STREAM
constexpr int kOldestDriver = 11030;   // the first with cuGetProcAddress

struct Entry {
  const char* name;
  int version;  // the ABI version asked for: the one the signature in api.hpp is from
  bool required;
  void** slot;
};

template <typename Fn>
void** slot(Fn*& fn) {
  return reinterpret_cast<void**>(&fn);
}

std::vector<Entry> entries(Api& a) {
  return {
      {"cuInit", 2000, true, slot(a.cuInit)},
      {"cuDriverGetVersion", 2020, true, slot(a.cuDriverGetVersion)},
      {"cuDeviceGetCount", 2000, true, slot(a.cuDeviceGetCount)},
      {"cuDeviceGet", 2000, true, slot(a.cuDeviceGet)},
      {"cuDeviceGetName", 2000, true, slot(a.cuDeviceGetName)},
      {"cuDeviceGetAttribute", 2000, true, slot(a.cuDeviceGetAttribute)},
      {"cuDeviceGetPCIBusId", 4010, true, slot(a.cuDeviceGetPCIBusId)},
      {"cuDeviceTotalMem", 3020, true, slot(a.cuDeviceTotalMem)},
      {"cuGetErrorName", 6000, true, slot(a.cuGetErrorName)},
      {"cuDevicePrimaryCtxRetain", 7000, true, slot(a.cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", 11000, true, slot(a.cuDevicePrimaryCtxRelease)},
      {"cuCtxPushCurrent", 4000, true, slot(a.cuCtxPushCurrent)},
      {"cuCtxPopCurrent", 4000, true, slot(a.cuCtxPopCurrent)},
      {"cuMemAlloc", 3020, true, slot(a.cuMemAlloc)},
      {"cuMemFree", 3020, true, slot(a.cuMemFree)},
      {"cuMemHostAlloc", 2020, true, slot(a.cuMemHostAlloc)},
      {"cuMemFreeHost", 2000, true, slot(a.cuMemFreeHost)},
      {"cuMemHostRegister", 6050, true, slot(a.cuMemHostRegister)},
      {"cuMemHostUnregister", 4000, true, slot(a.cuMemHostUnregister)},
      {"cuMemcpyHtoD", 3020, true, slot(a.cuMemcpyHtoD)},
      {"cuMemcpyDtoH", 3020, true, slot(a.cuMemcpyDtoH)},
      {"cuMemcpyHtoDAsync", 3020, true, slot(a.cuMemcpyHtoDAsync)},
      {"cuMemcpyDtoHAsync", 3020, true, slot(a.cuMemcpyDtoHAsync)},
      {"cuMemcpyDtoDAsync", 3020, true, slot(a.cuMemcpyDtoDAsync)},
      {"cuMemsetD8", 3020, true, slot(a.cuMemsetD8)},
      {"cuStreamCreate", 2000, true, slot(a.cuStreamCreate)},
      {"cuStreamDestroy", 4000, true, slot(a.cuStreamDestroy)},
      {"cuStreamSynchronize", 2000, true, slot(a.cuStreamSynchronize)},
      {"cuStreamWaitEvent", 3020, true, slot(a.cuStreamWaitEvent)},
      {"cuEventCreate", 2000, true, slot(a.cuEventCreate)},
      {"cuEventRecord", 2000, true, slot(a.cuEventRecord)},
      {"cuEventQuery", 2000, true, slot(a.cuEventQuery)},
      {"cuEventSynchronize", 2000, true, slot(a.cuEventSynchronize)},
      {"cuEventDestroy", 4000, true, slot(a.cuEventDestroy)},
      {"cuPointerSetAttribute", 6000, true, slot(a.cuPointerSetAttribute)},
      {"cuMemcpy2DAsync", 3020, true, slot(a.cuMemcpy2DAsync)},
      {"cuModuleLoadData", 2000, true, slot(a.cuModuleLoadData)},
      {"cuModuleUnload", 2000, true, slot(a.cuModuleUnload)},
      {"cuModuleGetFunction", 2000, true, slot(a.cuModuleGetFunction)},
      {"cuLaunchKernel", 4000, true, slot(a.cuLaunchKernel)},
      {"cuMemGetHandleForAddressRange", 11070, false, slot(a.cuMemGetHandleForAddressRange)},
      {"cuFlushGPUDirectRDMAWrites", 11030, false, slot(a.cuFlushGPUDirectRDMAWrites)},
  };
}

std::string version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

}  // namespace

bool needs_rdma_flush(const DeviceFacts& facts) { return facts.rdma_writes_ordering < 100; }

bool can_flush_rdma_writes(const DeviceFacts& facts, const Driver& driver) {
  return (facts.rdma_flush_options & kFlushOptionHost) != 0 &&
         driver.api().cuFlushGPUDirectRDMAWrites != nullptr;
}

std::string why_rdma_writes_not_visible(const DeviceFacts& facts, const Driver& driver) {
  if (!needs_rdma_flush(facts)) return {};
  const std::string needs = fmt::format(
      "cuda:{} needs RDMA writes flushed before it reads them (GPUDirect RDMA writes ordering {})",
      facts.ordinal, facts.rdma_writes_ordering);
  if (!(facts.rdma_flush_options & kFlushOptionHost)) {
    return needs +
           fmt::format(
               " and cannot flush them (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS "
               "is {}: no host flush)",
               facts.rdma_flush_options);
  }
  if (!driver.api().cuFlushGPUDirectRDMAWrites) {
    return needs + fmt::format(", and CUDA driver {} has no cuFlushGPUDirectRDMAWrites",
                               driver.version_text());
  }
  return {};
}

Driver::~Driver() {
  // The library stays loaded (platform::Library): the driver keeps threads and exit handlers.
  delete static_cast<platform::Library*>(library_handle_);
}

std::string Driver::version_text() const { return version_string(version_); }

std::string Driver::error_text(int result) const {
  const char* name = nullptr;
  if (api_ && api_->cuGetErrorName && api_->cuGetErrorName(result, &name) == kSuccess && name) {
    return fmt::format("{} ({})", name, result);
  }
  return fmt::format("CUresult {}", result);
}

Result<std::shared_ptr<Driver>> Driver::load(const std::string& library) {
  std::shared_ptr<Driver> driver(new Driver());
  auto opened = platform::Library::open(library);
  if (!opened) {
    return make_error(ErrorCode::unsupported, "no CUDA driver ({})", opened.error().message());
  }
  const auto* lib = new platform::Library(std::move(*opened));
  driver->library_handle_ = const_cast<platform::Library*>(lib);
  driver->library_ = lib->path_of("cuInit");
  auto get12 = reinterpret_cast<GetProcAddress12>(lib->symbol("cuGetProcAddress_v2"));
  auto get11 = reinterpret_cast<GetProcAddress11>(lib->symbol("cuGetProcAddress"));
  using VersionFn = CUresult (*)(int*);
  auto get_version = reinterpret_cast<VersionFn>(lib->symbol("cuDriverGetVersion"));
  if (!get_version) {
    return make_error(ErrorCode::unsupported,
                      "{} is not an NVIDIA CUDA driver (no cuDriverGetVersion)", driver->library_);
  }
  if (CUresult rc = get_version(&driver->version_); rc != kSuccess) {
    return make_error(ErrorCode::unsupported,
                      "CUDA driver: cuDriverGetVersion failed (CUresult {})", rc);
  }
  const std::string version = version_string(driver->version_);
  if (!get12 && !get11) {
    return make_error(
        ErrorCode::unsupported,
        "CUDA driver {} is too old: it has no cuGetProcAddress (CUDA {} or newer is needed)",
        version, version_string(kOldestDriver));
  }
  driver->api_ = std::make_unique<Api>();
  for (const Entry& e : entries(*driver->api_)) {
    CUresult rc = 0;
    int status = 0;
    if (get12) {
      rc = get12(e.name, e.slot, e.version, kLegacyStream, &status);
    } else {
      rc = get11(e.name, e.slot, e.version, kLegacyStream);
    }
    if (rc != kSuccess || status != 0) *e.slot = nullptr;
    if (!*e.slot && e.required) {
      return make_error(ErrorCode::unsupported,
                        "CUDA driver {} lacks {} (ABI {}): update the NVIDIA driver", version,
                        e.name, version_string(e.version));
    }
  }
  if (CUresult rc = driver->api_->cuInit(0); rc != kSuccess) {
    return make_error(ErrorCode::unsupported, "CUDA driver {}: cuInit failed: {}{}", version,
                      driver->error_text(rc),
                      rc == kErrorNoDevice ? "; no CUDA device is visible" : "");
  }
  if (CUresult rc = driver->api_->cuDeviceGetCount(&driver->devices_); rc != kSuccess) {
    return make_error(ErrorCode::unsupported, "CUDA driver {}: cuDeviceGetCount failed: {}",
                      version, driver->error_text(rc));
  }
  return driver;
}

Result<std::shared_ptr<Driver>> Driver::shared() {
  static std::once_flag once;
  static Result<std::shared_ptr<Driver>> loaded = Unexpected(Error(ErrorCode::unsupported, ""));
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

bool Driver::has(std::string_view function) const {
  Api copy = *api_;
  for (const Entry& e : entries(copy)) {
    if (function == e.name) return *e.slot != nullptr;
  }
  return false;
}

Result<DeviceFacts> Driver::facts(int ordinal) const {
  if (ordinal < 0 || ordinal >= devices_) {
    return make_error(ErrorCode::invalid_argument,
                      "no CUDA device {}: the driver sees {} (cuda:0{})", ordinal, devices_,
                      devices_ > 1 ? fmt::format("..cuda:{}", devices_ - 1) : "");
  }
  const Api& a = *api_;
  CUdevice device = 0;
  if (CUresult rc = a.cuDeviceGet(&device, ordinal); rc != kSuccess) {
    return make_error(ErrorCode::system, "cuDeviceGet({}) failed: {}", ordinal, error_text(rc));
  }
  DeviceFacts f;
  f.ordinal = ordinal;
  char text[256] = {};
  if (a.cuDeviceGetName(text, sizeof text, device) == kSuccess) f.name = text;
  char bus[32] = {};
  if (a.cuDeviceGetPCIBusId(bus, sizeof bus, device) == kSuccess) f.pci_bus_id = bus;
  std::transform(f.pci_bus_id.begin(), f.pci_bus_id.end(), f.pci_bus_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t total = 0;
  if (a.cuDeviceTotalMem(&total, device) == kSuccess) f.total_memory = total;
  auto attribute = [&](int which) {
    int value = 0;
    return a.cuDeviceGetAttribute(&value, which, device) == kSuccess ? value : 0;
  };
  f.compute_major = attribute(kAttrComputeMajor);
  f.compute_minor = attribute(kAttrComputeMinor);
  f.dmabuf_supported = attribute(kAttrDmaBufSupported) != 0;
  f.gpudirect_rdma_supported = attribute(kAttrGpuDirectRdmaSupported) != 0;
  f.rdma_writes_ordering = attribute(kAttrGpuDirectRdmaWritesOrdering);
  f.rdma_flush_options = attribute(kAttrGpuDirectRdmaFlushWritesOptions);
  return f;
}

Result<std::shared_ptr<Device>> Driver::open(int ordinal) {
  auto f = facts(ordinal);
  if (!f) return Unexpected(f.error());
  CUdevice device = 0;
  api_->cuDeviceGet(&device, ordinal);
  CUcontext context = nullptr;
  if (CUresult rc = api_->cuDevicePrimaryCtxRetain(&context, device); rc != kSuccess) {
    return make_error(ErrorCode::system, "cuda:{}: cuDevicePrimaryCtxRetain failed: {}", ordinal,
                      error_text(rc));
  }
  return std::shared_ptr<Device>(new Device(shared_from_this(), std::move(*f), device, context));
}

// Device

Result<std::shared_ptr<Device>> Device::shared(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<Device>> opened;
  auto driver = Driver::shared();
  if (!driver) return Unexpected(driver.error());
  std::lock_guard lock(mu);
  if (auto it = opened.find(ordinal); it != opened.end()) return it->second;
  auto device = (*driver)->open(ordinal);
  if (!device) return Unexpected(device.error());
  opened[ordinal] = *device;
  return *device;
}

Device::~Device() { driver_->api().cuDevicePrimaryCtxRelease(handle_); }

std::string Device::describe() const {
  return fmt::format("cuda:{} ({})", facts_.ordinal, facts_.name);
}

Result<void> Device::check(int result, std::string_view what) const {
  if (result == kSuccess) return {};
  return make_error(result == 2 ? ErrorCode::resource : ErrorCode::system, "cuda:{}: {} failed: {}",
                    facts_.ordinal, what, driver_->error_text(result));
}

Result<std::shared_ptr<DevicePtr>> Device::allocate(size_t bytes) {
  const Api& a = driver_->api();
  ContextScope scope(a, context_);
  if (!scope.ok())
    return make_error(ErrorCode::system, "cuda:{}: cannot make its context current",
                      facts_.ordinal);
  const size_t wanted = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  auto alloc = [&](size_t size) -> Result<CUdeviceptr> {
    CUdeviceptr at = 0;
    if (auto ok = check(a.cuMemAlloc(&at, size),
                        fmt::format("cuMemAlloc of {} MiB", (size + (1 << 20) - 1) >> 20));
        !ok) {
      return Unexpected(ok.error());
    }
    return at;
  };
  // cuMemAlloc promises alignment for any variable (256 bytes), not the 64 KiB a dma-buf
  // export and GPUDirect need. Large allocations come aligned in practice; where one does
  // not, it is made again one unit larger and the address rounded up inside it.
  auto base = alloc(wanted);
  if (!base) return Unexpected(base.error());
  if (*base % kAlignment != 0) {
    a.cuMemFree(*base);
    base = alloc(wanted + kAlignment);
    if (!base) return Unexpected(base.error());
  }
  const CUdeviceptr at = (*base + kAlignment - 1) / kAlignment * kAlignment;
  const unsigned one = 1;
  if (auto ok = check(a.cuPointerSetAttribute(&one, kPointerSyncMemops, at), "setting SYNC_MEMOPS");
      !ok) {
    a.cuMemFree(*base);
    return Unexpected(ok.error());
  }
  auto self = shared_from_this();
  const CUdeviceptr allocated = *base;
  return std::shared_ptr<DevicePtr>(new DevicePtr(at), [self, allocated](DevicePtr* p) {
    ContextScope current(self->driver().api(), self->context_);
    if (CUresult rc = self->driver().api().cuMemFree(allocated); rc != kSuccess) {
      log().warn("cuda:{}: cuMemFree failed: {}", self->facts_.ordinal,
                 self->driver().error_text(rc));
    }
    delete p;
  });
}

Result<std::shared_ptr<std::byte>> Device::allocate_pinned(size_t bytes) {
  const Api& a = driver_->api();
  ContextScope scope(a, context_);
  void* at = nullptr;
  // CU_MEMHOSTALLOC_PORTABLE: usable from every context.
  if (auto ok = check(a.cuMemHostAlloc(&at, std::max<size_t>(bytes, 1), 1),
                      fmt::format("cuMemHostAlloc of {} MiB", (bytes + (1 << 20) - 1) >> 20));
      !ok) {
    return Unexpected(ok.error());
  }
  auto self = shared_from_this();
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(at), [self](std::byte* p) {
    ContextScope current(self->driver().api(), self->context_);
    self->driver().api().cuMemFreeHost(p);
  });
}

Result<std::shared_ptr<const void>> Device::pin(std::span<std::byte> host) {
  const Api& a = driver_->api();
  ContextScope scope(a, context_);
  // CU_MEMHOSTREGISTER_PORTABLE: pinned for every context.
  if (auto ok = check(a.cuMemHostRegister(host.data(), host.size(), 1),
                      fmt::format("cuMemHostRegister of {} MiB", host.size() >> 20));
      !ok) {
    return Unexpected(ok.error());
  }
  auto self = shared_from_this();
  return std::shared_ptr<const void>(host.data(), [self](const void* p) {
    ContextScope current(self->driver().api(), self->context_);
    self->driver().api().cuMemHostUnregister(const_cast<void*>(p));
  });
}

Result<void> Device::upload(DevicePtr to, std::span<const std::byte> from) const {
  ContextScope scope(driver_->api(), context_);
  return check(driver_->api().cuMemcpyHtoD(to, from.data(), from.size()), "cuMemcpyHtoD");
}

Result<void> Device::download(std::span<std::byte> to, DevicePtr from) const {
  ContextScope scope(driver_->api(), context_);
  return check(driver_->api().cuMemcpyDtoH(to.data(), from, to.size()), "cuMemcpyDtoH");
}

Result<void> Device::fill(DevicePtr at, std::byte value, size_t bytes) const {
  ContextScope scope(driver_->api(), context_);
  return check(driver_->api().cuMemsetD8(at, static_cast<unsigned char>(value), bytes),
               "cuMemsetD8");
}

Result<int> Device::export_dmabuf(DevicePtr at, size_t bytes) const {
  const Api& a = driver_->api();
  if (!a.cuMemGetHandleForAddressRange) {
    return make_error(
        ErrorCode::unsupported,
        "CUDA driver {} has no cuMemGetHandleForAddressRange (11.7 or newer exports dma-bufs)",
        driver_->version_text());
  }
  if (!facts_.dmabuf_supported) {
    return make_error(
        ErrorCode::unsupported,
        "{} does not export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: the "
        "open kernel module and Linux 5.12 or newer are needed)",
        describe());
  }
  // The driver takes only ranges aligned to the host's page size, start and length.
  const auto page = static_cast<uint64_t>(platform::page_bytes());
  if (at % page != 0 || bytes % page != 0 || bytes == 0) {
    return make_error(
        ErrorCode::invalid_argument,
        "{}: cannot export 0x{:x} + {} bytes as a dma-buf: start and length must be multiples "
        "of the page size ({} bytes)",
        describe(), at, bytes, page);
  }
  ContextScope scope(a, context_);
  int fd = -1;
  if (CUresult rc = a.cuMemGetHandleForAddressRange(&fd, at, bytes, kHandleDmaBufFd, 0);
      rc != kSuccess) {
    return make_error(ErrorCode::unsupported,
                      "{}: cuMemGetHandleForAddressRange (dma-buf) failed: {}", describe(),
                      driver_->error_text(rc));
  }
  return fd;
}

Result<void> Device::flush_rdma_writes() const {
  if (!needs_rdma_flush(facts_)) return {};
  const Api& a = driver_->api();
  // Called for every frame written straight into GPU memory: the reason is worded only when
  // the flush cannot be made.
  if (!can_flush_rdma_writes(facts_, *driver_)) {
    return make_error(ErrorCode::unsupported, "{}", why_rdma_writes_not_visible(facts_, *driver_));
  }
  ContextScope scope(a, context_);
  return check(a.cuFlushGPUDirectRDMAWrites(kFlushTargetCurrentCtx, kFlushToOwner),
               "cuFlushGPUDirectRDMAWrites");
}

Result<std::unique_ptr<Stream>> Device::create_stream() {
  const Api& a = driver_->api();
  ContextScope scope(a, context_);
  CUstream stream = nullptr;
  if (auto ok = check(a.cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate"); !ok) {
    return Unexpected(ok.error());
  }
  return std::unique_ptr<Stream>(new Stream(shared_from_this(), stream));
}

// Stream

Stream::~Stream() {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  a.cuStreamSynchronize(stream_);
  for (const Mark& m : marks_) a.cuEventDestroy(m.event);
  for (void* e : spare_) a.cuEventDestroy(e);
  a.cuStreamDestroy(stream_);
}

Result<void> Stream::upload_async(DevicePtr to, std::span<const std::byte> host) {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuMemcpyHtoDAsync(to, host.data(), host.size(), stream_),
                        "cuMemcpyHtoDAsync");
}

Result<void> Stream::download_async(std::span<std::byte> host, DevicePtr from) {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuMemcpyDtoHAsync(host.data(), from, host.size(), stream_),
                        "cuMemcpyDtoHAsync");
}

Result<void> Stream::copy_planes(const FrameLayout& layout, Pitched wire,
                                 std::span<const Pitched> foreign, CopyDirection direction) {
  const int planes = std::min<int>(layout.plane_count, static_cast<int>(foreign.size()));
  for (int p = 0; p < planes; ++p) {
    const auto& plane = layout.planes[p];
    const Pitched ours{wire.on_device, wire.at + plane.offset, plane.stride};
    const size_t row_bytes = std::min<size_t>(plane.stride, foreign[p].pitch);
    auto ok = direction == CopyDirection::to_wire
                  ? copy_2d_async(ours, foreign[p], row_bytes, plane.rows)
                  : copy_2d_async(foreign[p], ours, row_bytes, plane.rows);
    if (!ok) return ok;
  }
  return synchronize();
}

Result<void> Stream::copy_async(DevicePtr to, DevicePtr from, size_t bytes) {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuMemcpyDtoDAsync(to, from, bytes, stream_), "cuMemcpyDtoDAsync");
}

Result<void> Stream::copy_2d_async(Pitched to, Pitched from, size_t width_bytes, size_t rows) {
  Memcpy2D copy;
  copy.srcMemoryType = from.on_device ? kMemoryDevice : kMemoryHost;
  if (from.on_device) {
    copy.srcDevice = from.at;
  } else {
    copy.srcHost = reinterpret_cast<const void*>(from.at);
  }
  copy.srcPitch = from.pitch;
  copy.dstMemoryType = to.on_device ? kMemoryDevice : kMemoryHost;
  if (to.on_device) {
    copy.dstDevice = to.at;
  } else {
    copy.dstHost = reinterpret_cast<void*>(to.at);
  }
  copy.dstPitch = to.pitch;
  copy.WidthInBytes = width_bytes;
  copy.Height = rows;
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuMemcpy2DAsync(&copy, stream_), "cuMemcpy2DAsync");
}

Result<uint64_t> Stream::mark() {
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  void* event = nullptr;
  if (!spare_.empty()) {
    event = spare_.back();
    spare_.pop_back();
  } else if (auto ok =
                 // A wait sleeps rather than spins (the primary context spins by default
                 // where it has cores to spare: a whole core for each waiting encoder).
             device_->check(a.cuEventCreate(&event, kEventDisableTiming | kEventBlockingSync),
                            "cuEventCreate");
             !ok) {
    return Unexpected(ok.error());
  }
  if (auto ok = device_->check(a.cuEventRecord(event, stream_), "cuEventRecord"); !ok) {
    spare_.push_back(event);
    return Unexpected(ok.error());
  }
  marks_.push_back({next_ticket_, event});
  return next_ticket_++;
}

// Events before and at `ticket` have passed: they go back to the spares.
Result<void> Stream::retire(uint64_t ticket) {
  auto end =
      std::find_if(marks_.begin(), marks_.end(), [&](const Mark& m) { return m.ticket > ticket; });
  for (auto it = marks_.begin(); it != end; ++it) spare_.push_back(it->event);
  marks_.erase(marks_.begin(), end);
  return {};
}

Result<bool> Stream::done(uint64_t ticket) {
  auto it =
      std::find_if(marks_.begin(), marks_.end(), [&](const Mark& m) { return m.ticket == ticket; });
  if (it == marks_.end()) return ticket < next_ticket_;  // retired earlier
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  CUresult rc = a.cuEventQuery(it->event);
  if (rc == kNotReady) return false;
  if (auto ok = device_->check(rc, "cuEventQuery"); !ok) return Unexpected(ok.error());
  retire(ticket);
  return true;
}

Result<void> Stream::wait(uint64_t ticket) {
  auto it =
      std::find_if(marks_.begin(), marks_.end(), [&](const Mark& m) { return m.ticket == ticket; });
  if (it == marks_.end()) return {};
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  if (auto ok = device_->check(a.cuEventSynchronize(it->event), "cuEventSynchronize"); !ok)
    return ok;
  return retire(ticket);
}

Result<void> Stream::after(const Stream& other, uint64_t ticket) {
  auto it = std::find_if(other.marks_.begin(), other.marks_.end(),
                         [&](const Mark& m) { return m.ticket == ticket; });
  if (it == other.marks_.end()) return {};  // already passed
  const Api& a = device_->driver().api();
  ContextScope scope(a, device_->context_);
  return device_->check(a.cuStreamWaitEvent(stream_, it->event, 0), "cuStreamWaitEvent");
}

Result<void> Stream::synchronize() {
  // Through a blocking event, not cuStreamSynchronize, which spins.
  auto ticket = mark();
  if (!ticket) return Unexpected(ticket.error());
  return wait(*ticket);
}

}  // namespace rdmavideo::cuda
