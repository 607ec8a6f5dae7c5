// SPDX-License-Identifier: Apache-2.0
// The Tools menu's "rdmavideo Output" dialog: destinations, transport, key file, name,
// tracks, reconnect, "start with OBS", start/stop, and live counters per destination. Settings
// are saved into the profile's config on every change and take effect at the next start.
// Opened only inside OBS (the frontend's main window is its parent). Two views of one model
// (dialog_model.hpp): Qt 5 on Linux (dialog.cpp), Win32 controls on Windows (dialog_win32.cpp).
#pragma once

namespace rdmavideo::obs {

/// Shows the dialog (one, raised if already open).
void open_dialog();
/// Closes it (OBS is exiting).
void close_dialog();

}  // namespace rdmavideo::obs
