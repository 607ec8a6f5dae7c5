// SPDX-License-Identifier: Apache-2.0
#include "recording.hpp"

#include <algorithm>

#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::receiver {

bool Recording::is_recording_path(const std::string& path) {
  if (path.empty() || path == "-") return false;
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext != ".yuv" && ext != ".raw";
}

Result<void> Recording::check(const RecordingOptions& o) {
  return av::check_recorder_options({o.path, o.codec, o.encoder, std::nullopt, std::nullopt});
}

Result<void> Recording::check_format(const RecordingOptions& o, const proto::StreamStart& format) {
  return av::check_recorder_format({o.path, o.codec, o.encoder, std::nullopt, std::nullopt}, format);
}

Recording::Recording(RecordingOptions options) : options_(std::move(options)) {}

Recording::~Recording() {
  if (auto ok = close(); !ok) log().warn("{}", ok.error().message());
}

Result<void> Recording::open_for(const FrameLease& frame) {
  const proto::StreamStart& format = frame.format();
  if (!recorder_) {
    const auto gpu = frame.cuda_device();
    auto opened = av::Recorder::open({options_.path, options_.codec, options_.encoder, frame.info().sent_ns,
                                      gpu ? std::optional<int>(gpu->facts().ordinal) : std::nullopt,
                                      options_.abort_fd},
                                     format);
    if (!opened) return Unexpected(opened.error());
    recorder_ = std::move(*opened);
    ring_epoch_ = format.ring_epoch;
    log().info("[record {}] {}", options_.path, recorder_->describe());
  } else if (format.ring_epoch != ring_epoch_) {
    return make_error(ErrorCode::unsupported,
                      "[record {}] StreamStart.ring_epoch {} changes the format mid-recording "
                      "(now {}x{} {}); one recording holds one format",
                      options_.path, format.ring_epoch, format.width, format.height,
                      name(format.pixel_format));
  }
  return {};
}

Result<void> Recording::write(FrameLease frame) {
  if (auto ok = open_for(frame); !ok) return ok;
  return recorder_->write(std::move(frame));
}

Result<bool> Recording::takes_gpu_frames(const FrameLease& frame) {
  if (auto ok = open_for(frame); !ok) return Unexpected(ok.error());
  return recorder_->takes_gpu_frames();
}

Result<void> Recording::write_copy(const FrameLease& frame) {
  if (auto ok = open_for(frame); !ok) return ok;
  return recorder_->write(frame.data(), frame.info().pts_ns);
}

Result<void> Recording::close() {
  if (recorder_) return recorder_->finish();
  return {};
}

double Recording::speed() const { return recorder_ ? recorder_->speed() : 0.0; }

uint64_t Recording::frames() const {
  if (recorder_) return recorder_->frames_written();
  return 0;
}

}  // namespace rdmavideo::receiver
