// SPDX-License-Identifier: Apache-2.0
// Service instance names as DNS writes them, read back: shared by the ways of browsing that
// hand over a full name (unicast DNS, Windows' DNS-SD API).
#pragma once

#include <string>
#include <string_view>

namespace rdmavideo::discovery {

/// The instance's name as people read it, from its full name as DNS writes it
/// ("studio\032recorder._rdmavideo._tcp.local" -> "studio recorder"): the first label, its
/// escapes (\. \\ \DDD) undone.
std::string instance_label(std::string_view full);

}  // namespace rdmavideo::discovery
