// SPDX-License-Identifier: Apache-2.0
// The OBS module: registers `rdmavideo_output` in any libobs host. Inside OBS (the frontend
// is there), once OBS has loaded it also creates one output of that type named `rdmavideo`,
// with its settings kept in the profile's config, so obs-websocket's SetOutputSettings,
// StartOutput, GetOutputStatus and StopOutput work on it, starts it when "start with OBS"
// is set, and names the audio streams after OBS's tracks. Without the frontend (a libobs
// host with no Qt application), none of that runs: the output type alone is registered.
#include <obs-frontend-api.h>
#include <obs-module.h>
#include <util/config-file.h>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

#include "frontend.hpp"
#include "output.hpp"
#include "rdmavideo/log.hpp"

OBS_DECLARE_MODULE()

namespace {

// The library's log lines into OBS's log (Help > Log Files), where an OBS user looks: OBS for
// Windows has no console to read stderr in.
class ObsLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    int level = LOG_INFO;
    if (msg.level >= spdlog::level::err) {
      level = LOG_ERROR;
    } else if (msg.level == spdlog::level::warn) {
      level = LOG_WARNING;
    } else if (msg.level <= spdlog::level::debug) {
      level = LOG_DEBUG;
    }
    const std::string text(msg.payload.data(), msg.payload.size());
    blog(level, "[rdmavideo] %s", text.c_str());
  }
  void flush_() override {}
};

}  // namespace

MODULE_EXPORT const char* obs_module_description(void) {
  return "rdmavideo: OBS's program picture and audio tracks, uncompressed, to rdmavideo receivers "
         "over RDMA or TCP";
}
MODULE_EXPORT const char* obs_module_name(void) { return "rdmavideo"; }

bool obs_module_load(void) {
  rdmavideo::log().sinks() = {std::make_shared<ObsLogSink>()};
  rdmavideo::obs::register_output();
  rdmavideo::obs::frontend_load();
  blog(LOG_INFO, "[rdmavideo] output %s registered", rdmavideo::obs::kOutputId);
  return true;
}

void obs_module_unload(void) {
  rdmavideo::obs::frontend_unload();
  rdmavideo::obs::wait_for_released_outputs();
}
