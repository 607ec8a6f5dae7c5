// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/checksum.hpp"

#include <xxhash.h>

namespace rdmavideo {

uint64_t frame_checksum(std::span<const std::byte> data) {
  return XXH3_64bits(data.data(), data.size());
}

}  // namespace rdmavideo
