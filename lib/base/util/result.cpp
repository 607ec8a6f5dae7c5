// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/result.hpp"

#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>

#include "rdmavideo/caught.hpp"

namespace rdmavideo {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::protocol: return "protocol";
    case ErrorCode::peer_closed: return "peer_closed";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::resource: return "resource";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::system: return "system";
    case ErrorCode::auth_failed: return "auth_failed";
  }
  return "unknown";
}

Error system_error(std::string_view what, int err) {
  // The C library's text for errno (strerror_r on Linux), thread-safe on every platform.
  return Error(ErrorCode::system, fmt::format("{}: {}", what, std::generic_category().message(err)),
               err);
}

Error error_of(const std::exception_ptr& caught, std::string_view what) {
  try {
    std::rethrow_exception(caught);
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::resource, fmt::format("{}: out of memory", what));
  } catch (const std::exception& e) {
    return Error(ErrorCode::system, fmt::format("{}: {}", what, e.what()));
  } catch (...) {
    return Error(ErrorCode::system, fmt::format("{}: an exception of an unknown type", what));
  }
}

}  // namespace rdmavideo
