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
  /// "-" is stdout; anything else is created or truncated.
  static Result<RawOutput> open(const std::string& path);
  RawOutput() = default;
  RawOutput(RawOutput&& other) noexcept
      : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), owned_(other.owned_) {}
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
};

}  // namespace rdmavideo::receiver
