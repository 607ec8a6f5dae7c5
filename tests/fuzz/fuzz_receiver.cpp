// SPDX-License-Identifier: Apache-2.0
// libFuzzer: one receiver connection driven by a byte stream (fuzz/targets.hpp).
#include "rdmavideo/log.hpp"
#include "targets.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rdmavideo::log().set_level(spdlog::level::off);  // a refusal per input is no news
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmavideo::fuzz::receive_stream(data, size);
  return 0;
}
