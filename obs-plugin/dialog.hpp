// SPDX-License-Identifier: Apache-2.0
// The Tools menu's "rdmavideo Output" dialog (Qt 5, as Debian's OBS is built): destinations,
// transport, key file, name, tracks, reconnect, "start with OBS", start/stop, and live
// counters per destination. Settings are saved into the profile's config on every change and
// take effect at the next start. Opened only inside OBS (the frontend's main window is its
// parent).
#pragma once

namespace rdmavideo::obs {

/// Shows the dialog (one, raised if already open).
void open_dialog();
/// Closes it (OBS is exiting).
void close_dialog();

}  // namespace rdmavideo::obs
