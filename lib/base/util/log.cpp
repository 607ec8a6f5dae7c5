// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rdmavideo {

spdlog::logger& log() {
  // Not in spdlog's registry: a process may hold two copies of the library (an application
  // linking it that loads the GStreamer plugin, which has its own), and a second logger of
  // the same name registered there is an exception.
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "rdmavideo", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("%^%l%$: %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *logger;
}

void set_log_level(spdlog::level::level_enum level) { log().set_level(level); }

}  // namespace rdmavideo
