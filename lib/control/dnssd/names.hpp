// SPDX-License-Identifier: Apache-2.0
// Service instance names as DNS writes them, read back, and the error of a name nobody
// answers for: shared by the ways of browsing and finding (Avahi, unicast DNS, Windows'
// DNS-SD API).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo::discovery {

/// The instance's name as people read it, from its full name as DNS writes it
/// ("studio\032recorder._rdmavideo._tcp.local" -> "studio recorder"): the first label, its
/// escapes (\. \\ \DDD) undone.
std::string instance_label(std::string_view full);

/// find()'s error where nothing answered for `name` of `type` within `wait` ("no receiver
/// called "studio" answered within 5000 ms (DNS-SD, _rdmavideo._tcp)").
Error nobody_answered(std::string_view name, std::string_view type, std::chrono::milliseconds wait);

}  // namespace rdmavideo::discovery
