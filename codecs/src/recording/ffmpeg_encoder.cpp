// SPDX-License-Identifier: Apache-2.0
// FFmpeg's encoders behind the recorder's seam (video_encoder.hpp): the context set up for the
// codec and profile chosen, host pictures sent and packets drained; NVENC also from GPU memory,
// through a pool of FFmpeg's CUDA frames (converted on the GPU into a format NVENC takes where
// needed).
#include <string_view>

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/opt.h>
}

#include "nvenc_convert.hpp"
#include "rdmavideo/cuda.hpp"
#include "video_encoder.hpp"

namespace rdmavideo::av {
namespace {

class FfmpegEncoder final : public VideoEncoder {
 public:
  FfmpegEncoder(UniqueCodecContext context, AVPixelFormat picture_format, const AVCodec* codec,
                const proto::StreamStart& format, AVPixelFormat input_format, std::string who)
      : VideoEncoder(std::move(context), picture_format),
        codec_(codec),
        format_(format),
        input_format_(input_format),
        who_(std::move(who)) {}

  // The encoder (the base's context) goes before the CUDA frame pool and the stream FFmpeg's
  // CUDA device queues its work on, which the members below hold.
  ~FfmpegEncoder() override {
    gpu_frame_.reset();
    context_.reset();
  }
  FfmpegEncoder(const FfmpegEncoder&) = delete;
  FfmpegEncoder& operator=(const FfmpegEncoder&) = delete;

  // NVENC from GPU memory: FFmpeg's CUDA device on the GPU's primary context, and a pool of
  // CUDA frames in the stream's format that the encoder is told to expect.
  Result<void> open_cuda_frames(int ordinal);
  // After the context is set up: the encoder opened, and what it codes into.
  Result<void> open();

  bool takes_gpu_frames() const override { return hw_frames_ != nullptr; }
  bool stores_raw() const override {
    return codec_->id == AV_CODEC_ID_RAWVIDEO || codec_->id == AV_CODEC_ID_WRAPPED_AVFRAME;
  }
  uint32_t codec_tag() const override {
    // Raw pictures are told apart by their tag (a FourCC naming the pixel format): without it,
    // NUT readers guess one, and guess wrong.
    return codec_->id == AV_CODEC_ID_RAWVIDEO ? avcodec_pix_fmt_to_codec_tag(picture_format_) : 0;
  }

  Result<void> encode(AVFrame& picture, const Packets& out) override {
    if (const int rc = avcodec_send_frame(context_.get(), &picture); rc < 0) {
      return Unexpected(av_error(who_, "avcodec_send_frame", rc));
    }
    return drain(out);
  }
  Result<void> encode(FrameLease frame, int64_t pts, const Packets& out) override;
  Result<void> flush(const Packets& out) override {
    if (const int rc = avcodec_send_frame(context_.get(), nullptr); rc < 0 && rc != AVERROR_EOF) {
      return Unexpected(av_error(who_, "avcodec_send_frame(flush)", rc));
    }
    return drain(out);
  }

  std::string describe(std::string_view muxer) const override {
    const AVCodecContext& enc = *context_;
    const char* profile_name = av_get_profile_name(codec_, enc.profile);
    return fmt::format(
        "{} ({}{}{}) {}x{} {} at {} fps in {}, {} threads{}", codec_->name,
        avcodec_get_name(codec_->id), profile_name ? " " : "", profile_name ? profile_name : "",
        enc.width, enc.height, av_name(picture_format_), to_string(format_.frame_rate), muxer,
        enc.thread_count,
        hw_frames_ ? fmt::format(", from GPU memory on {}{}", gpu_->describe(),
                                 conversion_ ? fmt::format(", converted from {} there",
                                                           name(format_.pixel_format))
                                             : "")
        : picture_format_ == input_format_
            ? ""
            : fmt::format(", converting from {}", av_name(input_format_)));
  }

 private:
  Result<void> drain(const Packets& out) {
    for (;;) {
      const int rc = avcodec_receive_packet(context_.get(), packet_.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return {};
      if (rc < 0) return Unexpected(av_error(who_, "avcodec_receive_packet", rc));
      if (auto ok = out(*packet_); !ok) return ok;
    }
  }

  const AVCodec* codec_;
  proto::StreamStart format_;
  AVPixelFormat input_format_;
  std::string who_;
  UniquePacket packet_;
  // NVENC from GPU memory; destroyed backwards, after the encoder (the destructor).
  std::shared_ptr<cuda::Device> gpu_;         // the GPU the frames are on
  std::unique_ptr<cuda::Stream> gpu_copies_;  // our copies into the pool and NVENC's reads
  UniqueBufferRef hw_frames_;                 // FFmpeg's CUDA frame pool
  std::optional<NvencConvert> kernels_;       // a conversion on the GPU, if needed
  std::optional<NvencConvert::Conversion> conversion_;
  UniqueFrame gpu_frame_;  // the pool's frame a GPU frame is copied into
};

Result<void> FfmpegEncoder::open_cuda_frames(int ordinal) {
  auto device = cuda::Device::shared(ordinal);
  if (!device) return Unexpected(device.error().context(who_));
  gpu_ = *device;
  auto takes = [&](AVPixelFormat wanted) {
    for (const AVPixelFormat* p = codec_->pix_fmts; p && *p != AV_PIX_FMT_NONE; ++p) {
      if (*p == wanted) return true;
    }
    return false;
  };
  AVPixelFormat gpu_format = input_format_;
  if (!takes(input_format_)) {
    // What NVENC does not take is converted on the GPU into what it does.
    using Conversion = NvencConvert::Conversion;
    struct Converted {
      PixelFormat from;
      Conversion conversion;
      AVPixelFormat to;
    };
    static constexpr Converted kConverted[] = {
        {PixelFormat::uyvy, Conversion::uyvy_to_nv12, AV_PIX_FMT_NV12},
        {PixelFormat::yuy2, Conversion::yuy2_to_nv12, AV_PIX_FMT_NV12},
        {PixelFormat::yuv422p10, Conversion::yuv422p10_to_p010, AV_PIX_FMT_P010LE},
        {PixelFormat::rgb24, Conversion::rgb24_to_rgb0, AV_PIX_FMT_RGB0},
    };
    const Converted* found = nullptr;
    for (const auto& c : kConverted) {
      if (c.from == format_.pixel_format && takes(c.to)) found = &c;
    }
    if (!found) {
      return make_error(
          ErrorCode::unsupported,
          "{}: {} does not take {} frames from GPU memory, and nothing here converts them "
          "on the GPU (nv12, p010, i420, rgba and bgra it takes; uyvy422, yuyv422, "
          "yuv422p10le and rgb24 are converted): record from frames in host memory",
          who_, codec_->name, name(format_.pixel_format));
    }
    auto loaded = NvencConvert::load(*gpu_);
    if (!loaded) {
      return Unexpected(loaded.error().context(
          fmt::format("{}: {} frames need converting to {} on the GPU for {}", who_,
                      name(format_.pixel_format), av_name(found->to), codec_->name)));
    }
    kernels_ = std::move(*loaded);
    conversion_ = found->conversion;
    gpu_format = found->to;
  }
  auto created = gpu_->create_stream();
  if (!created) return Unexpected(created.error().context(who_));
  gpu_copies_ = std::move(*created);
  auto made = cuda_device_on(*gpu_copies_, who_);
  if (!made) return Unexpected(made.error());
  LogCapture said;
  UniqueBufferRef pool_ref(av_hwframe_ctx_alloc(made->get()));  // the pool keeps its own reference
  if (!pool_ref) return make_error(ErrorCode::resource, "{}: av_hwframe_ctx_alloc failed", who_);
  auto* fc = reinterpret_cast<AVHWFramesContext*>(pool_ref->data);
  fc->format = AV_PIX_FMT_CUDA;
  fc->sw_format = gpu_format;
  fc->width = static_cast<int>(format_.width);
  fc->height = static_cast<int>(format_.height);
  if (const int rc = av_hwframe_ctx_init(pool_ref.get()); rc < 0) {
    return Unexpected(said.error(who_, "av_hwframe_ctx_init(cuda)", rc));
  }
  AVCodecContext* enc = context_.get();
  enc->pix_fmt = AV_PIX_FMT_CUDA;
  enc->sw_pix_fmt = gpu_format;
  picture_format_ = gpu_format;
  enc->hw_frames_ctx = av_buffer_ref(pool_ref.get());
  hw_frames_ = std::move(pool_ref);
  return {};
}

Result<void> FfmpegEncoder::open() {
  AVCodecContext* enc = context_.get();
  LogCapture said;  // NVENC says why it cannot open (no encode device, ...) only in its log
  if (const int rc = avcodec_open2(enc, codec_, nullptr); rc < 0) {
    return Unexpected(said.error(who_,
                                 fmt::format("avcodec_open2({} {}x{} {})", codec_->name, enc->width,
                                             enc->height, av_name(picture_format_)),
                                 rc));
  }
  auto packet = make_packet(who_);
  if (!packet) return Unexpected(packet.error());
  packet_ = std::move(*packet);
  auto frame = make_frame(who_);
  if (!frame) return Unexpected(frame.error());
  gpu_frame_ = std::move(*frame);
  return {};
}

// A frame in GPU memory into a frame of FFmpeg's CUDA pool, copied plane by plane on the
// GPU; the ring slot goes back at once and the encoder holds the pool's frame.
Result<void> FfmpegEncoder::encode(FrameLease lease, int64_t pts, const Packets& out) {
  AVFrame* f = gpu_frame_.get();
  av_frame_unref(f);
  if (const int rc = av_hwframe_get_buffer(hw_frames_.get(), f, 0); rc < 0) {
    return Unexpected(av_error(who_, "av_hwframe_get_buffer(cuda)", rc));
  }
  const auto from = cuda::address(lease.data().data());
  if (conversion_) {
    NvencConvert::Planes in, to;
    for (int p = 0; p < format_.layout.plane_count && p < 3; ++p) {
      in.at[p] = from + format_.layout.planes[p].offset;
      in.pitch[p] = format_.layout.planes[p].stride;
    }
    for (int p = 0; p < 2; ++p) {
      to.at[p] = reinterpret_cast<uintptr_t>(f->data[p]);
      to.pitch[p] = static_cast<size_t>(f->linesize[p]);
    }
    auto ok = kernels_->convert(*gpu_copies_, *conversion_, in, to, format_.width, format_.height);
    if (ok) ok = gpu_copies_->synchronize();
    if (!ok) return Unexpected(ok.error().context(who_));
  } else if (auto ok = copy_cuda_frame(*gpu_copies_, format_, from, *f, false); !ok) {
    return Unexpected(ok.error().context(who_));
  }
  lease.release();
  f->pts = pts;
  stamp_colour(*f, *context_);
  auto ok = encode(*f, out);
  av_frame_unref(f);
  return ok;
}

}  // namespace

Result<std::unique_ptr<VideoEncoder>> open_ffmpeg_encoder(
    const Choice& choice, const RecorderOptions& options, const proto::StreamStart& format,
    AVPixelFormat input_format, bool global_header, const std::string& who) {
  const AVCodec* codec = choice.encoder;
  // The encoder's pixel format: the profile's, else the input's where the encoder takes it.
  AVPixelFormat encode_format = choice.codec->fixed;
  if (encode_format == AV_PIX_FMT_NONE) {
    const AVPixelFormat* list = codec->pix_fmts;
    if (std::string_view(choice.container->muxer) == "yuv4mpegpipe" &&
        choice.codec->id == AV_CODEC_ID_RAWVIDEO) {
      list = kY4mFormats;
    }
    encode_format = input_format;
    if (list) {
      bool supported = false;
      for (const AVPixelFormat* p = list; *p != AV_PIX_FMT_NONE; ++p)
        supported |= *p == input_format;
      if (!supported)
        encode_format = avcodec_find_best_pix_fmt_of_list(list, input_format, 0, nullptr);
    }
  }
  auto context = make_codec_context(codec, who);
  if (!context) return Unexpected(context.error());
  AVCodecContext* enc = context->get();
  describe_stream(*enc, format, encode_format, global_header);
  // One a core unless a budget asked for fewer; ProRes and FFV1 are intra-only, so threads
  // scale.
  enc->thread_count = options.threads;
  enc->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (choice.codec->av_profile != FF_PROFILE_UNKNOWN) enc->profile = choice.codec->av_profile;
  if (choice.codec->profile && enc->priv_data &&
      av_opt_find(enc->priv_data, "profile", nullptr, 0, 0)) {
    if (const int rc = av_opt_set(enc->priv_data, "profile", choice.codec->profile, 0); rc < 0) {
      return Unexpected(
          av_error(who, fmt::format("{} profile {}", codec->name, choice.codec->profile), rc));
    }
  }
  if (choice.codec->id == AV_CODEC_ID_FFV1) {
    enc->level = 3;  // FFV1 version 3: slices, so the encoder can use every core
    av_opt_set_int(enc->priv_data, "slicecrc", 1, 0);
  }
  auto encoder = std::make_unique<FfmpegEncoder>(std::move(*context), encode_format, codec, format,
                                                 input_format, who);
  if (std::string_view(codec->name).ends_with("_nvenc") && options.gpu_frames) {
    if (auto ok = encoder->open_cuda_frames(*options.gpu_frames); !ok)
      return Unexpected(ok.error());
  }
  if (auto ok = encoder->open(); !ok) return Unexpected(ok.error());
  return std::unique_ptr<VideoEncoder>(std::move(encoder));
}

}  // namespace rdmavideo::av
