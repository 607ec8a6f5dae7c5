// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>

#include "rdmavideo/platform/library.hpp"

namespace rdmavideo::platform {

Result<Library> Library::open(const std::string& name) {
  // RTLD_NODELETE: never unloaded, as the header says.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* text = dlerror();
    return make_error(ErrorCode::unsupported, "{}", text ? text : name);
  }
  return Library(handle, name);
}

void* Library::symbol(const char* symbol) const { return dlsym(handle_, symbol); }

std::string Library::path_of(const char* symbol) const {
  Dl_info info{};
  if (void* at = dlsym(handle_, symbol); at && dladdr(at, &info) != 0 && info.dli_fname) {
    return info.dli_fname;
  }
  return name_;
}

const char* Library::cuda_driver_name() { return "libcuda.so.1"; }

}  // namespace rdmavideo::platform
