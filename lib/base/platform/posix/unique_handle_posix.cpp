// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/unique_handle.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rdmavideo/log.hpp"

namespace rdmavideo {

void close_fd(int fd) noexcept {
  // Linux releases the descriptor even when close reports an error, so never retry.
  if (::close(fd) != 0) {
    const int err = errno;
    try {
      log().warn("close(fd {}) failed: {}", fd, std::strerror(err));
    } catch (...) {
    }
  }
}

}  // namespace rdmavideo
