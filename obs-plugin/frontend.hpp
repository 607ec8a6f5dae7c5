// SPDX-License-Identifier: Apache-2.0
// What the plugin does when it runs inside OBS (the frontend API answers): it makes the
// `rdmavideo` output once OBS has loaded (profile.hpp keeps it and its settings), names the
// tracks, and adds the Tools menu entry that opens the dialog. Nothing here runs in a libobs
// host without the frontend.
#pragma once

#include <obs.h>

namespace rdmavideo::obs {

/// Whether OBS's frontend is there (its main window exists).
bool frontend_present();
void frontend_load();
void frontend_unload();

}  // namespace rdmavideo::obs
