// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/version.hpp"

namespace rdmavideo {

std::string_view version() { return RDMAVIDEO_VERSION; }

}  // namespace rdmavideo
