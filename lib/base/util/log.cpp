// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rdmavideo {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("rdmavideo");
    l->set_pattern("%^%l%$: %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *logger;
}

void set_log_level(spdlog::level::level_enum level) { log().set_level(level); }

}  // namespace rdmavideo
