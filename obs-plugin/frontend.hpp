// SPDX-License-Identifier: Apache-2.0
// What the plugin does when it runs inside OBS (the frontend API answers): the `rdmavideo`
// output, its settings in the profile's config, "start with OBS", the track names, and the
// Tools menu entry with its dialog. Nothing here runs in a libobs host without the frontend.
#pragma once

#include <obs.h>

namespace rdmavideo::obs {

/// Whether OBS's frontend is there (its main window exists).
bool frontend_present();
void frontend_load();
void frontend_unload();

/// The `rdmavideo` output, once OBS has loaded (else null). Not a new reference.
obs_output_t* main_output();
/// The output's settings as kept in the profile (a new reference), and saving them.
obs_data_t* load_settings();
void save_settings(obs_data_t* settings);
/// "start with OBS".
bool start_with_obs();
void set_start_with_obs(bool on);

}  // namespace rdmavideo::obs
