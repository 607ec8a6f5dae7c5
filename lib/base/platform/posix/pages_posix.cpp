// SPDX-License-Identifier: Apache-2.0
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/pages.hpp"

namespace rdmavideo::platform {

bool can_lock_beyond_limit() {
  constexpr int kCapIpcLock = 14;  // linux/capability.h
  std::ifstream status("/proc/self/status");
  bool effective = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      effective = (std::stoull(line.substr(7), nullptr, 16) >> kCapIpcLock) & 1;
      break;
    }
  }
  if (!effective) return false;
  std::ifstream uid_map("/proc/self/uid_map");
  uint64_t inside = 1, outside = 1, count = 0;
  uid_map >> inside >> outside >> count;
  return inside == 0 && outside == 0 && count == 4294967295ull;
}

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// A frame-sized region in 2 MiB pages where the kernel has them to give (transparent huge
// pages, asked for with MADV_HUGEPAGE: Debian's default is "madvise"): a 33 MB frame is 16
// pages to the TLB instead of 8,100, and every copy of it (into a socket, out of one, a
// memcpy) walks fewer page tables. The mapping is aligned to 2 MiB, asked for huge pages,
// then faulted in; where the kernel has none to give it stays in 4 KiB pages. nullptr when
// the mapping failed.
void* map_huge(size_t bytes) {
  const size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + span, used_end = aligned + bytes;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, bytes, MADV_HUGEPAGE);  // advice: where it is refused, 4 KiB pages as before
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return p;
#endif
  // Kernels before 5.14: fault every page in by touching it, as MAP_POPULATE would.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < bytes; at += page) static_cast<volatile char*>(p)[at] = 0;
  return p;
}

}  // namespace

Result<std::byte*> map_pages(size_t bytes, bool lock, std::string_view what) {
  void* p = bytes >= kHugePage ? map_huge(bytes) : nullptr;
  if (!p) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
             0);
  }
  if (p == MAP_FAILED) return Unexpected(system_error(fmt::format("{}: mmap", what), errno));
  if (lock && mlock(p, bytes) != 0) {
    const int err = errno;
    munmap(p, bytes);
    rlimit limit{};
    getrlimit(RLIMIT_MEMLOCK, &limit);
    const std::string cap = limit.rlim_cur == RLIM_INFINITY
                                ? std::string("unlimited")
                                : fmt::format("{} KiB", limit.rlim_cur >> 10);
    return Unexpected(
        system_error(fmt::format("{}: mlock ({} allows {})", what, lock_limit_name(), cap), err));
  }
  return static_cast<std::byte*>(p);
}

void unmap_pages(std::byte* at, size_t bytes, bool /*locked*/) noexcept {
  // munmap also unlocks pinned pages.
  if (munmap(at, bytes) != 0) {
    const int err = errno;
    try {
      log().warn("memory: munmap of {} bytes at {} failed: {}", bytes, static_cast<void*>(at),
                 std::strerror(err));
    } catch (...) {
    }
  }
}

size_t page_bytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::optional<uint64_t> lockable_bytes() {
  if (can_lock_beyond_limit()) return std::nullopt;
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

std::string_view lock_limit_name() { return "ulimit -l"; }

}  // namespace rdmavideo::platform
