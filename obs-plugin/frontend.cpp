// SPDX-License-Identifier: Apache-2.0
#include "frontend.hpp"

#include <obs-frontend-api.h>
#include <util/config-file.h>

#include <fmt/format.h>

#include <string>

#include "dialog.hpp"
#include "output.hpp"
#include "profile.hpp"

namespace rdmavideo::obs {
namespace {

constexpr const char* kOutputName = "rdmavideo";
bool g_present = false;

void on_event(enum obs_frontend_event event, void*) {
  if (event == OBS_FRONTEND_EVENT_FINISHED_LOADING) {
    obs_data_t* settings = load_settings();
    set_main_output(obs_output_create(kOutputId, kOutputName, settings, nullptr));
    obs_data_release(settings);
    set_track_namer([](size_t mix) -> std::string {
      config_t* profile = obs_frontend_get_profile_config();
      if (!profile) return {};
      const std::string key = fmt::format("Track{}Name", mix + 1);
      const char* name = config_get_string(profile, "AdvOut", key.c_str());
      return name ? name : "";
    });
    if (main_output() && start_with_obs()) obs_output_start(main_output());
  } else if (event == OBS_FRONTEND_EVENT_EXIT) {
    close_dialog();
    if (obs_output_t* output = main_output()) {
      obs_output_stop(output);
      obs_output_release(output);
      set_main_output(nullptr);
    }
    set_track_namer({});
  }
}

}  // namespace

bool frontend_present() { return g_present; }

void frontend_load() {
  // Asked once: in a libobs host without the frontend, libobs logs a warning each time.
  g_present = obs_frontend_get_main_window() != nullptr;
  if (!g_present) return;  // a libobs host: the output type alone
  obs_frontend_add_event_callback(on_event, nullptr);
  // "&r" lets the keyboard reach it: Alt+T, R.
  obs_frontend_add_tools_menu_item(
      "&rdmavideo Output", [](void*) { open_dialog(); }, nullptr);
}

void frontend_unload() {
  if (!g_present) return;
  obs_frontend_remove_event_callback(on_event, nullptr);
}

}  // namespace rdmavideo::obs
