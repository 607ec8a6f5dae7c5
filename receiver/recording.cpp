// SPDX-License-Identifier: Apache-2.0
#include "recording.hpp"

#include <algorithm>

#include "rdmavideo/log.hpp"
#ifdef RDMAVIDEO_HAVE_FFMPEG
#include "rdmavideo/av/recorder.hpp"
#endif

namespace rdmavideo::av {
#ifndef RDMAVIDEO_HAVE_FFMPEG
class Recorder {};  // never made in a build without FFmpeg
#endif
}  // namespace rdmavideo::av

namespace rdmavideo::receiver {

bool Recording::is_recording_path(const std::string& path) {
  if (path.empty() || path == "-") return false;
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext != ".yuv" && ext != ".raw";
}

Result<void> Recording::check(const RecordingOptions& o) {
#ifdef RDMAVIDEO_HAVE_FFMPEG
  return av::check_recorder_options({o.path, o.codec, o.encoder, o.status});
#else
  return make_error(ErrorCode::unsupported,
                    "--output {}: this build writes raw frames only (.yuv, .raw or -); encoded "
                    "recordings need the FFmpeg sink",
                    o.path);
#endif
}

Recording::Recording(RecordingOptions options) : options_(std::move(options)) {}

Recording::~Recording() {
  if (auto ok = close(); !ok) log().warn("{}", ok.error().message());
}

Result<void> Recording::write(const proto::StreamStart& format, std::span<const std::byte> frame,
                              int64_t pts_ns) {
#ifdef RDMAVIDEO_HAVE_FFMPEG
  if (!recorder_) {
    auto opened = av::Recorder::open({options_.path, options_.codec, options_.encoder,
                                      options_.status},
                                     format);
    if (!opened) return Unexpected(opened.error());
    recorder_ = std::move(*opened);
    stream_id_ = format.stream_id;
    log().info("[record {}] {}", options_.path, recorder_->describe());
  } else if (format.stream_id != stream_id_) {
    return make_error(ErrorCode::unsupported,
                      "[record {}] StreamStart.stream_id {} changes the format mid-recording "
                      "(now {}x{} {}); one recording holds one format",
                      options_.path, format.stream_id, format.width, format.height,
                      name(format.pixel_format));
  }
  return recorder_->write(frame, pts_ns);
#else
  (void)format, (void)frame, (void)pts_ns;
  return Unexpected(check(options_).error());
#endif
}

Result<void> Recording::close() {
#ifdef RDMAVIDEO_HAVE_FFMPEG
  if (recorder_) return recorder_->finish();
#endif
  return {};
}

uint64_t Recording::frames() const {
#ifdef RDMAVIDEO_HAVE_FFMPEG
  if (recorder_) return recorder_->frames_written();
#endif
  return 0;
}

}  // namespace rdmavideo::receiver
