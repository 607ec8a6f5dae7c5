// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/output_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "rdmavideo/log.hpp"

namespace rdmavideo::io {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a writer without a FIFO reader tries again (open(2) has nothing to poll).
constexpr milliseconds kReaderPoll(50);
// A close that takes longer than this (fsync of a large recording on a slow disk) is logged.
constexpr milliseconds kSlowClose(1000);

bool aborted(int abort_fd) {
  if (abort_fd < 0) return false;
  pollfd fd{abort_fd, POLLIN, 0};
  return poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
}

// Waits up to `wait_ms` (-1: for ever) for room in `fd` (-1: none, only the time) or for the
// abort; true when aborted.
Result<bool> wait_for(int fd, int abort_fd, int wait_ms, const std::string& label) {
  pollfd fds[2];
  nfds_t n = 0;
  int abort_at = -1;
  if (fd >= 0) fds[n++] = {fd, POLLOUT, 0};
  if (abort_fd >= 0) {
    abort_at = static_cast<int>(n);
    fds[n++] = {abort_fd, POLLIN, 0};
  }
  if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
    return Unexpected(system_error(fmt::format("{}: poll", label), errno));
  }
  return abort_at >= 0 && (fds[abort_at].revents & POLLIN);
}

}  // namespace

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      label_(std::move(other.label_)),
      fd_(std::exchange(other.fd_, -1)),
      owned_(other.owned_),
      regular_(other.regular_),
      nonblocking_(std::exchange(other.nonblocking_, false)),
      abort_fd_(other.abort_fd_) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (auto ok = close(); !ok) log().error("{}", ok.error().message());
    path_ = std::move(other.path_);
    label_ = std::move(other.label_);
    fd_ = std::exchange(other.fd_, -1);
    owned_ = other.owned_;
    regular_ = other.regular_;
    nonblocking_ = std::exchange(other.nonblocking_, false);
    abort_fd_ = other.abort_fd_;
  }
  return *this;
}

OutputFile::~OutputFile() {
  // The caller skipped close(): say what was lost rather than nothing.
  if (auto ok = close(); !ok) log().error("{}", ok.error().message());
}

Result<OutputFile> OutputFile::open(const std::string& path, int abort_fd,
                                    const std::string& setting) {
  OutputFile out;
  out.path_ = path;
  out.label_ = setting.empty() ? path : setting + " " + path;
  out.abort_fd_ = abort_fd;
  struct stat st {};
  if (path == "-") {
    out.fd_ = STDOUT_FILENO;
    // A pipe or socket can block for ever when nobody reads it: write it without blocking.
    // A terminal is left alone (stderr may share its open file, and the log would lose lines).
    if (fstat(out.fd_, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
      const int flags = fcntl(out.fd_, F_GETFL);
      if (flags >= 0 && !(flags & O_NONBLOCK) && fcntl(out.fd_, F_SETFL, flags | O_NONBLOCK) == 0) {
        out.nonblocking_ = true;
      }
    }
    return out;
  }
  // O_NONBLOCK: opening a FIFO nobody reads fails with ENXIO instead of blocking, and writes
  // to a FIFO or device wait in poll(), where the abort reaches them. Regular files ignore it.
  bool said_waiting = false;
  for (;;) {
    out.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
    if (out.fd_ >= 0) break;
    if (errno == EINTR) continue;
    if (errno != ENXIO) return Unexpected(system_error(fmt::format("{}: open", out.label_), errno));
    if (!said_waiting) {
      log().info("[output {}] a FIFO with no reader: waiting for one to open it", path);
      said_waiting = true;
    }
    auto stop = wait_for(-1, abort_fd, static_cast<int>(kReaderPoll.count()), out.label_);
    if (!stop) return Unexpected(stop.error());
    if (*stop) {
      return make_error(ErrorCode::resource,
                        "{}: stopped while waiting for a reader to "
                        "open the FIFO",
                        out.label_);
    }
  }
  out.owned_ = true;
  out.regular_ = fstat(out.fd_, &st) == 0 && S_ISREG(st.st_mode);
  return out;
}

Result<void> OutputFile::write(std::span<const std::byte> bytes) {
  const std::byte* data = bytes.data();
  size_t size = bytes.size();
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        if (aborted(abort_fd_)) {
          return make_error(ErrorCode::resource, "{}: stopped while the output was not being read",
                            label_);
        }
        auto stop = wait_for(fd_, abort_fd_, -1, label_);
        if (!stop) return Unexpected(stop.error());
        if (*stop) {
          return make_error(ErrorCode::resource, "{}: stopped while the output was not being read",
                            label_);
        }
        continue;
      }
      if (errno == EPIPE) {
        return make_error(ErrorCode::peer_closed, "{}: the reader closed it", label_);
      }
      return Unexpected(system_error(fmt::format("{}: write", label_), errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

Result<int64_t> OutputFile::seek(int64_t offset, int whence) {
  if (!regular_) {
    return make_error(ErrorCode::unsupported, "{}: not a file, cannot seek", label_);
  }
  const off_t at = lseek(fd_, offset, whence);
  if (at < 0) return Unexpected(system_error(fmt::format("{}: lseek", label_), errno));
  return static_cast<int64_t>(at);
}

int64_t OutputFile::size() const {
  struct stat st {};
  if (!regular_ || fstat(fd_, &st) != 0) return -1;
  return st.st_size;
}

Result<void> OutputFile::close() {
  if (fd_ < 0) return {};
  const int fd = std::exchange(fd_, -1);
  if (!owned_) {
    // stdout is shared with whoever started us: leave it as it was.
    if (nonblocking_) {
      const int flags = fcntl(fd, F_GETFL);
      if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      nonblocking_ = false;
    }
    return {};
  }
  const auto began = Clock::now();
  if (regular_ && fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return Unexpected(system_error(fmt::format("{}: fsync", label_), err));
  }
  if (::close(fd) != 0) return Unexpected(system_error(fmt::format("{}: close", label_), errno));
  const auto took = Clock::now() - began;
  if (took >= kSlowClose) {
    log().warn("[output {}] flushing to disk took {:.1f} s", path_,
               std::chrono::duration<double>(took).count());
  }
  return {};
}

}  // namespace rdmavideo::io
