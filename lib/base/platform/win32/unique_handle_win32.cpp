// SPDX-License-Identifier: Apache-2.0
#include <io.h>

#include <cerrno>
#include <cstring>

#include "rdmavideo/log.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo {

void close_fd(int fd) noexcept {
  if (::_close(fd) != 0) {
    const int err = errno;
    try {
      log().warn("close(fd {}) failed: {}", fd, std::strerror(err));
    } catch (...) {
    }
  }
}

}  // namespace rdmavideo
