// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace rdmavideo {

/// rdmavideo's version, as the build was given it ("0.5.0").
std::string_view version();

}  // namespace rdmavideo
