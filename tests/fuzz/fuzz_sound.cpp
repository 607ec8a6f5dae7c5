// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a stream's sound through the canvas's, the display's and a recording's
// placement (fuzz/targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)rdmavideo::fuzz::place_sound(data, size);
  return 0;
}
