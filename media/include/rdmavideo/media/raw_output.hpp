// SPDX-License-Identifier: Apache-2.0
// Writes received frames as raw video, in the canonical layout FFmpeg's rawvideo demuxer
// reads (-f rawvideo -pix_fmt ... -s WxH), to a file or stdout. A frame whose layout has
// padded rows is repacked row by row; a canonical frame goes out in one write.
#pragma once

#include <span>
#include <string>

#include <vector>

#include "rdmavideo/output_file.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::media {

class RawOutput {
 public:
  /// "-" is stdout; anything else is created or truncated. A FIFO nobody has opened yet is
  /// waited for, and writes to a pipe, socket or device wait for room, in both cases only
  /// until `abort_fd` (an eventfd, or -1) is readable (rdmavideo/output_file.hpp).
  /// `setting` is the front end's name for it, which errors begin with (OutputFile).
  static Result<RawOutput> open(const std::string& path, int abort_fd = -1,
                                const std::string& setting = {});

  Result<void> write(const proto::StreamStart& format, std::span<const std::byte> frame);
  /// Flushes to the file (fsync for files) and closes; reports what the destructor cannot.
  Result<void> close() { return file_.close(); }
  const std::string& path() const { return file_.path(); }

 private:
  explicit RawOutput(io::OutputFile file) : file_(std::move(file)) {}
  io::OutputFile file_;
  std::vector<std::byte> packed_;  // a frame with padded rows, laid out packed
};

}  // namespace rdmavideo::media
