// SPDX-License-Identifier: Apache-2.0
// What each platform implements for files.cpp (the checks and the wiping are written once).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo::platform {

/// Reads `path` from its start into `into` until it is full or the file ends: the bytes read.
/// Errors begin with `what`.
Result<size_t> read_file_into(const std::filesystem::path& path, std::span<std::byte> into,
                              std::string_view what);

}  // namespace rdmavideo::platform
