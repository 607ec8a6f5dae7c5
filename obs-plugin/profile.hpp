// SPDX-License-Identifier: Apache-2.0
// The `rdmavideo` output OBS runs, and what the profile keeps for it: its settings (saved in
// the profile's config and given to the running output) and "start with OBS". The frontend
// (frontend.hpp) makes the output; the dialog (dialog.hpp) reads and changes the rest.
#pragma once

#include <obs.h>

namespace rdmavideo::obs {

/// The `rdmavideo` output, once OBS has loaded (else null). Not a new reference.
obs_output_t* main_output();
/// The output's settings as kept in the profile (a new reference), and saving them.
obs_data_t* load_settings();
void save_settings(obs_data_t* settings);
/// "start with OBS".
bool start_with_obs();
void set_start_with_obs(bool on);
/// Set by the frontend once OBS has loaded, and back to null as it exits.
void set_main_output(obs_output_t* output);

}  // namespace rdmavideo::obs
