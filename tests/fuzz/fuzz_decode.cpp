// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the message decoder (fuzz/targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmavideo::fuzz::decode_one(data, size);
  return 0;
}
