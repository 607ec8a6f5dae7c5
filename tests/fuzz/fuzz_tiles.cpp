// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the compositor's tile placement (fuzz/targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmavideo::fuzz::place_tiles(data, size);
  return 0;
}
