// SPDX-License-Identifier: Apache-2.0
#include "profile.hpp"

#include <obs-frontend-api.h>
#include <util/config-file.h>

namespace rdmavideo::obs {
namespace {

constexpr const char* kSection = "rdmavideo";
obs_output_t* g_output = nullptr;

}  // namespace

void set_main_output(obs_output_t* output) { g_output = output; }

obs_output_t* main_output() { return g_output; }

obs_data_t* load_settings() {
  config_t* profile = obs_frontend_get_profile_config();
  const char* json = profile ? config_get_string(profile, kSection, "Settings") : nullptr;
  obs_data_t* settings = json && *json ? obs_data_create_from_json(json) : nullptr;
  return settings ? settings : obs_data_create();
}

void save_settings(obs_data_t* settings) {
  config_t* profile = obs_frontend_get_profile_config();
  if (!profile) return;
  config_set_string(profile, kSection, "Settings", obs_data_get_json(settings));
  config_save_safe(profile, "tmp", nullptr);
  if (g_output) obs_output_update(g_output, settings);
}

bool start_with_obs() {
  config_t* profile = obs_frontend_get_profile_config();
  return profile && config_get_bool(profile, kSection, "StartWithObs");
}

void set_start_with_obs(bool on) {
  config_t* profile = obs_frontend_get_profile_config();
  if (!profile) return;
  config_set_bool(profile, kSection, "StartWithObs", on);
  config_save_safe(profile, "tmp", nullptr);
}

}  // namespace rdmavideo::obs
