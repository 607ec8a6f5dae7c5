// SPDX-License-Identifier: Apache-2.0
// Result<T> and Error: how every call that can fail in normal operation reports it.
//
// An Error carries a code (what kind of failure, for callers that branch on it), a message
// written for a person (who, what, the value seen against what was allowed, the cause), and
// for system errors the errno value. Callers add context with Error::context() and log an
// error once, where it is finally handled.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace rdmavideo {

enum class ErrorCode {
  protocol,          ///< the peer sent something the protocol does not allow
  peer_closed,       ///< the peer closed the connection
  timeout,           ///< nothing arrived in time
  resource,          ///< out of memory, slots, descriptors
  unsupported,       ///< a format, version or feature we do not handle
  invalid_argument,  ///< a caller or user gave a value out of range
  system,            ///< a system call failed; errno is kept
  auth_failed,       ///< the peer did not prove the shared key (or offered none)
};

std::string_view to_string(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), message_(std::move(message)), errno_(sys_errno) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int sys_errno() const { return errno_; }

  /// Returns this error with "prefix: " put before its message.
  Error context(std::string_view prefix) const& {
    return Error(code_, fmt::format("{}: {}", prefix, message_), errno_);
  }
  Error context(std::string_view prefix) && {
    message_ = fmt::format("{}: {}", prefix, message_);
    return std::move(*this);
  }

 private:
  ErrorCode code_;
  std::string message_;
  int errno_;
};

template <typename T>
using Result = tl::expected<T, Error>;

using Unexpected = tl::unexpected<Error>;

template <typename... Args>
Unexpected make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Unexpected(Error(code, fmt::format(format, std::forward<Args>(args)...)));
}

/// An Error for a failed system call: "<what>: <strerror(err)>", keeping err.
Error system_error(std::string_view what, int err);

}  // namespace rdmavideo
