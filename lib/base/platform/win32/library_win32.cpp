// SPDX-License-Identifier: Apache-2.0
#include <windows.h>

#include <filesystem>

#include "platform/win32/win32_error.hpp"
#include "rdmavideo/platform/library.hpp"

namespace rdmavideo::platform {

Result<Library> Library::open(const std::string& name) {
  // Only the system's search path, never the current folder.
  HMODULE handle = LoadLibraryExA(name.c_str(), nullptr, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
  if (!handle) {
    return make_error(ErrorCode::unsupported, "{}: {}", name, win32::error_text(GetLastError()));
  }
  return Library(handle, name);
}

void* Library::symbol(const char* symbol) const {
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(handle_), symbol));
}

std::string Library::path_of(const char*) const {
  wchar_t path[MAX_PATH];
  const DWORD n = GetModuleFileNameW(static_cast<HMODULE>(handle_), path, MAX_PATH);
  return n ? std::filesystem::path(std::wstring(path, n)).string() : name_;
}

const char* Library::cuda_driver_name() { return "nvcuda.dll"; }

}  // namespace rdmavideo::platform
