// SPDX-License-Identifier: Apache-2.0
#include "platform/win32/win32_error.hpp"

#include <fmt/format.h>

namespace rdmavideo::platform::win32 {

std::string error_text(DWORD code) {
  char* text = nullptr;
  const DWORD n = FormatMessageA(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
  std::string out = n ? std::string(text, n) : fmt::format("error {}", code);
  if (text) LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.')) {
    out.pop_back();
  }
  return out;
}

}  // namespace rdmavideo::platform::win32
