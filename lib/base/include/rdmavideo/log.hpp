// SPDX-License-Identifier: Apache-2.0
// The project logger: spdlog, to stderr, shared by the library and the executables.
#pragma once

#include <spdlog/spdlog.h>

namespace rdmavideo {

/// The one logger everything writes through ("rdmavideo"), created on first use.
spdlog::logger& log();
/// Sets the level from a name (trace, debug, info, warn, error, off).
void set_log_level(spdlog::level::level_enum level);

}  // namespace rdmavideo
