// SPDX-License-Identifier: Apache-2.0
#include "raw_output.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "rdmavideo/log.hpp"

namespace rdmavideo::receiver {

Result<RawOutput> RawOutput::open(const std::string& path, int abort_fd) {
  RawOutput out;
  out.path_ = path;
  out.abort_fd_ = abort_fd;
  if (path == "-") {
    out.fd_ = STDOUT_FILENO;
  } else {
    out.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out.fd_ < 0) return Unexpected(system_error(fmt::format("--output {}: open", path), errno));
    out.owned_ = true;
  }
  // A pipe or socket can block for ever when nobody reads it: write it without blocking and
  // wait in poll(), where a stop can reach us. Files and terminals are written as they are.
  struct stat st {};
  if (abort_fd >= 0 && fstat(out.fd_, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
    const int flags = fcntl(out.fd_, F_GETFL);
    if (flags >= 0 && fcntl(out.fd_, F_SETFL, flags | O_NONBLOCK) == 0) out.nonblocking_ = true;
  }
  return out;
}

Result<void> RawOutput::write_all(const std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN && nonblocking_) {
        pollfd fds[2] = {{fd_, POLLOUT, 0}, {abort_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) {
          return Unexpected(system_error(fmt::format("--output {}: poll", path_), errno));
        }
        if (fds[1].revents & POLLIN) {
          return make_error(ErrorCode::resource,
                            "--output {}: stopped while the output was not being read", path_);
        }
        continue;
      }
      return Unexpected(system_error(fmt::format("--output {}: write", path_), errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

Result<void> RawOutput::write(const proto::StreamStart& format, std::span<const std::byte> frame) {
  auto canonical = canonical_layout(format.pixel_format, format.width, format.height);
  if (!canonical) return Unexpected(canonical.error());
  bool packed = canonical->frame_bytes == format.layout.frame_bytes;
  for (int p = 0; packed && p < canonical->plane_count; ++p) {
    packed = canonical->planes[p].offset == format.layout.planes[p].offset &&
             canonical->planes[p].stride == format.layout.planes[p].stride;
  }
  if (packed) return write_all(frame.data(), frame.size());
  for (int p = 0; p < format.layout.plane_count; ++p) {
    const Plane& plane = format.layout.planes[p];
    const uint32_t row_bytes = canonical->planes[p].stride;
    for (uint32_t row = 0; row < plane.rows; ++row) {
      const auto* src = frame.data() + plane.offset + size_t{row} * plane.stride;
      if (auto ok = write_all(src, row_bytes); !ok) return ok;
    }
  }
  return {};
}

RawOutput::~RawOutput() {
  if (auto ok = close(); !ok) {
    // The caller skipped close(): say what was lost rather than nothing.
    log().error("{}", ok.error().message());
  }
}

Result<void> RawOutput::close() {
  if (nonblocking_ && !owned_ && fd_ >= 0) {
    // stdout is shared with whoever started us: leave it as it was.
    const int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) (void)fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    nonblocking_ = false;
  }
  if (!owned_ || fd_ < 0) return {};
  const int fd = std::exchange(fd_, -1);
  if (fsync(fd) != 0 && errno != EINVAL) {
    const int err = errno;
    ::close(fd);
    return Unexpected(system_error(fmt::format("--output {}: fsync", path_), err));
  }
  if (::close(fd) != 0) return Unexpected(system_error(fmt::format("--output {}: close", path_), errno));
  return {};
}

}  // namespace rdmavideo::receiver
