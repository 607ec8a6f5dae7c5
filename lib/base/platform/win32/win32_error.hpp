// SPDX-License-Identifier: Apache-2.0
// Windows's own words for a GetLastError() code, for the win32 implementations' messages.
#pragma once

#include <windows.h>

#include <string>

namespace rdmavideo::platform::win32 {

/// FormatMessage's text for `code`, without its trailing period and line break.
std::string error_text(DWORD code);

}  // namespace rdmavideo::platform::win32
