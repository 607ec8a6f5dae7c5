// SPDX-License-Identifier: Apache-2.0
// What Windows' DNS-SD API (windns.h's DnsService* functions) hands back, read into the
// project's own types: apart from the calls, so that the reading is tested where the calls
// cannot run (wine has none of them).
#pragma once

#ifdef _WIN32

// clang-format off
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <windns.h>
// clang-format on

#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/discovery.hpp"

namespace rdmavideo::discovery::windows {

std::string utf8(const wchar_t* text);
std::wstring wide(std::string_view text);

/// The instances of `type` a browse's answer names: its PTR records for
/// "<type>.local", their targets ("studio recorder._rdmavideo._tcp.local"), each once.
std::vector<std::string> instances_in(const DNS_RECORDW* records, std::string_view type);

/// A resolved instance: its name as people read it, host, address (IPv4 first), port, TXT.
Service service_of(const DNS_SERVICE_INSTANCE& instance, std::string_view type);

}  // namespace rdmavideo::discovery::windows

#endif
