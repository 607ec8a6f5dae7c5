// SPDX-License-Identifier: Apache-2.0
#include "recorder_prores.hpp"

#include <atomic>
#include <chrono>
#include <deque>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"
#include "video_encoder.hpp"

namespace rdmavideo::av {
namespace {

// What the GPU makes the encoder's picture from; nullopt: the CPU path makes it.
std::optional<prores::GpuInput> gpu_input(PixelFormat format) {
  using In = prores::GpuInput;
  switch (format) {
    case PixelFormat::uyvy: return In::uyvy;
    case PixelFormat::yuy2: return In::yuy2;
    case PixelFormat::nv12: return In::nv12;
    case PixelFormat::i420: return In::i420;
    case PixelFormat::p010: return In::p010;
    case PixelFormat::yuv422p10: return In::yuv422p10;
    case PixelFormat::v210: return In::v210;
    default: return std::nullopt;
  }
}

}  // namespace

struct OwnProres::Impl {
  prores::FrameFormat format;
  PixelFormat stream_format = PixelFormat::uyvy;
  FrameLayout layout;
  std::string who;
  // On a GPU: the encoder, the picture it reads (three planes) and the stream it is made on.
  // Else the CPU twin.
  std::shared_ptr<cuda::Device> device;
  std::unique_ptr<prores::GpuEncoder> gpu;
  std::unique_ptr<cuda::Stream> stream;
  std::shared_ptr<cuda::DevicePtr> picture_at[3];
  prores::DevicePicture picture;
  std::optional<prores::Encoder> cpu;
  std::string why_cpu;  // why the CPU twin encodes
  bool frames_on_gpu = false;
  double gpu_ms = 0;
  UniquePacket packet;
  std::deque<int64_t> in_flight;  // the pts of each frame the GPU is coding, oldest first

  size_t max_frame_bytes() const { return gpu ? gpu->max_frame_bytes() : cpu->max_frame_bytes(); }

  // A GPU encoder and the picture it reads, on `ordinal`; why not where it cannot be.
  Result<void> open_gpu(int ordinal) {
    auto opened = cuda::Device::shared(ordinal);
    if (!opened) return Unexpected(opened.error());
    device = *opened;
    auto encoder = prores::GpuEncoder::create(device, format, kGpuFramesInFlight);
    if (!encoder) return Unexpected(encoder.error());
    auto created = device->create_stream();
    if (!created) return Unexpected(created.error());
    const uint32_t samples[3] = {format.width, (format.width + 1) / 2, (format.width + 1) / 2};
    picture = {{}, format.width, format.height};
    for (int p = 0; p < 3; ++p) {
      const size_t pitch = (samples[p] * 2 + 255) / 256 * 256;
      auto at = device->allocate(pitch * format.height);
      if (!at) return Unexpected(at.error());
      picture_at[p] = *at;
      picture.planes.at[p] = **at;
      picture.planes.pitch[p] = pitch;
    }
    gpu = std::move(*encoder);
    stream = std::move(*created);
    return {};
  }

  // The picture on the GPU queued, stamped `pts`; the oldest frame to `out` once as many are
  // queued as the encoder holds.
  Result<void> submit(int64_t pts, const Coded& out) {
    if (auto ok = gpu->submit(picture); !ok) return Unexpected(ok.error().context(who));
    in_flight.push_back(pts);
    if (gpu->queued() < gpu->frames_in_flight()) return {};
    return collect(out);
  }

  // The oldest frame the GPU is coding to `out`.
  Result<void> collect(const Coded& out) {
    av_packet_unref(packet.get());
    if (const int rc = av_new_packet(packet.get(), static_cast<int>(gpu->max_frame_bytes()));
        rc < 0)
      return Unexpected(av_error(who, "av_new_packet", rc));
    const int64_t pts = in_flight.front();
    in_flight.pop_front();
    auto size = gpu->collect(std::span(packet->data, static_cast<size_t>(packet->size)));
    if (!size) return Unexpected(size.error().context(who));
    av_shrink_packet(packet.get(), static_cast<int>(*size));
    gpu_ms = gpu->last_encode_ms();
    return out(*packet, pts);
  }
};

OwnProres::OwnProres(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OwnProres::~OwnProres() = default;

Result<std::unique_ptr<OwnProres>> OwnProres::open(const prores::FrameFormat& format,
                                                   const proto::StreamStart& stream,
                                                   std::optional<int> gpu, int threads,
                                                   const std::string& who) {
  if (auto ok = prores::check_format(format); !ok) return Unexpected(ok.error().context(who));
  auto impl = std::make_unique<Impl>();
  impl->format = format;
  impl->stream_format = stream.pixel_format;
  impl->layout = stream.layout;
  impl->who = who;
  auto packet = make_packet(who);
  if (!packet) return Unexpected(packet.error());
  impl->packet = std::move(*packet);
  impl->frames_on_gpu = gpu.has_value();
  // The GPU the frames are in; for host frames the first GPU there is.
  std::optional<int> ordinal = gpu;
  if (!ordinal) {
    auto driver = cuda::Driver::shared();
    if (!driver) {
      impl->why_cpu = driver.error().message();
    } else if ((*driver)->device_count() == 0) {
      impl->why_cpu = "the CUDA driver sees no GPU";
    } else {
      ordinal = 0;
    }
  }
  if (ordinal) {
    if (auto ok = impl->open_gpu(*ordinal); !ok) {
      impl->why_cpu = ok.error().message();
      impl->gpu.reset();
    }
  }
  if (!impl->gpu) {
    auto cpu = prores::Encoder::create(format, static_cast<unsigned>(threads));
    if (!cpu) return Unexpected(cpu.error().context(who));
    impl->cpu.emplace(std::move(*cpu));
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      log().warn(
          "[{}] rdmavideo_prores: no GPU to encode on ({}); its CPU twin encodes, which is a "
          "reference, not a race: prores_aw is several times faster on the CPU",
          who, impl->why_cpu);
    }
  }
  return std::unique_ptr<OwnProres>(new OwnProres(std::move(impl)));
}

bool OwnProres::takes_gpu_frames() const {
  return impl_->gpu && gpu_input(impl_->stream_format).has_value();
}

Result<void> OwnProres::encode(const AVFrame& frame, int64_t pts, const Coded& out) {
  Impl& m = *impl_;
  if (m.gpu) {
    // One upload of the three planes.
    const uint32_t samples[3] = {m.format.width, (m.format.width + 1) / 2,
                                 (m.format.width + 1) / 2};
    for (int p = 0; p < 3; ++p) {
      if (auto ok = m.stream->copy_2d_async(
              cuda::Pitched::device(m.picture.planes.at[p], m.picture.planes.pitch[p]),
              cuda::Pitched::host(reinterpret_cast<const std::byte*>(frame.data[p]),
                                  static_cast<size_t>(frame.linesize[p])),
              samples[p] * 2u, m.format.height);
          !ok) {
        return Unexpected(ok.error().context(m.who));
      }
    }
    if (auto ok = m.stream->synchronize(); !ok) return Unexpected(ok.error().context(m.who));
    return m.submit(pts, out);
  }
  AVPacket* packet = m.packet.get();
  av_packet_unref(packet);
  if (const int rc = av_new_packet(packet, static_cast<int>(m.cpu->max_frame_bytes())); rc < 0)
    return Unexpected(av_error(m.who, "av_new_packet", rc));
  const prores::Planes422 planes{reinterpret_cast<const uint16_t*>(frame.data[0]),
                                 reinterpret_cast<const uint16_t*>(frame.data[1]),
                                 reinterpret_cast<const uint16_t*>(frame.data[2]),
                                 static_cast<size_t>(frame.linesize[0]) / 2,
                                 static_cast<size_t>(frame.linesize[1]) / 2};
  auto size = m.cpu->encode(planes, std::span(packet->data, static_cast<size_t>(packet->size)));
  if (!size) return Unexpected(size.error().context(m.who));
  av_shrink_packet(packet, static_cast<int>(*size));
  return out(*packet, pts);
}

Result<void> OwnProres::encode(FrameLease frame, int64_t pts, const Coded& out) {
  Impl& m = *impl_;
  const auto input = gpu_input(m.stream_format);
  if (!m.gpu || !input || frame.memory_kind() != memory::MemoryKind::cuda) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: a frame in GPU memory for an encoder that does not take one", m.who);
  }
  prores::DevicePlanes from;
  const auto base = cuda::address(frame.data().data());
  for (int p = 0; p < m.layout.plane_count && p < 3; ++p) {
    from.at[p] = base + m.layout.planes[p].offset;
    from.pitch[p] = m.layout.planes[p].stride;
  }
  auto ok = m.gpu->make_picture(*m.stream, *input, from, m.picture);
  if (ok) ok = m.stream->synchronize();
  if (!ok) return Unexpected(ok.error().context(m.who));
  frame.release();  // the slot goes back while the picture is coded
  return m.submit(pts, out);
}

Result<void> OwnProres::flush(const Coded& out) {
  Impl& m = *impl_;
  while (m.gpu && m.gpu->queued() > 0) {
    if (auto ok = m.collect(out); !ok) return ok;
  }
  return {};
}

double OwnProres::gpu_ms() const { return impl_->gpu_ms; }

std::string OwnProres::describe() const {
  const Impl& m = *impl_;
  if (m.gpu) {
    const bool converted_there = m.frames_on_gpu && gpu_input(m.stream_format);
    return fmt::format("on the GPU {}, {}", m.device->describe(),
                       converted_there ? fmt::format("from GPU memory, {} made 10-bit 4:2:2 there",
                                                     name(m.stream_format))
                                       : std::string("each picture uploaded once as yuv422p10le"));
  }
  return "on the CPU (the GPU encoder's twin: no GPU)";
}

namespace {

// The project's ProRes behind the recorder's seam: each picture coded and written in order,
// stamped with its time as a keyframe; at once by the CPU twin, a few frames later on a GPU
// (kGpuFramesInFlight are coded at once), and those left at the stream's end by flush().
class ProresEncoder final : public VideoEncoder {
 public:
  ProresEncoder(UniqueCodecContext context, AVPixelFormat picture_format,
                std::unique_ptr<OwnProres> own, prores::Profile profile, Rational rate)
      : VideoEncoder(std::move(context), picture_format),
        own_(std::move(own)),
        profile_(profile),
        rate_(rate) {}

  bool takes_gpu_frames() const override { return own_->takes_gpu_frames(); }
  bool stores_raw() const override { return false; }
  uint32_t codec_tag() const override {
    // The four-character code names the profile, as Apple's encoders and prores_aw write it.
    const std::string_view tag = prores::fourcc(profile_);
    return MKTAG(tag[0], tag[1], tag[2], tag[3]);
  }
  Result<void> encode(AVFrame& picture, const Packets& out) override {
    return own_->encode(picture, picture.pts, written(out));
  }
  Result<void> encode(FrameLease frame, int64_t pts, const Packets& out) override {
    return own_->encode(std::move(frame), pts, written(out));
  }
  Result<void> flush(const Packets& out) override { return own_->flush(written(out)); }
  double gpu_ms() const override { return own_->gpu_ms(); }
  std::string describe(std::string_view muxer) const override {
    return fmt::format("{} (prores {}, {}) {}x{} {} at {} fps in {}, {}", kOwnProresEncoder,
                       prores::to_string(profile_), prores::fourcc(profile_), context_->width,
                       context_->height, av_name(picture_format_), to_string(rate_), muxer,
                       own_->describe());
  }

 private:
  // Each coded picture stamped with its time as a keyframe, then to the file.
  static OwnProres::Coded written(const Packets& out) {
    return [&out](AVPacket& p, int64_t pts) {
      p.pts = p.dts = pts;
      p.duration = 1;
      p.flags |= AV_PKT_FLAG_KEY;
      return out(p);
    };
  }

  std::unique_ptr<OwnProres> own_;
  prores::Profile profile_;
  Rational rate_;
};

// The own encoder's profile for a ProRes 422 codec choice (choose() lets no other through).
prores::Profile own_profile(int av_profile) {
  switch (av_profile) {
    case FF_PROFILE_PRORES_PROXY: return prores::Profile::proxy;
    case FF_PROFILE_PRORES_LT: return prores::Profile::lt;
    case FF_PROFILE_PRORES_HQ: return prores::Profile::hq;
    default: return prores::Profile::standard;
  }
}

}  // namespace

Result<std::unique_ptr<VideoEncoder>> open_prores_encoder(const Choice& choice,
                                                          const RecorderOptions& options,
                                                          const proto::StreamStart& format,
                                                          bool global_header,
                                                          const std::string& who) {
  // A context FFmpeg never opens: the stream's parameters for the muxer.
  auto context = make_codec_context(nullptr, who);
  if (!context) return Unexpected(context.error());
  AVCodecContext& enc = **context;
  enc.codec_type = AVMEDIA_TYPE_VIDEO;
  enc.codec_id = AV_CODEC_ID_PRORES;
  enc.bits_per_raw_sample = 10;
  const AVPixelFormat picture_format = choice.codec->fixed;  // yuv422p10le
  describe_stream(enc, format, picture_format, global_header);
  if (choice.codec->av_profile != FF_PROFILE_UNKNOWN) enc.profile = choice.codec->av_profile;
  const auto profile = own_profile(choice.codec->av_profile);
  // The frame header's colour is the stream's, as FFmpeg's encoders take it from the frame.
  const prores::FrameFormat own_format{format.width,
                                       format.height,
                                       profile,
                                       static_cast<uint8_t>(enc.color_primaries),
                                       static_cast<uint8_t>(enc.color_trc),
                                       static_cast<uint8_t>(enc.colorspace)};
  auto own = OwnProres::open(own_format, format, options.gpu_frames, encoder_threads(options), who);
  if (!own) return Unexpected(own.error());
  return std::unique_ptr<VideoEncoder>(std::make_unique<ProresEncoder>(
      std::move(*context), picture_format, std::move(*own), profile, format.frame_rate));
}

}  // namespace rdmavideo::av
