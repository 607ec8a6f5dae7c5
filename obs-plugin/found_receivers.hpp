// SPDX-License-Identifier: Apache-2.0
// The dialog's "On the network" drop-down, apart from how it is drawn (Qt on Linux, Win32 on
// Windows): the receivers a DNS-SD browse found, as rows, and what choosing one does.
#pragma once

#include <string>
#include <vector>

#include "rdmavideo/discovery.hpp"

namespace rdmavideo::obs {

/// A row of the Receivers drop-down: the receivers DNS-SD finds on the network. `entry` is what
/// choosing it puts in the Receivers field (the receiver's name, which the output finds again
/// at each connect); a row with no entry only says something (none found, and why).
struct FoundReceiver {
  std::string label;
  std::string entry;
};
/// The drop-down's rows from a browse's result: a row per receiver, by name, with its address,
/// its streams free and whether it needs a key (and which); or one row saying why none.
std::vector<FoundReceiver> found_receivers(const Result<std::vector<discovery::Service>>& browsed);
/// Browses for receivers now (about a second): through the system's DNS-SD (Avahi on Linux),
/// or, where RDMAVIDEO_OBS_BROWSE_STAND_IN names a file, the receivers it lists in
/// `rdmavideo-doctor --discover --json`'s form (the tests' stand-in for a network).
Result<std::vector<discovery::Service>> browse_receivers();
/// The Receivers field with `entry` added: once, at the end, comma-separated.
std::string with_receiver(const std::string& destinations, const std::string& entry);

}  // namespace rdmavideo::obs
