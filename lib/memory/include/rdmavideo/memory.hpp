// SPDX-License-Identifier: Apache-2.0
// Frame memory: the kinds of memory frames live in, and regions of it that rings and frame
// pools are carved from.
//
// A Region is one contiguous allocation, page aligned and mapped up front (MAP_POPULATE), so
// the first frame does not pay for page faults. It is shared: a ring's region lives as long
// as any lease on one of its slots, a pool's as long as any buffer lent from it, and a
// transport's registration of a region holds the region, so no registration outlives its
// memory. Registering memory with a NIC is the transport's business (the receiver core asks
// its channel to expose a ring, the sender session asks its connection to register a pool);
// this layer only allocates and frees.
//
// Kinds: `host` is ordinary pageable memory (the NIC pins what it registers); `pinned` is
// page-locked (mlock) host memory, counted against RLIMIT_MEMLOCK; `cuda` is device memory
// of one GPU (MemorySpec::device), allocated through the run-time loaded driver
// (rdmavideo/cuda.hpp). A CUDA region's bytes() is a range of device addresses: it can be
// registered and copied to and from (cuda_device()), never read or written by the CPU.
// Code that meets a kind it cannot handle says so (`unsupported`) rather than guessing.
//
// Thread safety: a Region is immutable after allocate(); its bytes are the owner's to
// synchronise.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo::cuda {
class Device;
}

namespace rdmavideo::memory {

enum class MemoryKind : uint8_t {
  host,    ///< pageable host memory
  pinned,  ///< page-locked host memory
  cuda,    ///< device memory of a GPU
};
std::string_view to_string(MemoryKind kind);
std::optional<MemoryKind> parse_memory_kind(std::string_view text);

/// Where frames live: a kind, and for `cuda` which GPU. Made from a kind alone (device 0).
struct MemorySpec {
  MemoryKind kind = MemoryKind::host;
  int device = 0;
  MemorySpec() = default;
  MemorySpec(MemoryKind k, int d = 0) : kind(k), device(d) {}  // NOLINT: a kind is a spec
  friend bool operator==(const MemorySpec&, const MemorySpec&) = default;
};
/// "host", "pinned", "cuda:0".
std::string to_string(const MemorySpec& spec);
/// "host", "pinned", "cuda" (device 0) or "cuda:N"; nullopt for anything else.
std::optional<MemorySpec> parse_memory(std::string_view text);

inline constexpr size_t kPageBytes = 4096;
/// Slots and buffers in GPU memory start on 64 KiB (a GPU page, what GPUDirect maps).
inline constexpr size_t kGpuPageBytes = 65536;
inline constexpr size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

class Region {
 public:
  /// `bytes` rounded up to whole pages (64 KiB GPU pages for cuda), zero-filled. The error
  /// names the size and the cause (for pinned memory, the memlock limit when that is what
  /// refused it; for cuda, the missing driver or device).
  static Result<std::shared_ptr<Region>> allocate(MemorySpec spec, size_t bytes);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  MemoryKind kind() const { return spec_.kind; }
  const MemorySpec& spec() const { return spec_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  /// The GPU a cuda region lives on; null for host kinds.
  const std::shared_ptr<cuda::Device>& cuda_device() const { return device_; }

 private:
  Region(MemorySpec spec, std::byte* data, size_t size) : spec_(spec), data_(data), size_(size) {}
  MemorySpec spec_;
  std::byte* data_;
  size_t size_;
  std::shared_ptr<cuda::Device> device_;       // cuda: the GPU
  std::shared_ptr<const void> device_memory_;  // cuda: frees the device memory
};

/// Writes host bytes `from` into `region` at `offset`: a memcpy for host kinds, an upload
/// for a GPU. The same code fills a frame wherever it lives.
Result<void> write(const Region& region, size_t offset, std::span<const std::byte> from);
/// Reads `to.size()` bytes of `region` at `offset` into host memory.
Result<void> read(const Region& region, size_t offset, std::span<std::byte> to);

/// A limit on the memory a receiver holds for its peers (`--max-memory`): rings, and what a
/// stream's sink keeps beside them. Every holder reserves before it allocates and keeps the
/// reservation exactly as long as the memory, so what is counted is what is mapped. Shared
/// by every stream; thread-safe. Made with std::make_shared: a reservation keeps its budget
/// alive (a GStreamer buffer may hold a slot after its receiver is gone).
class Budget : public std::enable_shared_from_this<Budget> {
 public:
  explicit Budget(uint64_t limit) : limit_(limit) {}
  /// `bytes` held until the returned owner is let go; or `resource`, naming `what` asked
  /// for how much, the limit, and how much of it is in use.
  Result<std::shared_ptr<const void>> reserve(uint64_t bytes, std::string_view what);
  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

/// "1.5 GiB", "512 MiB", "64 KiB", "100 B".
std::string format_bytes(uint64_t bytes);
/// "512M", "2G", "1.5G", "4096", with K, M, G, T (powers of 1024, optional "iB" or "B").
std::optional<uint64_t> parse_bytes(std::string_view text);
/// Physical memory (sysconf), 0 when unknown.
uint64_t physical_memory_bytes();
/// Whether the kernel lets this process pin memory beyond RLIMIT_MEMLOCK: CAP_IPC_LOCK in
/// the effective set, held in the initial user namespace (the kernel asks capable()).
bool can_lock_beyond_limit();
/// The default budget: half of physical memory; where the memory is registered for RDMA
/// (pinned by the kernel), no more than RLIMIT_MEMLOCK unless can_lock_beyond_limit().
/// `why` says which applied.
uint64_t default_budget(bool registered_for_rdma, std::string* why = nullptr);

}  // namespace rdmavideo::memory
