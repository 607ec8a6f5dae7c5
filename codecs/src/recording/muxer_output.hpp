// SPDX-License-Identifier: Apache-2.0
// The file a muxer writes through: an io::OutputFile (a FIFO or pipe waited on only until the
// abort eventfd; a regular file fsynced at close) under an AVIOContext with a buffer.
// The recorder's files and the receiver's .wav files are written so.
#pragma once

#include <optional>
#include <string>

#include "av_util.hpp"
#include "rdmavideo/output_file.hpp"

namespace rdmavideo::av {

class MuxerOutput {
 public:
  MuxerOutput() = default;
  MuxerOutput(const MuxerOutput&) = delete;
  MuxerOutput& operator=(const MuxerOutput&) = delete;

  /// Opens `path` and makes `output` write through it, a write(2) per `buffer_bytes`: what
  /// a receiver killed outright loses at most.
  Result<void> open(const std::string& path, int abort_fd, AVFormatContext* output,
                    const std::string& who, int buffer_bytes = 1 << 20,
                    const std::string& setting = {});
  /// FFmpeg's error for a failed write, or the file's own where it said more (the stop that
  /// ended a wait for a reader, the disk that is full).
  Error error_or(const Error& fallback) const { return io_error_ ? *io_error_ : fallback; }
  /// Flushes what is buffered and closes the file (fsync: on disk once this returns); the
  /// first thing that went wrong. Nothing to do when it was never opened.
  std::optional<Error> close(const std::string& who);

 private:
  static int write_packet(void* opaque, const uint8_t* buf, int size);
  static int64_t seek(void* opaque, int64_t offset, int whence);

  // Destroyed backwards: the AVIOContext before the file under it.
  io::OutputFile file_;
  UniqueIoContext io_;
  std::optional<Error> io_error_;  // the file's own words for the last failed write or seek
};

}  // namespace rdmavideo::av
