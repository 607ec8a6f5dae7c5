// SPDX-License-Identifier: Apache-2.0
// Memory for frames straight from the operating system, in whole pages: committed and zeroed
// up front (so a frame never waits for a page fault), and locked in RAM where asked (pinned:
// what RDMA registration and CUDA's host registration want). mmap and mlock on Linux,
// VirtualAlloc and VirtualLock (with the working set raised to hold it) on Windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo::platform {

/// `bytes` (a multiple of 4 KiB) of zeroed memory, locked with `lock`. Errors begin with `what`.
Result<std::byte*> map_pages(size_t bytes, bool lock, std::string_view what);
/// Gives back what map_pages() gave, with the same `bytes` and `lock` (and unlocks it).
void unmap_pages(std::byte* at, size_t bytes, bool locked) noexcept;
/// The system's page size in bytes.
size_t page_bytes();
/// The machine's physical memory; 0 where it cannot be told.
uint64_t physical_memory_bytes();
/// How much this process may lock, where the system caps it (Linux's RLIMIT_MEMLOCK, unless the
/// process may lock beyond it); nullopt where it does not.
std::optional<uint64_t> lockable_bytes();
/// Whether the system lets this process lock beyond its cap (Linux: CAP_IPC_LOCK in the
/// effective set, held in the initial user namespace, as the kernel's capable() asks).
bool can_lock_beyond_limit();
/// The cap's name, as a user raises it ("ulimit -l").
std::string_view lock_limit_name();

}  // namespace rdmavideo::platform
