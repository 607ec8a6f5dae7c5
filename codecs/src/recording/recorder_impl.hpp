// SPDX-License-Identifier: Apache-2.0
// The recorder's state (Recorder::Impl), shared by its CPU path (recorder.cpp) and its NVENC
// path from GPU memory (recorder_nvenc.cpp).
#pragma once

extern "C" {
#include <libavutil/hwcontext.h>
}

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audio_track.hpp"
#include "av_util.hpp"
#include "muxer_output.hpp"
#include "picture_timeline.hpp"
#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "recorder_prores.hpp"
#include "ten_bit.hpp"

namespace rdmavideo::av {

using Clock = std::chrono::steady_clock;

// FFmpeg's own frames have 64-byte aligned planes and rows; a received frame laid out that way
// can be encoded where it lies.
inline constexpr uintptr_t kFrameAlign = 64;

struct PoolDeleter {
  void operator()(AVBufferPool* pool) const noexcept { av_buffer_pool_uninit(&pool); }
};
using UniquePool = std::unique_ptr<AVBufferPool, PoolDeleter>;

struct Recorder::Impl {
  // Creation order; destroyed backwards: frames and sws, the encoder, the muxer, then the
  // AVIOContext it wrote through and the file under that; last the CUDA stream FFmpeg's CUDA
  // device (NVENC) queues its work on.
  std::shared_ptr<cuda::Device> gpu;  // NVENC from GPU memory: the GPU the frames are on
  std::unique_ptr<cuda::Stream>
      gpu_copies;  // our copies into the pool and NVENC's reads, in one order
  MuxerOutput muxer_out;
  UniqueOutputContext output;
  // FFmpeg's encoder; with the library's own ProRes encoder (`own`), a context never opened
  // that holds the stream's parameters (size, time base, colour) for the muxer.
  UniqueCodecContext encoder;
  std::unique_ptr<OwnProres> own;
  UniquePool pool;  // buffers for the frames handed to the encoder (it may hold several)
  UniqueSws sws;
  std::vector<uint8_t>
      padded;  // a frame that ends where its memory may, copied for libswscale (scale_within)
  UniqueFrame frame;
  UniquePacket packet;
  UniqueBufferRef hw_frames;                     // NVENC from GPU memory: FFmpeg's CUDA frame pool
  std::shared_ptr<const cuda::Kernels> kernels;  // NVENC: a conversion on the GPU, if needed
  std::optional<cuda::Kernels::Conversion> conversion;
  AVStream* stream = nullptr;  // owned by output
  std::vector<std::unique_ptr<AudioTrack>>
      audio;  // beside the picture; their streams owned by output
  RecorderOptions options;
  proto::StreamStart format;
  AVPixelFormat input_format = AV_PIX_FMT_NONE;
  AVPixelFormat encode_format = AV_PIX_FMT_NONE;
  std::vector<uint16_t> v210_planes;  // v210 input unpacked to yuv422p10le, one frame
  bool mask_to_10_bits = false;       // yuv422p10le straight into an encoder (not raw video)
  uint64_t frames_masked = 0;         // frames that had samples above 10 bits
  int buffer_bytes = 0;
  std::string who;  // "record out.mov"
  std::string description;
  bool finished = false;
  std::optional<Error> finish_error;
  std::optional<PictureTimeline> timeline;  // in the encoder's time base, from the first frame
  uint64_t pts_jumps = 0;                   // pts repaired for jumping (or overflowing)
  uint64_t frames = 0;                      // frames given to the encoder
  // Status: the encoder's speed as a real-time factor (frames per second spent inside
  // write(), over the stream's rate).
  Clock::time_point status_last = Clock::now();
  Clock::time_point warned_last{};
  uint64_t status_frames = 0;
  double busy_s = 0;                   // seconds inside write() since status_last
  std::atomic<double> last_speed{0};   // update_speed()'s last result, for other threads
  std::atomic<double> last_gpu_ms{0};  // the own encoder's GPU time for the last frame

  Result<void> drain() {
    for (;;) {
      const int rc = avcodec_receive_packet(encoder.get(), packet.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return {};
      if (rc < 0) return Unexpected(av_error(who, "avcodec_receive_packet", rc));
      if (packet->duration <= 0) packet->duration = 1;
      av_packet_rescale_ts(packet.get(), encoder->time_base, stream->time_base);
      packet->stream_index = stream->index;
      if (const int wrc = av_interleaved_write_frame(output.get(), packet.get()); wrc < 0) {
        return Unexpected(muxer_out.error_or(av_error(who, "av_interleaved_write_frame", wrc)));
      }
    }
  }

  // Whether a received frame can go to the encoder where it lies (no conversion, and planes
  // aligned as FFmpeg aligns its own frames), rather than be copied first.
  bool can_wrap(const FrameLease& lease) const {
    if (encode_format != input_format || format.pixel_format == PixelFormat::v210) return false;
    if (lease.format().layout.frame_bytes != format.layout.frame_bytes) return false;
    const auto base = reinterpret_cast<uintptr_t>(lease.data().data());
    for (int p = 0; p < format.layout.plane_count; ++p) {
      const auto& plane = format.layout.planes[p];
      if ((base + plane.offset) % kFrameAlign != 0 || plane.stride % kFrameAlign != 0) return false;
    }
    return true;
  }

  void mask(AVFrame* f) {
    if (const auto bad = mask_samples_to_10_bits(f)) {
      if (frames_masked++ == 0) {
        static constexpr const char* kPlanes[] = {"Y", "Cb", "Cr"};
        log().warn(
            "[{}] frame {}: yuv422p10le {} sample at row {} column {} is {}, above the "
            "10-bit maximum 1023 ({} such samples in the frame); masked to its low 10 "
            "bits, as in every later frame, so the encoder codes the rest losslessly",
            who, frames, kPlanes[bad->plane], bad->row, bad->column, bad->value, bad->count);
      }
    }
  }

  // The sender's pts in frames since the first frame, repaired so the file stays valid
  // whatever a sender sends (PictureTimeline), with a warning the first time it jumps.
  int64_t repaired_pts(int64_t pts_ns) {
    if (!timeline) timeline.emplace(encoder->time_base);
    const auto placed = timeline->place(pts_ns, 1);
    if (placed.jumped && pts_jumps++ == 0) {
      log().warn(
          "[{}] frame {}: pts {} ns jumps more than {} s from the previous frame's; "
          "the recording continues one frame later (as for every such jump)",
          who, frames, pts_ns, AudioTrack::kMostGapNs / 1'000'000'000);
    }
    return placed.at;
  }

  // Stamps `frame` with its pts, hands it to the encoder and writes what comes out.
  Result<void> encode(int64_t pts_ns, Clock::time_point began) {
    AVFrame* f = frame.get();
    f->pts = repaired_pts(pts_ns);
    // Encoders that write colour into each picture (ProRes' frame header) take it from the
    // frame, not the context.
    f->color_primaries = encoder->color_primaries;
    f->color_trc = encoder->color_trc;
    f->colorspace = encoder->colorspace;
    f->color_range = encoder->color_range;
    if (own) {
      const int64_t pts = f->pts;
      auto ok = own->encode(*f, packet.get());
      av_frame_unref(f);
      if (!ok) return ok;
      return write_own(pts, began);
    }
    if (const int rc = avcodec_send_frame(encoder.get(), f); rc < 0) {
      av_frame_unref(f);
      return Unexpected(av_error(who, "avcodec_send_frame", rc));
    }
    av_frame_unref(f);
    ++frames;
    if (auto ok = drain(); !ok) return ok;
    return frame_done(began);
  }

  // The own encoder's frame in `packet`, at `pts` in the encoder's time base, into the file.
  Result<void> write_own(int64_t pts, Clock::time_point began) {
    AVPacket* p = packet.get();
    p->pts = p->dts = pts;
    p->duration = 1;
    p->flags |= AV_PKT_FLAG_KEY;
    av_packet_rescale_ts(p, encoder->time_base, stream->time_base);
    p->stream_index = stream->index;
    ++frames;
    last_gpu_ms.store(own->gpu_ms(), std::memory_order_relaxed);
    if (const int rc = av_interleaved_write_frame(output.get(), p); rc < 0) {
      return Unexpected(muxer_out.error_or(av_error(who, "av_interleaved_write_frame", rc)));
    }
    return frame_done(began);
  }

  // A frame in GPU memory coded by the own encoder on the GPU, where it lies.
  Result<void> encode_own_gpu_frame(FrameLease lease) {
    const auto began = Clock::now();
    const int64_t pts = repaired_pts(lease.info().pts_ns);
    if (auto ok = own->encode(std::move(lease), packet.get()); !ok) return ok;
    return write_own(pts, began);
  }

  // After each frame: the audio tracks told how far the picture goes, the speed kept.
  Result<void> frame_done(Clock::time_point began) {
    for (auto& track : audio) {
      if (auto ok = track->video_moved(video_end_ns(), write_audio_packet()); !ok) return ok;
    }
    const auto now = Clock::now();
    busy_s += std::chrono::duration<double>(now - began).count();
    update_speed(now);
    return {};
  }

  Result<void> open_cuda_frames(AVCodecContext* enc, const AVCodec* codec, int ordinal);

  // Where the picture ends so far on the file's timeline (ns): after its last frame.
  int64_t video_end_ns() const {
    if (!timeline || !timeline->last()) return 0;
    return timeline->to_ns(*timeline->last() + 1);
  }
  AudioTrack::WritePacket write_audio_packet() {
    return [this](AVPacket* p) -> Result<void> {
      if (const int rc = av_interleaved_write_frame(output.get(), p); rc < 0) {
        return Unexpected(
            muxer_out.error_or(av_error(who, "av_interleaved_write_frame(audio)", rc)));
      }
      return {};
    };
  }

  // A frame in GPU memory into a frame of FFmpeg's CUDA pool (recorder_nvenc.cpp).
  Result<void> encode_gpu_frame(FrameLease lease);

  void update_speed(Clock::time_point now) {
    const double dt = std::chrono::duration<double>(now - status_last).count();
    if (dt < 1.0) return;
    const uint64_t n = frames - status_frames;
    const double fps = format.frame_rate.value();
    const double speed = busy_s > 0 && fps > 0 ? n / busy_s / fps : 0;
    last_speed.store(speed, std::memory_order_relaxed);
    if (n > 0 && speed < 1.0 && now - warned_last >= std::chrono::seconds(5)) {
      log().warn(
          "[{}] the encoder runs at {:.2f}x real time: the ring fills and the sender is "
          "held back (a live sender drops)",
          who, speed);
      warned_last = now;
    }
    status_last = now;
    status_frames = frames;
    busy_s = 0;
  }
};

}  // namespace rdmavideo::av
