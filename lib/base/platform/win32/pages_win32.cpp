// SPDX-License-Identifier: Apache-2.0
// VirtualLock locks no more than the process's minimum working set, so a locked region first
// raises the working set's bounds by its size (and they come down again when it goes).
#include <windows.h>

#include <mutex>

#include "platform/win32/win32_error.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/pages.hpp"

namespace rdmavideo::platform {
namespace {

std::mutex working_set_mutex;

// Moves both bounds of the working set by `delta` bytes.
bool grow_working_set(SIZE_T delta, bool grow) {
  const std::lock_guard lock(working_set_mutex);
  SIZE_T minimum = 0, maximum = 0;
  DWORD flags = 0;
  HANDLE self = GetCurrentProcess();
  if (!GetProcessWorkingSetSizeEx(self, &minimum, &maximum, &flags)) return false;
  if (grow) {
    minimum += delta;
    maximum += delta;
  } else {
    minimum = minimum > delta ? minimum - delta : minimum;
    maximum = maximum > delta ? maximum - delta : maximum;
  }
  return SetProcessWorkingSetSizeEx(self, minimum, maximum, flags) != 0;
}

}  // namespace

Result<std::byte*> map_pages(size_t bytes, bool lock, std::string_view what) {
  void* p = VirtualAlloc(nullptr, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
  if (!p) {
    return make_error(ErrorCode::resource, "{}: VirtualAlloc: {}", what,
                      win32::error_text(GetLastError()));
  }
  if (lock) {
    const bool grown = grow_working_set(bytes, true);
    if (!grown || !VirtualLock(p, bytes)) {
      const DWORD err = GetLastError();
      VirtualFree(p, 0, MEM_RELEASE);
      if (grown) grow_working_set(bytes, false);
      return make_error(ErrorCode::resource, "{}: VirtualLock: {}", what, win32::error_text(err));
    }
  } else {
    // Touch every page now, as MAP_POPULATE does on Linux.
    volatile auto* bytes_at = static_cast<volatile std::byte*>(p);
    for (size_t i = 0; i < bytes; i += 4096) bytes_at[i] = std::byte{0};
  }
  return static_cast<std::byte*>(p);
}

void unmap_pages(std::byte* at, size_t bytes, bool locked) noexcept {
  // VirtualFree releases locked pages too; the working set then gives their room back.
  if (locked) VirtualUnlock(at, bytes);
  const bool freed = VirtualFree(at, 0, MEM_RELEASE) != 0;
  if (locked) grow_working_set(bytes, false);
  if (!freed) {
    try {
      log().warn("memory: VirtualFree of {} bytes at {} failed: {}", bytes, static_cast<void*>(at),
                 win32::error_text(GetLastError()));
    } catch (...) {
    }
  }
}

size_t page_bytes() {
  SYSTEM_INFO info{};
  GetSystemInfo(&info);
  return info.dwPageSize;
}

uint64_t physical_memory_bytes() {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? status.ullTotalPhys : 0;
}

std::optional<uint64_t> lockable_bytes() { return std::nullopt; }

bool can_lock_beyond_limit() { return false; }

std::string_view lock_limit_name() { return "the process's working set"; }

}  // namespace rdmavideo::platform
