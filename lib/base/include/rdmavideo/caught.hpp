// SPDX-License-Identifier: Apache-2.0
// The library's errors are values (Result); exceptions come only from what it is built on
// (the C++ library's allocation, the platform's crypto library). Where one reaches the top of
// a thread of the library's own or a function another program calls, it becomes an Error
// there, naming what was being done, instead of ending the process.
#pragma once

#include <exception>
#include <string_view>

#include "rdmavideo/result.hpp"

namespace rdmavideo {

/// The error for exception `caught` (std::current_exception()) thrown while doing `what`:
/// "<what>: <its text>", code resource for an allocation that failed, system otherwise.
Error error_of(const std::exception_ptr& caught, std::string_view what);

}  // namespace rdmavideo
