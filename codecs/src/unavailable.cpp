// SPDX-License-Identifier: Apache-2.0
// The codecs layer in a build without FFmpeg: the same API, where opening a source or a
// recorder fails with `unsupported` and says which libraries the build lacked. Callers need no
// #ifdef; rdmavideo-send still reads raw frames from stdin and rdmavideo-recv still writes raw
// frames.
#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/av/audio_file.hpp"
#include "rdmavideo/av/audio_mixer.hpp"
#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/av/source.hpp"

namespace rdmavideo::av {
namespace {

#ifdef _WIN32
constexpr const char* kMissing =
    "the Windows build has no FFmpeg: it sends the test pattern and raw frames, and decoding "
    "and recording are the Linux build's";
#else
constexpr const char* kMissing =
    "this build has no FFmpeg: it was configured without libavformat, libavcodec, libavutil, "
    "libswscale and libavdevice (install libavformat-dev libavcodec-dev libswscale-dev "
    "libavdevice-dev and reconfigure with -DRDMAVIDEO_WITH_FFMPEG=ON)";
#endif

}  // namespace

// ---- Source

struct Source::Impl {};

bool Source::available() { return false; }

Result<std::unique_ptr<Source>> Source::open(const SourceOptions& options) {
  return make_error(ErrorCode::unsupported, "{} {}: {}", options.names.input, options.input,
                    kMissing);
}

Source::Source(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Source::~Source() = default;

const proto::StreamStart& Source::format() const {
  static const proto::StreamStart none{};
  return none;
}
bool Source::live() const { return false; }
bool Source::paced_by_input() const { return false; }
std::string Source::describe() const { return {}; }
bool Source::decodes_on_gpu() const { return false; }
std::vector<proto::AudioStart> Source::audio_tracks() const { return {}; }
std::vector<DecodedAudio> Source::take_audio() { return {}; }
Result<std::optional<Source::FrameInfo>> Source::read_frame_to_gpu(cuda::Device&, cuda::DevicePtr) {
  return make_error(ErrorCode::unsupported, "built without FFmpeg");
}
Result<std::optional<Source::FrameInfo>> Source::read_frame(std::span<std::byte>) {
  return make_error(ErrorCode::unsupported, "FFmpeg source: {}", kMissing);
}

// ---- Recorder

const std::vector<std::string>& recorder_extensions() {
  static const std::vector<std::string> none;
  return none;
}

const std::vector<std::string>& recorder_codecs() {
  static const std::vector<std::string> none;
  return none;
}

Result<void> check_recorder_options(const RecorderOptions& options) {
  return make_error(ErrorCode::unsupported,
                    "{} {}: {}; without it, the receiver writes raw frames only (.yuv, .raw or -)",
                    options.setting, options.path, kMissing);
}

Result<void> check_recorder_format(const RecorderOptions& options, const proto::StreamStart&) {
  return check_recorder_options(options);
}

Result<RecorderMemory> recorder_memory(const RecorderOptions& options, const proto::StreamStart&) {
  return Unexpected(check_recorder_options(options).error());
}

bool recorder_holds_audio(const std::string&) { return false; }

Result<void> check_recorder_audio(const RecorderOptions& options, const proto::AudioStart&) {
  return check_recorder_options(options);
}

struct Recorder::Impl {
  std::string path;
};

Result<std::unique_ptr<Recorder>> Recorder::open(const RecorderOptions& options,
                                                 const proto::StreamStart&) {
  return Unexpected(check_recorder_options(options).error());
}

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recorder::~Recorder() = default;

Result<void> Recorder::write(FrameLease) { return write(std::span<const std::byte>{}, 0); }

Result<void> Recorder::write(std::span<const std::byte>, int64_t) {
  return make_error(ErrorCode::unsupported, "recorder: {}", kMissing);
}
Result<void> Recorder::write_audio(uint32_t, int64_t, uint32_t, std::span<const std::byte>) {
  return make_error(ErrorCode::unsupported, "recorder: {}", kMissing);
}
void Recorder::end_audio(uint32_t) {}
std::vector<RecordedAudio> Recorder::audio() const { return {}; }
Result<void> Recorder::finish() { return {}; }
uint64_t Recorder::frames_written() const { return 0; }
std::string Recorder::describe() const { return {}; }
const std::string& Recorder::path() const { return impl_->path; }

struct AudioCapture::Impl {};
AudioCapture::AudioCapture(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioCapture::~AudioCapture() = default;
Result<std::unique_ptr<AudioCapture>> AudioCapture::open(const std::string&, const std::string&,
                                                         const AudioCaptureSettingNames& names) {
  return make_error(ErrorCode::unsupported, "{}: {}", names.input, kMissing);
}
const proto::AudioStart& AudioCapture::format() const {
  static const proto::AudioStart none;
  return none;
}
bool AudioCapture::live() const { return false; }
Result<std::optional<AudioCapture::Chunk>> AudioCapture::read() { return std::optional<Chunk>{}; }
std::string AudioCapture::describe() const { return {}; }

struct AudioConverter::Impl {};
AudioConverter::AudioConverter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioConverter::~AudioConverter() = default;
Result<std::unique_ptr<AudioConverter>> AudioConverter::open(const proto::AudioStart&, uint32_t,
                                                             uint32_t) {
  return make_error(ErrorCode::unsupported, "playing audio: {}", kMissing);
}
Result<std::span<const float>> AudioConverter::convert(uint32_t, std::span<const std::byte>,
                                                       uint32_t) {
  return std::span<const float>{};
}
Result<void> AudioConverter::compensate(int, int) { return {}; }
std::string AudioConverter::describe() const { return {}; }

struct AudioFile::Impl {
  std::string path;
};
AudioFile::AudioFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioFile::~AudioFile() = default;
Result<std::unique_ptr<AudioFile>> AudioFile::open(const std::string& path,
                                                   const proto::AudioStart&, int,
                                                   const std::string& setting) {
  return make_error(ErrorCode::unsupported, "{} {}: {}", setting.empty() ? "audio file" : setting,
                    path, kMissing);
}
Result<void> AudioFile::frame(int64_t, Rational) { return {}; }
Result<void> AudioFile::write(int64_t, uint32_t, std::span<const std::byte>) { return {}; }
void AudioFile::end() {}
Result<void> AudioFile::finish() { return {}; }
bool AudioFile::started() const { return false; }
RecordedAudio AudioFile::stats() const { return {}; }
const std::string& AudioFile::path() const { return impl_->path; }
std::string AudioFile::describe() const { return {}; }

// ---- Canvas

struct Canvas::Impl {};

Result<std::unique_ptr<Canvas>> Canvas::create(PixelFormat, uint32_t, uint32_t, Rational, Colour,
                                               CanvasSettingNames) {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}
Canvas::Canvas(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Canvas::~Canvas() = default;
const proto::StreamStart& Canvas::format() const {
  static const proto::StreamStart none{};
  return none;
}
std::span<const std::byte> Canvas::frame() const { return {}; }
Result<Rect> Canvas::place(const proto::StreamStart&, std::span<const std::byte>, Rect) {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}
Result<proto::StreamStart> Canvas::fitted(const proto::StreamStart&, Rect) const {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}
struct Canvas::Fitter::Impl {};
Canvas::Fitter::Fitter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Canvas::Fitter::~Fitter() = default;
Result<void> Canvas::Fitter::fit(const proto::StreamStart&, std::span<const std::byte>,
                                 const proto::StreamStart&, std::span<std::byte>) {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}
std::unique_ptr<Canvas::Fitter> Canvas::fitter() const { return nullptr; }
Result<void> Canvas::fill(Rect, Rgb) {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}
Result<Rect> Canvas::label(int, int, std::string_view, int) {
  return make_error(ErrorCode::unsupported, "compositing: {}", kMissing);
}

// ---- AudioMixer

struct AudioMixer::Impl {};

Result<std::unique_ptr<AudioMixer>> AudioMixer::open(uint32_t, uint32_t, uint32_t) {
  return make_error(ErrorCode::unsupported, "mixing sound: {}", kMissing);
}
AudioMixer::AudioMixer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioMixer::~AudioMixer() = default;
Result<std::span<const float>> AudioMixer::mix(const std::vector<std::span<const float>>&,
                                               uint32_t) {
  return make_error(ErrorCode::unsupported, "mixing sound: {}", kMissing);
}

}  // namespace rdmavideo::av
