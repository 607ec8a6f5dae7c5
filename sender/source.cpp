// SPDX-License-Identifier: Apache-2.0
#include "source.hpp"

#include "cli.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/process.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo::send_cli {
namespace {

// Buffers the session lends for decoded or read frames: one being filled while the others may
// still be on the wire (verbs reads them until their writes complete).
constexpr uint32_t kInputBuffers = 3;

}  // namespace

uint32_t Source::pool_buffers(const proto::StreamStart& format) const {
  return testsrc_ ? TestPattern::buffer_count(format) * copies_ : kInputBuffers;
}

Result<void> Source::prepare(SenderSession& session, const proto::StreamStart& format) {
  format_ = format;
  if (!testsrc_) return {};
  std::vector<std::byte> phase_frame(format.layout.frame_bytes);
  for (uint32_t index = 0; index < pool_buffers(format); ++index) {
    auto buffer = session.acquire_buffer(index);
    if (!buffer) return Unexpected(buffer.error());
    // What buffer `index` holds for acquire_holding().
    TestPattern::render_buffer(format, index % TestPattern::buffer_count(format), phase_frame);
    if (auto ok = buffer->write(phase_frame); !ok) return ok;
  }
  // The stamp is all that changes per frame: it is made here and written over the frame.
  stamp_offset_ = std::min<size_t>(format.layout.planes[0].offset, format.layout.frame_bytes);
  stamp_.resize(std::min(format.layout.frame_bytes - stamp_offset_,
                         TestPattern::stamp_bytes(format.pixel_format)) +
                stamp_offset_);
  return {};
}

Result<FrameBuffer> Source::buffer_for(SenderSession& session, uint64_t sequence) {
  if (!testsrc_) return session.acquire_buffer();
  return session.acquire_holding(TestPattern::buffer_index(format_, sequence),
                                 TestPattern::buffer_count(format_));
}

Result<bool> Source::fill(FrameBuffer& buffer, uint64_t sequence) {
  if (testsrc_) {
    TestPattern::stamp(format_, stamp_, sequence);
    auto ok = buffer.write(std::span(stamp_).subspan(stamp_offset_), stamp_offset_);
    if (!ok) return Unexpected(ok.error());
    return true;
  }
  if (ffmpeg_ && buffer.kind() == memory::MemoryKind::cuda) {
    // Decoded by NVDEC, copied on the GPU; decoded on the CPU, uploaded.
    auto device = cuda::Device::shared(memory_device_);
    if (!device) return Unexpected(device.error());
    auto info = ffmpeg_->read_frame_to_gpu(**device, cuda::address(buffer.bytes().data()));
    if (!info) return Unexpected(info.error());
    if (!*info) return false;
    pts_ns_ = (*info)->pts_ns;
    return true;
  }
  // GPU buffers are filled from host memory: read into it, then upload.
  const bool upload = buffer.kind() == memory::MemoryKind::cuda;
  if (upload) staging_.resize(buffer.bytes().size());
  const std::span<std::byte> target = upload ? std::span(staging_) : buffer.bytes();
  Result<bool> filled = true;
  if (ffmpeg_) {
    auto info = ffmpeg_->read_frame(target);
    if (!info) return Unexpected(info.error());
    if (!*info) return false;
    pts_ns_ = (*info)->pts_ns;
  } else {
    filled = read_stdin(target, sequence);
  }
  if (upload && filled && *filled) {
    if (auto ok = buffer.write(target); !ok) return Unexpected(ok.error());
  }
  return filled;
}

Result<bool> Source::read_stdin(std::span<std::byte> buffer, uint64_t sequence) {
  size_t done = 0;
  while (done < buffer.size()) {
    // Waits in slices so a stop is noticed while stdin is quiet.
    auto n = platform::read_stdin(buffer.subspan(done), std::chrono::milliseconds(250));
    if (!n) return Unexpected(n.error());
    if (cli::stop_requested()) return false;  // SIGINT or SIGTERM arrived
    if (!*n) continue;
    if (**n == 0) break;
    done += **n;
  }
  if (done == 0) return false;
  if (done < buffer.size()) {
    return make_error(ErrorCode::invalid_argument,
                      "stdin: truncated frame {}: got {} of {} bytes (check -s and --pix-fmt)",
                      sequence, done, buffer.size());
  }
  return true;
}

// Opens an FFmpeg input and returns the format it gives; nullptr for the test pattern and
// stdin. Fills `o`'s format and decides live or not (a capture input is live unless
// --no-drop). A build without FFmpeg fails here, the codecs layer naming what is missing.
Result<std::unique_ptr<av::Source>> open_ffmpeg(Options& o) {
  if (!ffmpeg_input(o)) return nullptr;
  av::SourceOptions so;
  so.input = o.input;
  so.input_format = o.input_format;
  so.loop = o.loop;
  so.cuda_decoder = o.hwaccel;
  so.into_gpu = o.memory.kind == memory::MemoryKind::cuda;
  so.audio = o.audio;
  so.audio_streams = o.audio_streams;
  if (o.size_given) so.width = o.width, so.height = o.height;
  if (o.rate_given) so.frame_rate = o.rate;
  if (o.pix_fmt_given) so.pixel_format = o.pix_fmt;
  so.colour = o.colour;
  // The library names its settings in plain words; here they are the flags that set them.
  so.names = {.input = "-i",
              .input_format = "-f",
              .loop = "--loop",
              .decoder = "--hwaccel",
              .decoder_choice = "--hwaccel cuda",
              .audio = "--audio",
              .size = "-s",
              .rate = "-r",
              .pixel_format = "--pix-fmt",
              .host_memory = "--memory host"};
  auto source = av::Source::open(so);
  if (!source && !av::Source::available()) {
    return make_error(source.error().code(),
                      "{}; without it, inputs are raw frames on stdin (-i -) or --testsrc",
                      source.error().message());
  }
  if (!source) return Unexpected(source.error());
  const auto& f = (*source)->format();
  o.width = f.width;
  o.height = f.height;
  o.rate = f.frame_rate;
  o.pix_fmt = f.pixel_format;
  o.colour = f.colour;
  if (!o.realtime && !o.no_drop && (*source)->live()) o.realtime = true;
  log().info("[send] input: {}", (*source)->describe());
  return std::move(*source);
}

Result<std::unique_ptr<av::AudioCapture>> open_audio_capture(const Options& o) {
  if (o.audio_input.empty()) return nullptr;
  auto capture = av::AudioCapture::open(o.audio_input, o.audio_input_format,
                                        {.input = "--audio-i", .format = "--audio-f"});
  if (capture) log().info("[send] audio input: {}", (*capture)->describe());
  return capture;
}

}  // namespace rdmavideo::send_cli
