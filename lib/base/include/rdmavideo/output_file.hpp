// SPDX-License-Identifier: Apache-2.0
// OutputFile: where a receiver writes a stream (raw frames, or a recording's container),
// written so that a stop always reaches it.
//
// A regular file is created or truncated and written as usual; close() fsyncs it, so what was
// received is on disk when the receiver says so (a slow fsync is logged). Anything that can
// block for ever (a FIFO nobody opens or reads, a socket, a device, stdout into a pipe) is
// opened and written without blocking, and every wait is a poll() that also watches an abort
// descriptor: once that is readable (an eventfd the receiver signals when it stops), a wait
// gives up with an error that names the output, instead of holding the process. A FIFO with no
// reader yet is waited for (as ffmpeg writing into one does), but only until the abort.
//
// One thread uses an OutputFile; the abort descriptor is signalled from any thread and is not
// owned. "-" is stdout: shared with whoever started us, it is left as it was found.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "rdmavideo/result.hpp"

namespace rdmavideo::io {

class OutputFile {
 public:
  /// Opens `path` for writing ("-": stdout). `abort_fd` (or -1: never) ends every wait,
  /// including the wait for a FIFO's reader. Errors begin "PATH: ", or "SETTING PATH: " with
  /// `setting`, the front end's name for what the file is ("--output").
  static Result<OutputFile> open(const std::string& path, int abort_fd,
                                 const std::string& setting = {});

  OutputFile() = default;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // close()s; a failure there can only be logged

  /// Writes every byte, waiting for room in a pipe or socket until the abort.
  Result<void> write(std::span<const std::byte> bytes);
  /// Only a regular file seeks (a recording's header rewritten at the end).
  bool seekable() const { return regular_; }
  /// lseek(2); an error where the file does not seek.
  Result<int64_t> seek(int64_t offset, int whence);
  /// The file's size (regular files; else -1).
  int64_t size() const;
  /// Flushes (fsync for a regular file) and closes; reports what the destructor cannot.
  /// Idempotent.
  Result<void> close();

  const std::string& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  std::string path_;
  std::string label_;  // what errors begin with
  int fd_ = -1;
  bool owned_ = false;        // we opened fd_ and close it (stdout is not ours)
  bool regular_ = false;      // a regular file: seeks, fsyncs
  bool nonblocking_ = false;  // we set O_NONBLOCK on a descriptor that is not ours: undone at close
  int abort_fd_ = -1;         // readable: stop waiting
};

}  // namespace rdmavideo::io
