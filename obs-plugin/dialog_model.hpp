// SPDX-License-Identifier: Apache-2.0
// What the Tools menu's dialog shows and changes, apart from how it is drawn (Qt 5 on Linux,
// as Debian's OBS is built; Win32 controls on Windows, where OBS's Qt is MSVC's and a MinGW
// plugin cannot use it): the settings as fields, read from and saved to the profile, and the
// running output's status in words. Both views are thin over this.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "found_receivers.hpp"

namespace rdmavideo::obs {

struct DialogFields {
  std::string destinations, transport, key_file, name;
  std::array<bool, 6> tracks{};
  bool reconnect = false;
  bool start_with_obs = false;
};

/// The transports the dialog offers, as (label, setting) in order; verbs only where this build
/// has it.
std::vector<std::pair<std::string, std::string>> transport_choices();

/// The settings the running output has (with its defaults), else the profile's.
DialogFields load_fields();
/// Saves them into the profile and hands them to the output (they take effect at its next
/// start); "start with OBS" goes into the profile alone.
void save_fields(const DialogFields& fields);

/// The output's state for the dialog: whether it runs, a status text, and a row of cells per
/// destination (receiver, transport, state, frames, drops, GB/s).
struct DialogStatus {
  bool active = false;
  std::string text;
  std::vector<std::array<std::string, 6>> rows;
};
DialogStatus dialog_status();

/// Starts the output, or stops it when it runs; an empty string, or why it did not start.
std::string toggle_output();

}  // namespace rdmavideo::obs
