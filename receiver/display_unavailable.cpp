// SPDX-License-Identifier: Apache-2.0
// Display for builds without SDL2: --display is refused with a clear message.
#include "display.hpp"

namespace rdmavideo::recv_cli {

bool Display::available() { return false; }

Result<std::unique_ptr<Display>> Display::open(std::function<void()>, int64_t) {
  return make_error(ErrorCode::unsupported,
                    "--display: this build has no SDL2 (install libsdl2-dev and reconfigure)");
}

}  // namespace rdmavideo::recv_cli
