// SPDX-License-Identifier: Apache-2.0
// Writes received frames as raw video, in the canonical layout FFmpeg's rawvideo demuxer
// reads (-f rawvideo -pix_fmt ... -s WxH), to a file or stdout. A frame whose layout has
// padded rows is repacked row by row; a canonical frame goes out in one write.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::receiver {

class RawOutput {
 public:
  /// "-" is stdout; anything else is created or truncated. Writes to a pipe or socket wait
  /// for room, and give up (`resource`) once `abort_fd` (an eventfd, or -1) is readable.
  static Result<RawOutput> open(const std::string& path, int abort_fd = -1);
  RawOutput() = default;
  RawOutput(RawOutput&& other) noexcept
      : path_(std::move(other.path_)),
        fd_(std::exchange(other.fd_, -1)),
        owned_(other.owned_),
        abort_fd_(other.abort_fd_),
        nonblocking_(other.nonblocking_) {}
  RawOutput& operator=(RawOutput&&) = delete;
  ~RawOutput();

  Result<void> write(const proto::StreamStart& format, std::span<const std::byte> frame);
  /// Flushes to the file (fsync for files) and closes; reports what the destructor cannot.
  Result<void> close();
  const std::string& path() const { return path_; }

 private:
  Result<void> write_all(const std::byte* data, size_t size);

  std::string path_;
  int fd_ = -1;
  bool owned_ = false;  // we opened fd_ and must close it
  int abort_fd_ = -1;   // readable: stop waiting for the reader
  bool nonblocking_ = false;  // fd_ is a pipe or socket we made non-blocking
};

}  // namespace rdmavideo::receiver
