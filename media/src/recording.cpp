// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/recording.hpp"

#include <algorithm>

#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::media {

bool Recording::is_recording_path(const std::string& path) {
  if (path.empty() || path == "-") return false;
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext != ".yuv" && ext != ".raw";
}

namespace {
// What the checks need of a recording's options: path, codec, encoder.
av::RecorderOptions checked(const RecordingOptions& o) {
  av::RecorderOptions options;
  options.path = o.path;
  options.codec = o.codec;
  options.encoder = o.encoder;
  options.setting = o.names.output;
  options.codec_setting = o.names.codec;
  options.encoder_setting = o.names.encoder;
  return options;
}
}  // namespace

RecordingOptions recording_options(const WriterOptions& writer, std::string path, int abort_fd) {
  return RecordingOptions{std::move(path), writer.codec, writer.encoder, abort_fd, writer.names};
}

Result<RecordingMemory> Recording::reserve_memory(const RecordingOptions& o,
                                                  const proto::StreamStart& format,
                                                  memory::Budget& budget, std::string_view who) {
  av::RecorderOptions options = checked(o);
  options.threads = o.threads;
  auto needs = av::recorder_memory(options, format);
  if (!needs) return Unexpected(needs.error());
  RecordingMemory m{nullptr, needs->threads, format.width, format.height, format.pixel_format};
  // The most threads that fit: each holds its own frames, and fewer only encode more slowly.
  for (int threads = needs->threads;; --threads) {
    const uint64_t bytes = needs->bytes(threads);
    auto held =
        budget.reserve(bytes, fmt::format("{}'s recording of {}x{} {} ({} encoder thread{})", who,
                                          format.width, format.height, name(format.pixel_format),
                                          threads, threads == 1 ? "" : "s"));
    if (!held) {
      if (threads == 1) return Unexpected(held.error());
      continue;
    }
    m.held = std::move(*held);
    m.threads = threads;
    if (threads < needs->threads) {
      log().warn(
          "{}: the recording's encoder gets {} of {} threads, as many as the memory "
          "budget holds ({} of {})",
          who, threads, needs->threads, memory::format_bytes(bytes),
          memory::format_bytes(budget.limit()));
    }
    return m;
  }
}

Result<void> Recording::check(const RecordingOptions& o) {
  return av::check_recorder_options(checked(o));
}

Result<void> Recording::check_format(const RecordingOptions& o, const proto::StreamStart& format) {
  return av::check_recorder_format(checked(o), format);
}

Recording::Recording(RecordingOptions options) : options_(std::move(options)) {}

Recording::~Recording() {
  if (auto ok = close(); !ok) log().warn("{}", ok.error().message());
}

Result<void> Recording::open(const FrameLease& first) {
  const proto::StreamStart& format = first.format();
  const auto gpu = first.cuda_device();
  av::RecorderOptions recorder = checked(options_);
  recorder.start_wall_ns = first.info().sent_ns;
  if (gpu) recorder.gpu_frames = gpu->facts().ordinal;
  recorder.abort_fd = options_.abort_fd;
  recorder.threads = options_.threads;
  recorder.audio = audio_;
  auto opened = av::Recorder::open(recorder, format);
  if (!opened) return Unexpected(opened.error());
  recorder_ = std::move(*opened);
  ring_epoch_ = format.ring_epoch;
  log().info("[record {}] {}", options_.path, recorder_->describe());
  return {};
}

Result<void> Recording::same_format(const FrameLease& frame) const {
  const proto::StreamStart& format = frame.format();
  if (!recorder_) {
    return make_error(ErrorCode::invalid_argument, "[record {}] a frame before the file opened",
                      options_.path);
  }
  if (format.ring_epoch != ring_epoch_) {
    return make_error(ErrorCode::unsupported,
                      "[record {}] StreamStart.ring_epoch {} changes the format mid-recording "
                      "(now {}x{} {}); one recording holds one format",
                      options_.path, format.ring_epoch, format.width, format.height,
                      name(format.pixel_format));
  }
  return {};
}

Result<void> Recording::write(FrameLease frame) {
  if (auto ok = same_format(frame); !ok) return ok;
  return recorder_->write(std::move(frame));
}

bool Recording::takes_gpu_frames() const { return recorder_ && recorder_->takes_gpu_frames(); }

Result<void> Recording::write_copy(const FrameLease& frame) {
  if (auto ok = same_format(frame); !ok) return ok;
  return recorder_->write(frame.data(), frame.info().pts_ns);
}

bool Recording::holds_audio(const std::string& path) {
  return is_recording_path(path) && av::recorder_holds_audio(path);
}

Result<uint32_t> Recording::add_audio(const proto::AudioStart& format) {
  if (recorder_) {
    return make_error(
        ErrorCode::unsupported,
        "[record {}] audio \"{}\" started after the first frame: a recording's tracks are "
        "set when it opens",
        options_.path, format.name);
  }
  if (auto ok = av::check_recorder_audio(checked(options_), format); !ok) {
    return Unexpected(ok.error());
  }
  audio_.push_back(format);
  return static_cast<uint32_t>(audio_.size() - 1);
}

Result<void> Recording::write_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                                    std::span<const std::byte> data) {
  if (!recorder_)
    return make_error(ErrorCode::invalid_argument, "[record {}] audio before the file opened",
                      options_.path);
  return recorder_->write_audio(track, pts_ns, samples, data);
}

std::vector<av::RecordedAudio> Recording::audio() const {
  return recorder_ ? recorder_->audio() : std::vector<av::RecordedAudio>{};
}

void Recording::end_audio(uint32_t track) {
  if (recorder_) recorder_->end_audio(track);
}

Result<void> Recording::close() {
  if (recorder_) return recorder_->finish();
  return {};
}

double Recording::speed() const { return recorder_ ? recorder_->speed() : 0.0; }
double Recording::gpu_ms() const { return recorder_ ? recorder_->gpu_ms() : 0.0; }

uint64_t Recording::frames() const {
  if (recorder_) return recorder_->frames_written();
  return 0;
}

}  // namespace rdmavideo::media
