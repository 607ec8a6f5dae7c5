// SPDX-License-Identifier: Apache-2.0
#include "muxer_output.hpp"

#include <span>

namespace rdmavideo::av {
namespace {

// avio_alloc_context's write callback takes a const buffer from FFmpeg 6.1 (libavformat 60.x
// with FF_API_AVIO_WRITE_NONCONST off); Debian 12's FFmpeg 5.1 takes a mutable one.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using AvioBuffer = const uint8_t*;
#else
using AvioBuffer = uint8_t*;
#endif

}  // namespace

int MuxerOutput::write_packet(void* opaque, const uint8_t* buf, int size) {
  auto* self = static_cast<MuxerOutput*>(opaque);
  auto ok = self->file_.write(std::as_bytes(std::span(buf, static_cast<size_t>(size))));
  if (ok) return size;
  if (!self->io_error_) self->io_error_ = ok.error();
  return ok.error().sys_errno() ? AVERROR(ok.error().sys_errno()) : AVERROR(EIO);
}

int64_t MuxerOutput::seek(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<MuxerOutput*>(opaque);
  if (whence == AVSEEK_SIZE) return self->file_.size();
  auto at = self->file_.seek(offset, whence & ~AVSEEK_FORCE);
  if (at) return *at;
  return AVERROR(ESPIPE);
}

Result<void> MuxerOutput::open(const std::string& path, int abort_fd, AVFormatContext* output,
                               const std::string& who, int buffer_bytes,
                               const std::string& setting) {
  auto opened = io::OutputFile::open(path, abort_fd, setting);
  if (!opened) return Unexpected(opened.error());
  file_ = std::move(*opened);
  auto* buffer = static_cast<unsigned char*>(av_malloc(static_cast<size_t>(buffer_bytes)));
  if (!buffer) return make_error(ErrorCode::resource, "{}: av_malloc failed", who);
  auto write =
      +[](void* opaque, AvioBuffer buf, int size) { return write_packet(opaque, buf, size); };
  io_.reset(avio_alloc_context(buffer, buffer_bytes, 1, this, nullptr, write,
                               file_.seekable() ? &seek : nullptr));
  if (!io_) {
    av_free(buffer);
    return make_error(ErrorCode::resource, "{}: avio_alloc_context failed", who);
  }
  io_->seekable = file_.seekable() ? AVIO_SEEKABLE_NORMAL : 0;
  output->pb = io_.get();
  output->flags |= AVFMT_FLAG_CUSTOM_IO;
  return {};
}

std::optional<Error> MuxerOutput::close(const std::string& who) {
  if (!io_) return std::nullopt;
  std::optional<Error> error;
  avio_flush(io_.get());
  if (io_->error < 0) error = error_or(av_error(who, "writing the file", io_->error));
  if (auto closed = file_.close(); !closed && !error) error = closed.error().context(who);
  return error;
}

}  // namespace rdmavideo::av
