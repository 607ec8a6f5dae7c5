// SPDX-License-Identifier: Apache-2.0
// A stand-in for NVIDIA's libcuda.so.1, for testing the GPU paths' logic where there is no
// GPU (as Soft-RoCE stands in for an RDMA NIC). It exports cuDriverGetVersion and
// cuGetProcAddress(_v2) and hands out the entry points the library loads.
//
// "Device memory" is a memfd mapped twice: the address handed out is mapped PROT_NONE, so
// code that touches a device pointer from the CPU crashes here as it would on a GPU, and
// the copies go through a second, writable mapping. A dma-buf export returns a descriptor
// of the memfd, and only for page-aligned ranges, as the driver requires.
//
// Streams are ordered as CUDA orders them, as far as a reader can tell: work queued on the
// legacy NULL stream waits (it runs only when something synchronises with that stream: a
// synchronous copy, cuStreamSynchronize of it, an event recorded on it being waited for,
// work on a blocking stream, cuMemFree), while work on a non-blocking stream runs at once,
// so it does not wait for the NULL stream's, as on a GPU it need not. Events are otherwise
// complete when recorded.
//
// FFmpeg and GStreamer load the driver themselves by plain symbol names (cuMemAlloc_v2,
// ...): the names FFmpeg's CUDA loader asks for are exported too, those its hwcontext and
// our copies use working, the rest answering CUDA_ERROR_NOT_SUPPORTED. There is no NVDEC or
// NVENC library beside it, so FFmpeg's decoders and encoders fail there as on a machine
// with the driver but without libnvcuvid or libnvidia-encode.
//
// Set by environment: FAKE_CUDA_DEVICES (1), FAKE_CUDA_VERSION (13000), FAKE_CUDA_INIT (the
// CUresult cuInit returns, 0), FAKE_CUDA_DMABUF (1), FAKE_CUDA_ORDERING (100),
// FAKE_CUDA_FLUSH_OPTIONS (1: cuFlushGPUDirectRDMAWrites supported), FAKE_CUDA_ALIGN (0: the
// alignment past 64 KiB device addresses are handed out at, e.g. 256 as cuMemAlloc may),
// FAKE_CUDA_MEMORY (bytes a device holds, 1 GiB), FAKE_CUDA_MISSING (entry points to leave
// out, comma separated), FAKE_CUDA_KERNELS (1: the library's kernels load, and run on the
// CPU; 0: cuModuleLoadData answers CUDA_ERROR_NO_BINARY_FOR_GPU, as for a GPU the build has
// no code for). The kernels here are the CPU's reading of what the rooms' .cu files compute, so
// what they test is the library's use of them; the kernels themselves run in the tests labelled
// gpu. fake_cuda_counters() reports what was done, for tests.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "canvas_pixels.hpp"
#include "fake_cuda.hpp"
#include "gpu/picture422.hpp"
#include "nvenc_pixels.hpp"
#include "slices/prores_slices.hpp"

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int)

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kNotFound = 500;
constexpr CUresult kNotSupported = 801;

long env(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

bool missing(const char* function) {
  const char* v = std::getenv("FAKE_CUDA_MISSING");
  if (!v) return false;
  const std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + function + ",") != std::string::npos;
}

struct Allocation {
  int fd;
  std::byte* alias;  // writable view of the address handed out
  size_t bytes;      // handed out from that address
  void* mapped;      // the inaccessible mapping, from its 64 KiB aligned start
  void* view;        // the writable mapping, from its start
  size_t map_bytes;  // of each mapping
};

struct State {
  std::mutex mutex;
  bool initialised = false;
  std::map<CUdeviceptr, Allocation> device;  // by start address
  size_t device_bytes = 0;
  int context_depth = 0;
};

State& state() {
  static State s;
  return s;
}

FakeCudaCounters counters{};

// The writable alias of [at, at+bytes) in device memory, or nullptr when out of bounds.
std::byte* alias(CUdeviceptr at, size_t bytes) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.device.upper_bound(at);
  if (it == s.device.begin()) return nullptr;
  --it;
  if (at + bytes > it->first + it->second.bytes) return nullptr;
  return it->second.alias + (at - it->first);
}

// ---- Stream order

constexpr uintptr_t kLegacyStream = 1;     // CU_STREAM_LEGACY; the NULL stream is the same
constexpr uintptr_t kPerThreadStream = 2;  // CU_STREAM_PER_THREAD
constexpr unsigned kStreamNonBlocking = 1;

struct FakeStream {
  bool non_blocking;
};
struct FakeEvent {
  bool on_legacy = false;  // last recorded on the NULL stream: waiting for it runs that stream
};

bool is_legacy(void* stream) {
  return stream == nullptr || reinterpret_cast<uintptr_t>(stream) == kLegacyStream;
}
bool is_builtin(void* stream) {  // the NULL stream or the per-thread one: no FakeStream behind it
  return is_legacy(stream) || reinterpret_cast<uintptr_t>(stream) == kPerThreadStream;
}
// Whether work on `stream` waits for the NULL stream's: all but our non-blocking streams.
bool waits_for_legacy(void* stream) {
  return is_builtin(stream) || !static_cast<FakeStream*>(stream)->non_blocking;
}

std::mutex& queue_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::function<void()>>& legacy_queue() {
  static std::vector<std::function<void()>> q;
  return q;
}

// Runs what waits on the NULL stream, in order.
void run_legacy() {
  std::vector<std::function<void()>> work;
  {
    std::lock_guard lock(queue_mutex());
    work.swap(legacy_queue());
  }
  for (auto& w : work) w();
}

// Queues `work` on `stream` as CUDA orders it (see the file's comment).
void enqueue(void* stream, std::function<void()> work) {
  if (is_legacy(stream)) {
    std::lock_guard lock(queue_mutex());
    legacy_queue().push_back(std::move(work));
    return;
  }
  if (waits_for_legacy(stream)) run_legacy();
  work();
}

CUresult fake_init(unsigned) {
  const auto rc = static_cast<CUresult>(env("FAKE_CUDA_INIT", 0));
  if (rc == kSuccess) state().initialised = true;
  return rc;
}
CUresult fake_device_count(int* count) {
  if (!state().initialised) return kNotInitialized;
  *count = static_cast<int>(env("FAKE_CUDA_DEVICES", 1));
  return kSuccess;
}
CUresult fake_device_get(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= env("FAKE_CUDA_DEVICES", 1)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}
CUresult fake_device_name(char* name, int length, int device) {
  std::snprintf(name, static_cast<size_t>(length), "Fake GPU %d", device);
  return kSuccess;
}
CUresult fake_device_attribute(int* value, int attribute, int) {
  switch (attribute) {
    case 75: *value = 9; break;  // compute capability 9.0
    case 76: *value = 0; break;
    case 14: *value = 512; break;  // texture alignment, which FFmpeg's frame pools ask
    case 116: *value = 1; break;
    case 117: *value = static_cast<int>(env("FAKE_CUDA_FLUSH_OPTIONS", 1)); break;
    case 118: *value = static_cast<int>(env("FAKE_CUDA_ORDERING", 100)); break;
    case 124: *value = static_cast<int>(env("FAKE_CUDA_DMABUF", 1)); break;
    default: *value = 0;
  }
  return kSuccess;
}
CUresult fake_pci_bus_id(char* id, int length, int device) {
  std::snprintf(id, static_cast<size_t>(length), "0000:%02X:00.0", 0x41 + device);
  return kSuccess;
}
CUresult fake_total_mem(size_t* bytes, int) {
  *bytes = static_cast<size_t>(env("FAKE_CUDA_MEMORY", 1L << 30));
  return kSuccess;
}
CUresult fake_error_name(CUresult rc, const char** name) {
  switch (rc) {
    case 0: *name = "CUDA_SUCCESS"; return kSuccess;
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; return kSuccess;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return kSuccess;
    case 209: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return kSuccess;
    case 801: *name = "CUDA_ERROR_NOT_SUPPORTED"; return kSuccess;
    default: return kInvalidValue;
  }
}
int fake_context_token;
int g_primary_retained = 0;  // retains not yet released: the primary context is active
CUresult fake_ctx_retain(void** context, int) {
  ++g_primary_retained;
  *context = &fake_context_token;
  return kSuccess;
}
CUresult fake_ctx_release(int) {
  --g_primary_retained;
  return kSuccess;
}
CUresult fake_ctx_push(void*) {
  ++state().context_depth;
  return kSuccess;
}
CUresult fake_ctx_pop(void** context) {
  if (context) *context = &fake_context_token;
  --state().context_depth;
  return kSuccess;
}

CUresult fake_mem_alloc(CUdeviceptr* at, size_t bytes) {
  auto& s = state();
  // FAKE_CUDA_ALIGN: hand the address out that far past a 64 KiB boundary, as cuMemAlloc may
  // (it promises only alignment for any variable).
  const auto offset = static_cast<size_t>(env("FAKE_CUDA_ALIGN", 0)) % 65536;
  const size_t size = (bytes + offset + 65535) / 65536 * 65536;
  {
    std::lock_guard lock(s.mutex);
    if (s.device_bytes + size > static_cast<size_t>(env("FAKE_CUDA_MEMORY", 1L << 30)))
      return kOutOfMemory;
  }
  int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return kOutOfMemory;
  // Reserve 64 KiB more than needed to map at a 64 KiB aligned, inaccessible address.
  void* reserve = mmap(nullptr, size + 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (reserve == MAP_FAILED || view == MAP_FAILED) return kOutOfMemory;
  auto base = reinterpret_cast<uintptr_t>(reserve);
  const uintptr_t aligned = (base + 65535) / 65536 * 65536;
  munmap(reserve, aligned - base);
  if (const size_t tail = base + 65536 - aligned)
    munmap(reinterpret_cast<void*>(aligned + size), tail);
  // The device address maps the same pages, but nothing may read or write them there.
  mmap(reinterpret_cast<void*>(aligned), size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
  std::lock_guard lock(s.mutex);
  s.device[aligned + offset] = {fd,    static_cast<std::byte*>(view) + offset,
                                bytes, reinterpret_cast<void*>(aligned),
                                view,  size};
  s.device_bytes += size;
  ++counters.allocations_live;
  *at = aligned + offset;
  return kSuccess;
}
CUresult fake_mem_free(CUdeviceptr at) {
  run_legacy();  // cuMemFree waits for the device
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.device.find(at);
  if (it == s.device.end()) return kInvalidValue;
  munmap(it->second.mapped, it->second.map_bytes);
  munmap(it->second.view, it->second.map_bytes);
  close(it->second.fd);
  s.device_bytes -= it->second.map_bytes;
  s.device.erase(it);
  --counters.allocations_live;
  return kSuccess;
}
std::map<void*, size_t>& pinned_sizes() {
  static std::map<void*, size_t> sizes;
  return sizes;
}
CUresult fake_host_alloc_tracked(void** at, size_t bytes, unsigned) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return kOutOfMemory;
  std::lock_guard lock(state().mutex);
  pinned_sizes()[p] = bytes;
  ++counters.pinned_live;
  *at = p;
  return kSuccess;
}
CUresult fake_free_host(void* at) {
  std::lock_guard lock(state().mutex);
  auto it = pinned_sizes().find(at);
  if (it == pinned_sizes().end()) return kInvalidValue;
  munmap(at, it->second);
  pinned_sizes().erase(it);
  --counters.pinned_live;
  return kSuccess;
}
CUresult fake_host_register(void* at, size_t bytes, unsigned) {
  return at && bytes ? kSuccess : kInvalidValue;
}
CUresult fake_host_unregister(void*) { return kSuccess; }
// A copy's ends are checked when it is queued (an address out of bounds fails the call) and
// the bytes move when its stream runs it.
CUresult copy_in(CUdeviceptr to, const void* from, size_t bytes, void* stream) {
  std::byte* p = alias(to, bytes);
  if (!p) return kInvalidValue;
  counters.bytes_copied += bytes;
  enqueue(stream, [=] { std::memcpy(p, from, bytes); });
  return kSuccess;
}
CUresult copy_out(void* to, CUdeviceptr from, size_t bytes, void* stream) {
  const std::byte* p = alias(from, bytes);
  if (!p) return kInvalidValue;
  counters.bytes_copied += bytes;
  enqueue(stream, [=] { std::memcpy(to, p, bytes); });
  return kSuccess;
}
// Synchronous copies wait for the NULL stream first, as CUDA's do.
CUresult fake_htod(CUdeviceptr to, const void* from, size_t bytes) {
  ++counters.uploads;
  run_legacy();
  return copy_in(to, from, bytes, reinterpret_cast<void*>(kPerThreadStream));
}
CUresult fake_dtoh(void* to, CUdeviceptr from, size_t bytes) {
  ++counters.downloads;
  run_legacy();
  return copy_out(to, from, bytes, reinterpret_cast<void*>(kPerThreadStream));
}
CUresult fake_htod_async(CUdeviceptr to, const void* from, size_t bytes, void* stream) {
  ++counters.uploads;
  ++counters.async_copies;
  return copy_in(to, from, bytes, stream);
}
CUresult fake_dtoh_async(void* to, CUdeviceptr from, size_t bytes, void* stream) {
  ++counters.downloads;
  ++counters.async_copies;
  return copy_out(to, from, bytes, stream);
}
CUresult fake_dtod_async(CUdeviceptr to, CUdeviceptr from, size_t bytes, void* stream) {
  std::byte* p = alias(to, bytes);
  const std::byte* q = alias(from, bytes);
  if (!p || !q) return kInvalidValue;
  ++counters.async_copies;
  counters.bytes_copied += bytes;
  enqueue(stream, [=] { std::memmove(p, q, bytes); });
  return kSuccess;
}
CUresult fake_memset(CUdeviceptr at, unsigned char value, size_t bytes) {
  std::byte* p = alias(at, bytes);
  if (!p) return kInvalidValue;
  run_legacy();
  std::memset(p, value, bytes);
  return kSuccess;
}
CUresult fake_memset_async(CUdeviceptr at, unsigned char value, size_t bytes, void* stream) {
  std::byte* p = alias(at, bytes);
  if (!p) return kInvalidValue;
  enqueue(stream, [=] { std::memset(p, value, bytes); });
  return kSuccess;
}
CUresult fake_stream_create(void** stream, unsigned flags) {
  *stream = new FakeStream{(flags & kStreamNonBlocking) != 0};
  return kSuccess;
}
CUresult fake_stream_destroy(void* stream) {
  if (is_builtin(stream)) return kInvalidValue;
  delete static_cast<FakeStream*>(stream);
  return kSuccess;
}
CUresult fake_stream_sync(void* stream) {
  if (waits_for_legacy(stream)) run_legacy();
  return kSuccess;
}
CUresult fake_event_create(void** event, unsigned) {
  *event = new FakeEvent{};
  return kSuccess;
}
CUresult fake_event_record(void* event, void* stream) {
  // Only work on the NULL stream is held back: an event recorded anywhere else has passed.
  static_cast<FakeEvent*>(event)->on_legacy = is_legacy(stream);
  return kSuccess;
}
// Waiting for an event recorded on the NULL stream runs that stream's work up to it.
CUresult fake_event_sync(void* event) {
  if (static_cast<FakeEvent*>(event)->on_legacy) run_legacy();
  return kSuccess;
}
CUresult fake_event_query(void* event) { return fake_event_sync(event); }
CUresult fake_stream_wait_event(void*, void* event, unsigned) { return fake_event_sync(event); }
CUresult fake_event_destroy(void* event) {
  delete static_cast<FakeEvent*>(event);
  return kSuccess;
}
CUresult fake_pointer_set_attribute(const void*, int, CUdeviceptr at) {
  return alias(at, 1) ? kSuccess : kInvalidValue;
}
// A page-aligned range inside one allocation, as the driver takes it. The descriptor is of the
// whole allocation (nothing here imports it at an offset).
CUresult fake_dmabuf(void* handle, CUdeviceptr at, size_t bytes, int type,
                     unsigned long long) {  // NOLINT
  if (type != 1 || !env("FAKE_CUDA_DMABUF", 1)) return kNotSupported;
  const auto page = static_cast<CUdeviceptr>(sysconf(_SC_PAGESIZE));
  if (at % page != 0 || bytes % page != 0 || bytes == 0) return kInvalidValue;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.device.upper_bound(at);
  if (it == s.device.begin()) return kInvalidValue;
  --it;
  const uintptr_t mapped_end =
      reinterpret_cast<uintptr_t>(it->second.mapped) + it->second.map_bytes;
  if (at < reinterpret_cast<uintptr_t>(it->second.mapped) || at + bytes > mapped_end)
    return kInvalidValue;
  *static_cast<int*>(handle) = dup(it->second.fd);
  ++counters.dmabuf_exports;
  return kSuccess;
}
struct Copy2D {  // CUDA_MEMCPY2D
  size_t src_x, src_y;
  unsigned src_type;
  const void* src_host;
  CUdeviceptr src_device;
  void* src_array;
  size_t src_pitch;
  size_t dst_x, dst_y;
  unsigned dst_type;
  void* dst_host;
  CUdeviceptr dst_device;
  void* dst_array;
  size_t dst_pitch;
  size_t width, height;
};
CUresult fake_memcpy_2d_async(const Copy2D* c, void* stream) {
  if (c->src_x || c->src_y || c->dst_x || c->dst_y || c->src_array || c->dst_array)
    return kInvalidValue;
  if (c->width > c->src_pitch || c->width > c->dst_pitch) return kInvalidValue;
  const size_t src_span = c->height ? (c->height - 1) * c->src_pitch + c->width : 0;
  const size_t dst_span = c->height ? (c->height - 1) * c->dst_pitch + c->width : 0;
  const std::byte* src = c->src_type == 2 ? alias(c->src_device, src_span)
                                          : static_cast<const std::byte*>(c->src_host);
  std::byte* dst =
      c->dst_type == 2 ? alias(c->dst_device, dst_span) : static_cast<std::byte*>(c->dst_host);
  if (!src || !dst) return kInvalidValue;
  enqueue(stream, [=, width = c->width, height = c->height, src_pitch = c->src_pitch,
                   dst_pitch = c->dst_pitch] {
    for (size_t row = 0; row < height; ++row)
      std::memcpy(dst + row * dst_pitch, src + row * src_pitch, width);
  });
  ++counters.async_copies;
  counters.bytes_copied += c->width * c->height;
  return kSuccess;
}

// Modules: one stand-in module with every room's kernels (the .cu files), computed on the
// CPU: the first difference as the kernel defines it, the conversions and the canvas with the
// very functions the kernels call (nvenc_pixels.hpp, canvas_pixels.hpp, picture422.hpp). Only
// blocks the launch's grid covers are computed, so a grid that falls short shows in the output as
// it would on a GPU.
int g_module = 0;
// The library's functions, in kFunctionNames's order.
enum FakeFunction {
  kFirstDifference,
  kPacked422ToNv12,
  kYuv422p10ToP010,
  kRgb24ToRgb0,
  kPlaceNv12,
  kFillNv12,
  kGrayNv12,
  kProresDct,
  kProresCount,
  kProresWrite,
  kToYuv422p10,
  kProresSearch,
  kProresPlace,
  kFakeFunctions
};
int g_functions[kFakeFunctions] = {};
constexpr const char* kFunctionNames[kFakeFunctions] = {
    "rdmavideo_first_difference", "rdmavideo_packed422_to_nv12", "rdmavideo_yuv422p10_to_p010",
    "rdmavideo_rgb24_to_rgb0",    "rdmavideo_place_nv12",        "rdmavideo_fill_nv12",
    "rdmavideo_gray_nv12",        "rdmavideo_prores_dct",        "rdmavideo_prores_count",
    "rdmavideo_prores_write",     "rdmavideo_to_yuv422p10",      "rdmavideo_prores_search",
    "rdmavideo_prores_place"};
constexpr CUresult kNoBinaryForGpu = 209;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kIllegalAddress = 700;  // what a kernel reading outside memory meets
CUresult fake_module_load(void** module, const void* image) {
  if (!image) return kInvalidValue;
  if (env("FAKE_CUDA_KERNELS", 1) == 0) return kNoBinaryForGpu;
  *module = &g_module;
  return kSuccess;
}
CUresult fake_module_unload(void* module) {
  return module == &g_module ? kSuccess : kInvalidHandle;
}
CUresult fake_module_function(void** function, void* module, const char* name) {
  if (module != &g_module) return kInvalidHandle;
  for (int f = 0; f < kFakeFunctions; ++f) {
    if (std::strcmp(name, kFunctionNames[f]) == 0) {
      *function = &g_functions[f];
      return kSuccess;
    }
  }
  return kNotFound;
}

template <typename T>
T arg(void** params, int i) {
  return *static_cast<T*>(params[i]);
}

// A plane of `rows` rows `pitch` apart, `row_bytes` used in each, as a CPU pointer.
uint8_t* plane(CUdeviceptr at, size_t pitch, unsigned rows, size_t row_bytes) {
  return reinterpret_cast<uint8_t*>(alias(at, rows ? (rows - 1) * pitch + row_bytes : 0));
}

CUresult first_difference(void** params) {
  const auto a_at = arg<CUdeviceptr>(params, 0);
  const auto b_at = arg<CUdeviceptr>(params, 1);
  const auto from = arg<uint64_t>(params, 2);
  const auto bytes = arg<uint64_t>(params, 3);
  const std::byte* a = alias(a_at, bytes);
  const std::byte* b = alias(b_at, bytes);
  auto* first = reinterpret_cast<uint64_t*>(alias(arg<CUdeviceptr>(params, 4), sizeof(uint64_t)));
  if (!a || !b || !first) return kIllegalAddress;
  for (uint64_t at = from; at < bytes; ++at) {
    if (a[at] != b[at]) {
      *first = std::min(*first, at);
      break;
    }
  }
  return kSuccess;
}

// The canvas's NV12 planes as CPU pointers; false where they are not device memory.
bool cpu_target(rdmavideo::media::canvas::Target& t) {
  t.y = plane(reinterpret_cast<CUdeviceptr>(t.y), t.y_pitch, t.height, t.width);
  t.uv = plane(reinterpret_cast<CUdeviceptr>(t.uv), t.uv_pitch, t.height / 2, t.width);
  return t.y && t.uv;
}

// The composite kernels (canvas_pixels.hpp): every block the grid covers.
CUresult composite(int f, void** params, unsigned threads_x, unsigned threads_y) {
  namespace px = rdmavideo::media::canvas;
  px::Source source{};
  const uint8_t* luma = nullptr;
  uint64_t luma_pitch = 0;
  int next = 0;
  if (f == kPlaceNv12) {
    source = arg<px::Source>(params, next++);
    for (int p = 0; p < px::plane_count(source.layout); ++p) {
      source.plane[p] = plane(reinterpret_cast<CUdeviceptr>(source.plane[p]), source.pitch[p],
                              px::plane_rows(source.layout, p, source.height),
                              px::plane_row_bytes(source.layout, p, source.width));
      if (!source.plane[p]) return kIllegalAddress;
    }
  } else if (f == kGrayNv12) {
    luma_pitch = arg<uint64_t>(params, 1);
    next = 2;
  }
  px::Target target = arg<px::Target>(params, next);
  const auto area = arg<px::Area>(params, next + 1);
  if (!cpu_target(target)) return kIllegalAddress;
  if (f == kGrayNv12) {
    luma = plane(arg<CUdeviceptr>(params, 0), luma_pitch, static_cast<unsigned>(area.height),
                 static_cast<size_t>(area.width));
    if (!luma) return kIllegalAddress;
  }
  const unsigned pairs = std::min(static_cast<unsigned>(area.width) / 2, threads_x);
  const unsigned rows2 = std::min(static_cast<unsigned>(area.height) / 2, threads_y);
  for (unsigned row2 = 0; row2 < rows2; ++row2) {
    for (unsigned pair = 0; pair < pairs; ++pair) {
      if (f == kPlaceNv12) {
        px::place_nv12(source, target, area, pair, row2);
      } else if (f == kFillNv12) {
        px::fill_nv12(target, area, arg<px::Yuv>(params, 2), pair, row2);
      } else {
        px::gray_nv12(luma, luma_pitch, target, area, pair, row2);
      }
    }
  }
  return kSuccess;
}

// The rate control's one-block kernels: their phases (prores_rate.hpp) run for each thread
// the block has, one phase after another, as the barriers between them order them on a GPU.
CUresult prores_rate(int f, void** params, unsigned block_threads) {
  namespace pr = rdmavideo::prores;
  auto device = [&](int i, size_t bytes) { return alias(arg<CUdeviceptr>(params, i), bytes); };
  const auto threads = std::min<unsigned>(block_threads, pr::kRateThreads);
  auto shared = std::make_unique<pr::RateShared>();  // threads past the block's own add nothing
  const auto count = arg<unsigned>(params, 1);
  const auto* sizes =
      reinterpret_cast<const uint64_t*>(device(0, pr::kSizeRows * count * sizeof(uint64_t)));
  auto* rate = reinterpret_cast<pr::RateState*>(device(2, sizeof(pr::RateState)));
  if (!sizes || !rate) return kIllegalAddress;
  if (f == kProresSearch) {
    if (rate->pass >= pr::kSearchPasses) return kSuccess;
    for (unsigned t = 0; t < threads; ++t) pr::search_sums(t, sizes, count, *rate, *shared);
    pr::search_pass(*shared, *rate);
    return kSuccess;
  }
  auto* quantisers = reinterpret_cast<int32_t*>(device(3, count * sizeof(int32_t)));
  auto* chosen = reinterpret_cast<uint64_t*>(device(4, count * sizeof(uint64_t)));
  auto* offsets = reinterpret_cast<uint64_t*>(device(5, count * sizeof(uint64_t)));
  if (!quantisers || !chosen || !offsets) return kIllegalAddress;
  const pr::RateState s = *rate;
  const int found_row = pr::rate_row(s, s.hi), finer_row = pr::rate_row(s, s.hi - 1);
  if (found_row < 0) return kIllegalAddress;  // the search never counted where it ended
  const uint64_t* found = sizes + size_t(found_row) * count;
  const uint64_t* finer = finer_row < 0 ? nullptr : sizes + size_t(finer_row) * count;
  for (unsigned t = 0; t < threads; ++t) pr::finer_sums(t, found, finer, count, *shared);
  pr::finer_scan(finer, *shared);
  for (unsigned t = 0; t < threads; ++t) pr::finer_stop(t, found, finer, count, s, *shared);
  for (unsigned t = 0; t < threads; ++t)
    pr::place_sums(t, found, finer, count, s, *shared, quantisers, chosen);
  pr::offsets_scan(count, *shared, *rate);
  for (unsigned t = 0; t < threads; ++t)
    pr::offsets_place(t, chosen, count, *shared, *rate, offsets);
  return kSuccess;
}

// The ProRes kernels (prores_slices.hpp): each slice the grid covers, its phases run for each
// thread of its block in turn (the DCT: each of its 8x8 blocks a thread covers).
CUresult prores(int f, void** params, unsigned grid_x, unsigned grid_y, unsigned block) {
  namespace pr = rdmavideo::prores;
  auto device = [&](int i, size_t bytes) { return alias(arg<CUdeviceptr>(params, i), bytes); };
  const auto count = arg<unsigned>(params, 2);
  const auto coefficient_bytes = count * pr::kSliceCoefficients * sizeof(pr::Coefficient);
  const auto* slices = reinterpret_cast<const pr::SliceAt*>(device(1, count * sizeof(pr::SliceAt)));
  if (!slices) return kIllegalAddress;
  if (f == kProresDct) {
    auto picture = arg<pr::PlanesRef>(params, 0);
    auto* coefficients = reinterpret_cast<pr::Coefficient*>(device(3, coefficient_bytes));
    const size_t cw = (picture.width + 1) / 2;
    picture.y = reinterpret_cast<const uint16_t*>(plane(reinterpret_cast<CUdeviceptr>(picture.y),
                                                        picture.y_pitch * 2, picture.height,
                                                        picture.width * 2u));
    picture.cb = reinterpret_cast<const uint16_t*>(plane(
        reinterpret_cast<CUdeviceptr>(picture.cb), picture.c_pitch * 2, picture.height, cw * 2));
    picture.cr = reinterpret_cast<const uint16_t*>(plane(
        reinterpret_cast<CUdeviceptr>(picture.cr), picture.c_pitch * 2, picture.height, cw * 2));
    if (!coefficients || !picture.y || !picture.cb || !picture.cr) return kIllegalAddress;
    for (unsigned i = 0; i < std::min(count, grid_x); ++i) {
      for (unsigned t = 0; t < std::min(block, slices[i].mb_count * 8); ++t) {
        pr::slice_block_dct(picture, slices[i].mb_x, slices[i].mb_y, slices[i].mb_count, t,
                            coefficients + size_t{i} * pr::kSliceCoefficients);
      }
    }
    return kSuccess;
  }
  const auto* coefficients = reinterpret_cast<const pr::Coefficient*>(device(0, coefficient_bytes));
  const auto* matrix = reinterpret_cast<const uint8_t*>(device(3, 64));
  if (!coefficients || !matrix) return kIllegalAddress;
  if (block < pr::kSliceThreads) return kInvalidValue;  // a slice's chunks need their threads
  auto shared = std::make_unique<pr::SliceShared>();
  if (f == kProresCount) {
    const auto* rate = reinterpret_cast<const pr::RateState*>(device(4, sizeof(pr::RateState)));
    const auto first_row = arg<int>(params, 5);
    auto* sizes = reinterpret_cast<uint64_t*>(device(6, pr::kSizeRows * count * sizeof(uint64_t)));
    if (!rate || !sizes || first_row < 0 || first_row + int(grid_y) > pr::kSizeRows)
      return kIllegalAddress;
    for (unsigned y = 0; y < grid_y; ++y) {
      const int row = first_row + int(y);
      if (rate->q[row] == 0) continue;
      for (unsigned i = 0; i < std::min(count, grid_x); ++i) {
        sizes[size_t(row) * count + i] =
            pr::count_slice(coefficients + size_t{i} * pr::kSliceCoefficients, slices[i].mb_count,
                            matrix, rate->q[row], *shared);
      }
    }
    return kSuccess;
  }
  const auto* quantisers = reinterpret_cast<const int32_t*>(device(4, count * sizeof(int32_t)));
  const auto* chosen = reinterpret_cast<const uint64_t*>(device(5, count * sizeof(uint64_t)));
  const auto* offsets = reinterpret_cast<const uint64_t*>(device(6, count * sizeof(uint64_t)));
  auto* table = reinterpret_cast<uint8_t*>(device(7, count * 2));
  if (!quantisers || !chosen || !offsets || !table) return kIllegalAddress;
  std::vector<uint32_t> words(pr::kSliceWords);
  for (unsigned i = 0; i < std::min(count, grid_x); ++i) {
    if (chosen[i] == 0) continue;
    auto* to =
        reinterpret_cast<uint8_t*>(alias(arg<CUdeviceptr>(params, 8) + offsets[i], chosen[i]));
    if (!to) return kIllegalAddress;
    // A kernel writes what it counts: a slice that disagrees is a fault the tests must see.
    if (pr::write_slice(coefficients + size_t{i} * pr::kSliceCoefficients, slices[i].mb_count,
                        matrix, quantisers[i], to, chosen[i], *shared, words.data()) != chosen[i])
      return kIllegalAddress;
    pr::put16(table + 2 * i, static_cast<uint32_t>(chosen[i]));
  }
  return kSuccess;
}

// The encoder's 10-bit 4:2:2 picture from a stream's format: each plane read or written
// checked to be memory the caller has, at the rows and bytes its format gives it.
CUresult to_yuv422p10(void** params, unsigned threads_x, unsigned threads_y) {
  namespace px = rdmavideo::prores::input;
  const auto input = arg<int>(params, 0);
  auto planes = arg<px::Planes3>(params, 1);
  const auto width = arg<unsigned>(params, 2), height = arg<unsigned>(params, 3);
  const unsigned pairs = (width + 1) / 2, half_rows = (height + 1) / 2;
  struct Extent {
    unsigned rows;
    size_t bytes;
  };
  Extent in[3] = {};
  switch (input) {
    case px::kInUyvy:
    case px::kInYuy2: in[0] = {height, pairs * 4u}; break;
    case px::kInNv12: in[0] = {height, width}, in[1] = {half_rows, pairs * 2u}; break;
    case px::kInI420: in[0] = {height, width}, in[1] = in[2] = {half_rows, pairs}; break;
    case px::kInP010: in[0] = {height, width * 2u}, in[1] = {half_rows, pairs * 4u}; break;
    case px::kInYuv422p10:
      in[0] = {height, width * 2u}, in[1] = in[2] = {height, pairs * 2u};
      break;
    case px::kInV210: in[0] = {height, (width + 5) / 6 * 16u}; break;
    default: return kInvalidValue;
  }
  const Extent out[3] = {{height, width * 2u}, {height, pairs * 2u}, {height, pairs * 2u}};
  for (int p = 0; p < 3; ++p) {
    if (in[p].rows) {
      planes.in[p] = plane(reinterpret_cast<CUdeviceptr>(planes.in[p]), planes.in_pitch[p],
                           in[p].rows, in[p].bytes);
      if (!planes.in[p]) return kIllegalAddress;
    }
    planes.out[p] = plane(reinterpret_cast<CUdeviceptr>(planes.out[p]), planes.out_pitch[p],
                          out[p].rows, out[p].bytes);
    if (!planes.out[p]) return kIllegalAddress;
  }
  for (unsigned row = 0; row < std::min(height, threads_y); ++row) {
    for (unsigned pair = 0; pair < std::min(pairs, threads_x); ++pair)
      px::to_yuv422p10(input, planes, width, height, pair, row);
  }
  return kSuccess;
}

CUresult fake_launch(void* function, unsigned grid_x, unsigned grid_y, unsigned, unsigned block_x,
                     unsigned block_y, unsigned, unsigned, void* stream, void** params, void**) {
  if (!params) return kInvalidValue;
  // Kernels run at once: after the NULL stream's work where they are ordered behind it.
  if (waits_for_legacy(stream)) run_legacy();
  const int f = static_cast<int>(static_cast<int*>(function) - g_functions);
  if (f < 0 || f >= kFakeFunctions) return kInvalidHandle;
  ++counters.kernel_launches;
  if (f == kFirstDifference) return first_difference(params);
  const unsigned threads_x = grid_x * block_x, threads_y = grid_y * block_y;
  namespace px = rdmavideo::av::nvenc;
  if (f == kPlaceNv12 || f == kFillNv12 || f == kGrayNv12)
    return composite(f, params, threads_x, threads_y);
  if (f == kToYuv422p10) return to_yuv422p10(params, threads_x, threads_y);
  if (f == kProresDct || f == kProresCount || f == kProresWrite)
    return prores(f, params, grid_x, grid_y, block_x);
  if (f == kProresSearch || f == kProresPlace) return prores_rate(f, params, block_x);
  if (f == kPacked422ToNv12) {
    const auto width = arg<unsigned>(params, 6), height = arg<unsigned>(params, 7);
    const auto src_pitch = arg<uint64_t>(params, 1), y_pitch = arg<uint64_t>(params, 3),
               uv_pitch = arg<uint64_t>(params, 5);
    const uint8_t* src = plane(arg<CUdeviceptr>(params, 0), src_pitch, height, (width + 1) / 2 * 4);
    uint8_t* y = plane(arg<CUdeviceptr>(params, 2), y_pitch, height, width);
    uint8_t* uv =
        plane(arg<CUdeviceptr>(params, 4), uv_pitch, (height + 1) / 2, (width + 1) / 2 * 2);
    if (!src || !y || !uv) return kIllegalAddress;
    for (unsigned row2 = 0; row2 < std::min((height + 1) / 2, threads_y); ++row2) {
      for (unsigned pair = 0; pair < std::min((width + 1) / 2, threads_x); ++pair) {
        px::packed422_to_nv12(src, src_pitch, y, y_pitch, uv, uv_pitch, width, height, pair, row2,
                              arg<int>(params, 8));
      }
    }
    return kSuccess;
  }
  if (f == kYuv422p10ToP010) {
    const auto width = arg<unsigned>(params, 10), height = arg<unsigned>(params, 11);
    uint64_t pitch[5];
    uint8_t* at[5];
    const size_t row_bytes[5] = {width * 2u, (width + 1) / 2 * 2u, (width + 1) / 2 * 2u, width * 2u,
                                 (width + 1) / 2 * 4u};
    for (int p = 0; p < 5; ++p) {
      pitch[p] = arg<uint64_t>(params, 2 * p + 1);
      at[p] = plane(arg<CUdeviceptr>(params, 2 * p), pitch[p], p == 4 ? (height + 1) / 2 : height,
                    row_bytes[p]);
      if (!at[p]) return kIllegalAddress;
    }
    for (unsigned row2 = 0; row2 < std::min((height + 1) / 2, threads_y); ++row2) {
      for (unsigned pair = 0; pair < std::min((width + 1) / 2, threads_x); ++pair) {
        px::yuv422p10_to_p010(at[0], pitch[0], at[1], pitch[1], at[2], pitch[2], at[3], pitch[3],
                              at[4], pitch[4], width, height, pair, row2);
      }
    }
    return kSuccess;
  }
  const auto width = arg<unsigned>(params, 4), height = arg<unsigned>(params, 5);
  const auto src_pitch = arg<uint64_t>(params, 1), dst_pitch = arg<uint64_t>(params, 3);
  const uint8_t* src = plane(arg<CUdeviceptr>(params, 0), src_pitch, height, width * 3u);
  uint8_t* dst = plane(arg<CUdeviceptr>(params, 2), dst_pitch, height, width * 4u);
  if (!src || !dst) return kIllegalAddress;
  for (unsigned row = 0; row < std::min(height, threads_y); ++row) {
    for (unsigned x = 0; x < std::min(width, threads_x); ++x)
      px::rgb24_to_rgb0(src, src_pitch, dst, dst_pitch, x, row);
  }
  return kSuccess;
}

CUresult fake_flush(int, int) {
  ++counters.flushes;
  return kSuccess;
}

struct Export {
  const char* name;
  void* fn;
};

template <typename Fn>
void* as_void(Fn* fn) {
  return reinterpret_cast<void*>(fn);
}

const Export kExports[] = {
    {"cuInit", as_void(fake_init)},
    {"cuDeviceGetCount", as_void(fake_device_count)},
    {"cuDeviceGet", as_void(fake_device_get)},
    {"cuDeviceGetName", as_void(fake_device_name)},
    {"cuDeviceGetAttribute", as_void(fake_device_attribute)},
    {"cuDeviceGetPCIBusId", as_void(fake_pci_bus_id)},
    {"cuDeviceTotalMem", as_void(fake_total_mem)},
    {"cuGetErrorName", as_void(fake_error_name)},
    {"cuDevicePrimaryCtxRetain", as_void(fake_ctx_retain)},
    {"cuDevicePrimaryCtxRelease", as_void(fake_ctx_release)},
    {"cuCtxPushCurrent", as_void(fake_ctx_push)},
    {"cuCtxPopCurrent", as_void(fake_ctx_pop)},
    {"cuMemAlloc", as_void(fake_mem_alloc)},
    {"cuMemFree", as_void(fake_mem_free)},
    {"cuMemHostAlloc", as_void(fake_host_alloc_tracked)},
    {"cuMemFreeHost", as_void(fake_free_host)},
    {"cuMemHostRegister", as_void(fake_host_register)},
    {"cuMemHostUnregister", as_void(fake_host_unregister)},
    {"cuMemcpyHtoD", as_void(fake_htod)},
    {"cuMemcpyDtoH", as_void(fake_dtoh)},
    {"cuMemcpyHtoDAsync", as_void(fake_htod_async)},
    {"cuMemcpyDtoHAsync", as_void(fake_dtoh_async)},
    {"cuMemcpyDtoDAsync", as_void(fake_dtod_async)},
    {"cuMemsetD8", as_void(fake_memset)},
    {"cuStreamCreate", as_void(fake_stream_create)},
    {"cuStreamDestroy", as_void(fake_stream_destroy)},
    {"cuStreamSynchronize", as_void(fake_stream_sync)},
    {"cuStreamWaitEvent", as_void(fake_stream_wait_event)},
    {"cuEventCreate", as_void(fake_event_create)},
    {"cuEventRecord", as_void(fake_event_record)},
    {"cuEventQuery", as_void(fake_event_query)},
    {"cuEventSynchronize", as_void(fake_event_sync)},
    {"cuEventDestroy", as_void(fake_event_destroy)},
    {"cuPointerSetAttribute", as_void(fake_pointer_set_attribute)},
    {"cuMemGetHandleForAddressRange", as_void(fake_dmabuf)},
    {"cuFlushGPUDirectRDMAWrites", as_void(fake_flush)},
    {"cuMemcpy2DAsync", as_void(fake_memcpy_2d_async)},
    {"cuModuleLoadData", as_void(fake_module_load)},
    {"cuModuleUnload", as_void(fake_module_unload)},
    {"cuModuleGetFunction", as_void(fake_module_function)},
    {"cuLaunchKernel", as_void(fake_launch)},
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  *version = static_cast<int>(env("FAKE_CUDA_VERSION", 13000));
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn,
                                                                    int, uint64_t, int* status) {
  if (std::strcmp(symbol, "cuDriverGetVersion") == 0) {
    *pfn = reinterpret_cast<void*>(&cuDriverGetVersion);
    if (status) *status = 0;
    return kSuccess;
  }
  for (const Export& e : kExports) {
    if (std::strcmp(symbol, e.name) == 0 && !missing(e.name)) {
      *pfn = e.fn;
      if (status) *status = 0;
      return kSuccess;
    }
  }
  *pfn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return kNotFound;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned flags) { return fake_init(flags); }

// ---- What FFmpeg's CUDA loader (nv-codec-headers' cuda_load_functions) looks up by name.

CUresult fake_memcpy_2d(const Copy2D* c) {
  run_legacy();
  return fake_memcpy_2d_async(c, reinterpret_cast<void*>(kPerThreadStream));
}
CUresult fake_error_string(CUresult rc, const char** text) {
  if (fake_error_name(rc, text) != kSuccess) return kInvalidValue;
  return kSuccess;
}
CUresult fake_compute_capability(int* major, int* minor, int device) {
  fake_device_attribute(major, 75, device);
  return fake_device_attribute(minor, 76, device);
}
CUresult fake_ctx_get_device(int* device) {
  *device = 0;
  return kSuccess;
}
// Flags 0 (CU_CTX_SCHED_AUTO), as our loader leaves them.
CUresult fake_primary_get_state(int, unsigned* flags, int* active) {
  *flags = 0;
  *active = g_primary_retained > 0;
  return kSuccess;
}
CUresult fake_stream_query(void* stream) { return fake_stream_sync(stream); }

/// What the fake did, for tests that load it in-process.
__attribute__((visibility("default"))) const FakeCudaCounters* fake_cuda_counters() {
  return &counters;
}

// The entry points FFmpeg's CUDA loader (nv-codec-headers' cuda_load_functions) looks up by
// name, and it fails unless it finds every one. Those FFmpeg's CUDA device, its frame pools and
// NVDEC's copies use work as above; the others answer CUDA_ERROR_NOT_SUPPORTED. (They are
// called through pointers of their real types: on x86-64 a function that takes no arguments
// and returns an int is called correctly with any.)
#define RDMAVIDEO_FAKE_CUDA_EXPORT __attribute__((visibility("default")))
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
  return fake_device_count(count);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDeviceGet(int* device, int ordinal) {
  return fake_device_get(device, ordinal);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDeviceGetName(char* name, int length, int device) {
  return fake_device_name(name, length, device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  return fake_device_attribute(value, attribute, device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, int device) {
  return fake_compute_capability(major, minor, device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuGetErrorName(CUresult rc, const char** name) {
  return fake_error_name(rc, name);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuGetErrorString(CUresult rc, const char** text) {
  return fake_error_string(rc, text);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuCtxPushCurrent_v2(void* context) {
  return fake_ctx_push(context);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuCtxPopCurrent_v2(void** context) {
  return fake_ctx_pop(context);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuCtxGetDevice(int* device) {
  return fake_ctx_get_device(device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuCtxSetLimit(int, size_t) { return kSuccess; }
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
  return fake_ctx_retain(context, device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDevicePrimaryCtxRelease(int device) {
  return fake_ctx_release(device);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDevicePrimaryCtxGetState(int device, unsigned* flags,
                                                               int* active) {
  return fake_primary_get_state(device, flags, active);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags(int, unsigned) { return kSuccess; }
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* at, size_t bytes) {
  return fake_mem_alloc(at, bytes);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr at) { return fake_mem_free(at); }
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemsetD8Async(CUdeviceptr at, unsigned char value,
                                                    size_t bytes, void* stream) {
  return fake_memset_async(at, value, bytes, stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpy2D_v2(const Copy2D* copy) {
  return fake_memcpy_2d(copy);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpy2DAsync_v2(const Copy2D* copy, void* stream) {
  return fake_memcpy_2d_async(copy, stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void* from,
                                                    size_t bytes) {
  return fake_htod(to, from, bytes);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void* to, CUdeviceptr from, size_t bytes) {
  return fake_dtoh(to, from, bytes);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void* from,
                                                         size_t bytes, void* stream) {
  return fake_htod_async(to, from, bytes, stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* to, CUdeviceptr from, size_t bytes,
                                                         void* stream) {
  return fake_dtoh_async(to, from, bytes, stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuStreamCreate(void** stream, unsigned flags) {
  return fake_stream_create(stream, flags);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuStreamQuery(void* stream) {
  return fake_stream_query(stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuStreamSynchronize(void* stream) {
  return fake_stream_sync(stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuStreamDestroy_v2(void* stream) {
  return fake_stream_destroy(stream);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuEventCreate(void** event, unsigned flags) {
  return fake_event_create(event, flags);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuEventDestroy_v2(void* event) {
  return fake_event_destroy(event);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuEventSynchronize(void* event) {
  return fake_event_sync(event);
}
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuEventQuery(void* event) { return fake_event_query(event); }
RDMAVIDEO_FAKE_CUDA_EXPORT CUresult cuEventRecord(void* event, void* stream) {
  return fake_event_record(event, stream);
}

#define RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(name) \
  RDMAVIDEO_FAKE_CUDA_EXPORT CUresult name() { return kNotSupported; }
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuArray3DCreate_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuArrayDestroy)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuCtxCreate_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuCtxDestroy_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuDestroyExternalMemory)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuDestroyExternalSemaphore)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuDeviceGetUuid)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuDevicePrimaryCtxReset)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuExternalMemoryGetMappedBuffer)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuExternalMemoryGetMappedMipmappedArray)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGLGetDevices_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsGLRegisterImage)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsMapResources)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsResourceGetMappedPointer_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsSubResourceGetMappedArray)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsUnmapResources)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuGraphicsUnregisterResource)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuImportExternalMemory)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuImportExternalSemaphore)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuLaunchKernel)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuLinkAddData)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuLinkComplete)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuLinkCreate)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuLinkDestroy)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemAllocManaged)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemAllocPitch_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemcpy)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemcpyAsync)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemcpyDtoDAsync_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMemcpyDtoD_v2)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMipmappedArrayDestroy)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuMipmappedArrayGetLevel)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuModuleGetFunction)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuModuleGetGlobal)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuModuleLoadData)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuModuleUnload)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuSignalExternalSemaphoresAsync)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuStreamAddCallback)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuTexObjectCreate)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuTexObjectDestroy)
RDMAVIDEO_FAKE_CUDA_UNSUPPORTED(cuWaitExternalSemaphoresAsync)

}  // extern "C"
