// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a received stream's time line, what rdmasrc's pads are given (fuzz/targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)rdmavideo::fuzz::place_stream(data, size);
  return 0;
}
