// SPDX-License-Identifier: Apache-2.0
// A shared library opened at run time (the CUDA driver: libcuda.so.1 on Linux, nvcuda.dll on
// Windows), so that a build runs on machines without it and says what is missing.
#pragma once

#include <string>

#include "rdmavideo/result.hpp"

namespace rdmavideo::platform {

/// An open library; kept loaded until the process ends (the driver's threads may outlive
/// any owner of ours).
class Library {
 public:
  /// Opens `name`; the error says why the system could not.
  static Result<Library> open(const std::string& name);
  /// The address of `symbol`, or nullptr.
  void* symbol(const char* symbol) const;
  /// Where the library was found ("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), else its name.
  std::string path_of(const char* symbol) const;
  /// The default name of the CUDA driver's library on this platform.
  static const char* cuda_driver_name();

 private:
  explicit Library(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace rdmavideo::platform
