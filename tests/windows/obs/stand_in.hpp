// SPDX-License-Identifier: Apache-2.0
// The host's side of the stand-in obs.dll and obs-frontend-api.dll (stand_in_obs.cpp,
// stand_in_frontend.cpp): what OBS would set up, and what a test reads back.
#pragma once

#include <obs-frontend-api.h>
#include <obs.h>
#include <util/config-file.h>

extern "C" {

/// The canvas and the audio OBS would have: what the plugin's output is fed.
void stand_in_set_canvas(const video_output_info* video, const audio_output_info* audio);
/// The profile's config, and how many times it was saved.
config_t* stand_in_profile();
int stand_in_profile_saves();
/// What the output signalled when it stopped itself (-1: nothing), whether its data capture
/// runs, and the frames fed to it so far.
int stand_in_stop_code(obs_output_t* output);
bool stand_in_capturing(obs_output_t* output);
uint64_t stand_in_frames_fed(obs_output_t* output);
/// The output obs_output_create made last (the plugin makes its own inside OBS).
obs_output_t* stand_in_last_output();
/// Calls a procedure the output added to its proc handler; false where there is none.
bool stand_in_call_proc(obs_output_t* output, const char* name, calldata_t* data);

/// The frontend: present (a main window, the Tools menu, events) or not, as in a libobs host.
void stand_in_frontend_present(bool present, void* main_window_handle);
/// Sends a frontend event to the plugin's callbacks.
void stand_in_frontend_event(obs_frontend_event event);
/// The Tools menu items the plugin added, and choosing one.
int stand_in_tools_items();
const char* stand_in_tools_item_name(int index);
void stand_in_tools_item_click(int index);
}
