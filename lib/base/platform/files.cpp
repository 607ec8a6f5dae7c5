// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/platform/files.hpp"
#include "platform/files_detail.hpp"
#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::platform {

Result<std::vector<std::byte>> read_private_file(const std::filesystem::path& path, uint64_t size,
                                                 std::string_view what) {
  // One byte more than expected shows a file that grew.
  std::vector<std::byte> bytes(static_cast<size_t>(size) + 1);
  auto got = read_file_into(path, bytes, what);
  if (!got || *got != size) {
    crypto::wipe(bytes);
    if (!got) return Unexpected(got.error());
    return make_error(ErrorCode::invalid_argument, "{} changed while it was read", what);
  }
  bytes.resize(*got);
  return bytes;
}

}  // namespace rdmavideo::platform
