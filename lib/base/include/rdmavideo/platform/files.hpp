// SPDX-License-Identifier: Apache-2.0
// Files that hold a secret (a shared key): only their owner may read them. On Linux that is
// the mode (no bits for group or others); on Windows, the file's ACL (no one but its owner,
// SYSTEM and Administrators may read it), or, where the file system keeps no ACL, a warning
// that says it cannot be checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/result.hpp"

namespace rdmavideo::platform {

/// Checks that `path` is a regular file only its owner may read and returns its size. Errors
/// begin with `what` ("key file PATH") and say how to make the file private.
Result<uint64_t> check_private_file(const std::filesystem::path& path, std::string_view what);
/// Reads the whole of a file of `size` bytes (as check_private_file said); an error where it
/// now holds another size.
Result<std::vector<std::byte>> read_private_file(const std::filesystem::path& path, uint64_t size,
                                                 std::string_view what);
/// Creates `path` (never over an existing file) so that only its owner may read it, writes
/// `bytes` and flushes them to disk; on a failure nothing is left behind.
Result<void> write_private_file(const std::filesystem::path& path, std::span<const std::byte> bytes,
                                std::string_view what);

}  // namespace rdmavideo::platform
