// SPDX-License-Identifier: Apache-2.0
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/platform/pages.hpp"

namespace rdmavideo::memory {

std::string_view to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::pinned: return "pinned";
    case MemoryKind::cuda: return "cuda";
  }
  return "unknown";
}

std::optional<MemoryKind> parse_memory_kind(std::string_view text) {
  if (text == "host") return MemoryKind::host;
  if (text == "pinned") return MemoryKind::pinned;
  if (text == "cuda") return MemoryKind::cuda;
  return std::nullopt;
}

std::string to_string(const MemorySpec& spec) {
  if (spec.kind == MemoryKind::cuda) return fmt::format("cuda:{}", spec.device);
  return std::string(to_string(spec.kind));
}

std::optional<MemorySpec> parse_memory(std::string_view text) {
  if (text.starts_with("cuda:")) {
    const std::string_view n = text.substr(5);
    int device = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), device);
    if (n.empty() || ec != std::errc() || end != n.data() + n.size() || device < 0 ||
        device > 255) {
      return std::nullopt;
    }
    return MemorySpec(MemoryKind::cuda, device);
  }
  if (auto kind = parse_memory_kind(text)) return MemorySpec(*kind);
  return std::nullopt;
}

Result<void> write(const Region& region, size_t offset, std::span<const std::byte> from) {
  if (offset > region.size() || from.size() > region.size() - offset) {
    return make_error(ErrorCode::invalid_argument,
                      "memory: write of {} bytes at {} beyond a region of {}", from.size(), offset,
                      region.size());
  }
  if (region.kind() == MemoryKind::cuda) {
    return region.cuda_device()->upload(cuda::address(region.bytes().data() + offset), from);
  }
  std::memcpy(region.bytes().data() + offset, from.data(), from.size());
  return {};
}

Result<void> read(const Region& region, size_t offset, std::span<std::byte> to) {
  if (offset > region.size() || to.size() > region.size() - offset) {
    return make_error(ErrorCode::invalid_argument,
                      "memory: read of {} bytes at {} beyond a region of {}", to.size(), offset,
                      region.size());
  }
  if (region.kind() == MemoryKind::cuda) {
    return region.cuda_device()->download(to, cuda::address(region.bytes().data() + offset));
  }
  std::memcpy(to.data(), region.bytes().data() + offset, to.size());
  return {};
}

// Normal pages on purpose: transparent huge pages (MADV_HUGEPAGE on 2 MiB-aligned regions)
// were measured making 4K RGBA over loopback TCP about 30% slower (2.7 to 1.9 GB/s, more CPU
// per GB), both ends' copies included, so frames stay on 4 KiB pages until a NIC shows the
// opposite.
Result<std::shared_ptr<Region>> Region::allocate(MemorySpec spec, size_t bytes) {
  const MemoryKind kind = spec.kind;
  if (kind == MemoryKind::cuda) {
    bytes = round_up(std::max<size_t>(bytes, 1), kGpuPageBytes);
    auto device = cuda::Device::shared(spec.device);
    if (!device) return Unexpected(device.error().context("memory"));
    auto memory = (*device)->allocate(bytes);
    if (!memory) return Unexpected(memory.error().context("memory"));
    if (auto ok = (*device)->fill(**memory, std::byte{0}, bytes); !ok)
      return Unexpected(ok.error());
    auto* at = reinterpret_cast<std::byte*>(static_cast<uintptr_t>(**memory));
    std::shared_ptr<Region> region(new Region(spec, at, bytes));
    region->device_ = *device;
    region->device_memory_ = std::move(*memory);
    return region;
  }
  bytes = round_up(std::max<size_t>(bytes, 1), kPageBytes);
  auto pages = platform::map_pages(
      bytes, kind == MemoryKind::pinned,
      fmt::format("memory: {} MiB of {} memory for frames", bytes >> 20, to_string(kind)));
  if (!pages) return Unexpected(pages.error());
  return std::shared_ptr<Region>(new Region(spec, *pages, bytes));
}

Region::~Region() {
  if (spec_.kind == MemoryKind::cuda) return;  // device_memory_ frees it
  platform::unmap_pages(data_, size_, spec_.kind == MemoryKind::pinned);
}

Result<std::shared_ptr<const void>> Budget::reserve(uint64_t bytes, std::string_view what) {
  uint64_t used = used_.load();
  do {
    if (bytes > limit_ || used > limit_ - bytes) {
      return make_error(ErrorCode::resource,
                        "{} needs {}, beyond the receiver's memory budget of {} ({} in use; "
                        "its maximum memory setting changes it)",
                        what, format_bytes(bytes), format_bytes(limit_), format_bytes(used));
    }
  } while (!used_.compare_exchange_weak(used, used + bytes));
  // The owner gives the bytes back when the last holder lets go of it.
  return std::shared_ptr<const void>(
      nullptr, [self = shared_from_this(), bytes](const void*) { self->used_ -= bytes; });
}

std::string format_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return value == std::floor(value) ? fmt::format("{:.0f} {}", value, kUnits[unit])
                                    : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0 || end == text.data()) return std::nullopt;
  std::string suffix(end, text.data() + text.size());
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() >= 2 && suffix.substr(suffix.size() - 2) == "IB")
    suffix.resize(suffix.size() - 2);
  else if (!suffix.empty() && suffix.back() == 'B')
    suffix.pop_back();
  double scale = 1;
  if (suffix == "K")
    scale = 1024.0;
  else if (suffix == "M")
    scale = 1024.0 * 1024;
  else if (suffix == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    return std::nullopt;
  const double bytes = value * scale;
  if (bytes >= 18e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

uint64_t physical_memory_bytes() { return platform::physical_memory_bytes(); }

bool can_lock_beyond_limit() { return platform::can_lock_beyond_limit(); }

uint64_t default_budget(bool registered_for_rdma, std::string* why) {
  const uint64_t half = physical_memory_bytes() / 2;
  if (why) *why = "half of physical memory";
  if (!registered_for_rdma) return half;
  const auto lockable = platform::lockable_bytes();
  if (lockable && *lockable < half) {
    if (why) *why = fmt::format("the locked-memory limit, {}", platform::lock_limit_name());
    return *lockable;
  }
  return half;
}

}  // namespace rdmavideo::memory
