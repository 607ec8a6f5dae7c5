// SPDX-License-Identifier: Apache-2.0
// The recorder's NVENC path: frames in GPU memory handed to NVENC where they are, through a
// pool of FFmpeg's CUDA frames (converted on the GPU into a format NVENC takes where needed).
#include "recorder_impl.hpp"

namespace rdmavideo::av {

// NVENC from GPU memory: FFmpeg's CUDA device on the GPU's primary context, and a pool of
// CUDA frames in the stream's format that the encoder is told to expect.
Result<void> Recorder::Impl::open_cuda_frames(AVCodecContext* enc, const AVCodec* codec,
                                              int ordinal) {
  Impl& s = *this;
  auto device = cuda::Device::shared(ordinal);
  if (!device) return Unexpected(device.error().context(s.who));
  s.gpu = *device;
  auto takes = [&](AVPixelFormat wanted) {
    for (const AVPixelFormat* p = codec->pix_fmts; p && *p != AV_PIX_FMT_NONE; ++p) {
      if (*p == wanted) return true;
    }
    return false;
  };
  AVPixelFormat gpu_format = s.input_format;
  if (!takes(s.input_format)) {
    // What NVENC does not take is converted on the GPU into what it does.
    using Conversion = cuda::Kernels::Conversion;
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
      if (c.from == s.format.pixel_format && takes(c.to)) found = &c;
    }
    if (!found) {
      return make_error(
          ErrorCode::unsupported,
          "{}: {} does not take {} frames from GPU memory, and nothing here converts them "
          "on the GPU (nv12, p010, i420, rgba and bgra it takes; uyvy422, yuyv422, "
          "yuv422p10le and rgb24 are converted): record from frames in host memory",
          s.who, codec->name, name(s.format.pixel_format));
    }
    auto loaded = cuda::Kernels::shared(s.gpu);
    if (!loaded) {
      return Unexpected(loaded.error().context(
          fmt::format("{}: {} frames need converting to {} on the GPU for {}", s.who,
                      name(s.format.pixel_format), av_name(found->to), codec->name)));
    }
    s.kernels = std::move(*loaded);
    s.conversion = found->conversion;
    gpu_format = found->to;
  }
  auto created = s.gpu->create_stream();
  if (!created) return Unexpected(created.error().context(s.who));
  s.gpu_copies = std::move(*created);
  auto made = cuda_device_on(*s.gpu_copies, s.who);
  if (!made) return Unexpected(made.error());
  LogCapture said;
  UniqueBufferRef pool_ref(av_hwframe_ctx_alloc(made->get()));  // the pool keeps its own reference
  if (!pool_ref) return make_error(ErrorCode::resource, "{}: av_hwframe_ctx_alloc failed", s.who);
  auto* fc = reinterpret_cast<AVHWFramesContext*>(pool_ref->data);
  fc->format = AV_PIX_FMT_CUDA;
  fc->sw_format = gpu_format;
  fc->width = static_cast<int>(s.format.width);
  fc->height = static_cast<int>(s.format.height);
  if (const int rc = av_hwframe_ctx_init(pool_ref.get()); rc < 0) {
    return Unexpected(said.error(s.who, "av_hwframe_ctx_init(cuda)", rc));
  }
  enc->pix_fmt = AV_PIX_FMT_CUDA;
  enc->sw_pix_fmt = gpu_format;
  s.encode_format = gpu_format;
  enc->hw_frames_ctx = av_buffer_ref(pool_ref.get());
  s.hw_frames = std::move(pool_ref);
  return {};
}

// A frame in GPU memory into a frame of FFmpeg's CUDA pool, copied plane by plane on the
// GPU; the ring slot goes back at once and the encoder holds the pool's frame.
Result<void> Recorder::Impl::encode_gpu_frame(FrameLease lease) {
  const auto began = Clock::now();
  const int64_t pts_ns = lease.info().pts_ns;
  AVFrame* f = frame.get();
  av_frame_unref(f);
  if (const int rc = av_hwframe_get_buffer(hw_frames.get(), f, 0); rc < 0) {
    return Unexpected(av_error(who, "av_hwframe_get_buffer(cuda)", rc));
  }
  const auto from = cuda::address(lease.data().data());
  if (conversion) {
    cuda::Kernels::Planes in, out;
    for (int p = 0; p < format.layout.plane_count && p < 3; ++p) {
      in.at[p] = from + format.layout.planes[p].offset;
      in.pitch[p] = format.layout.planes[p].stride;
    }
    for (int p = 0; p < 2; ++p) {
      out.at[p] = reinterpret_cast<uintptr_t>(f->data[p]);
      out.pitch[p] = static_cast<size_t>(f->linesize[p]);
    }
    auto ok = kernels->convert(*gpu_copies, *conversion, in, out, format.width, format.height);
    if (ok) ok = gpu_copies->synchronize();
    if (!ok) return Unexpected(ok.error().context(who));
    lease.release();
    return encode(pts_ns, began);
  }
  if (auto ok = copy_cuda_frame(*gpu_copies, format, from, *f, false); !ok) {
    return Unexpected(ok.error().context(who));
  }
  lease.release();
  return encode(pts_ns, began);
}

}  // namespace rdmavideo::av
