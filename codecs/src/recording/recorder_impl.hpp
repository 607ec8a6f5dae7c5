// SPDX-License-Identifier: Apache-2.0
// The recorder's state (Recorder::Impl): the file, its tracks and the pictures handed to the
// video encoder (video_encoder.hpp), whichever codes them.
#pragma once

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
#include "rdmavideo/log.hpp"
#include "ten_bit.hpp"
#include "video_encoder.hpp"

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
  // AVIOContext it wrote through and the file under that.
  MuxerOutput muxer_out;
  UniqueOutputContext output;
  std::unique_ptr<VideoEncoder> video;  // FFmpeg's encoders, NVENC, or the project's ProRes
  VideoEncoder::Packets video_out;      // its packets into the file
  UniquePool pool;  // buffers for the frames handed to the encoder (it may hold several)
  UniqueSws sws;
  std::vector<uint8_t>
      padded;  // a frame that ends where its memory may, copied for libswscale (scale_within)
  UniqueFrame frame;
  AVStream* stream = nullptr;  // owned by output
  std::vector<std::unique_ptr<AudioTrack>>
      audio;  // beside the picture; their streams owned by output
  RecorderOptions options;
  proto::StreamStart format;
  AVPixelFormat input_format = AV_PIX_FMT_NONE;
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
  std::atomic<double> last_gpu_ms{0};  // the encoder's GPU time for the last frame

  // The pixel format the encoder takes host pictures in.
  AVPixelFormat encode_format() const { return video->picture_format(); }

  Result<void> open_file(const Container& container);
  Result<void> make_pictures();

  // The encoder's packets into the file, in the stream's time base.
  Result<void> write_video(AVPacket& p) {
    if (p.duration <= 0) p.duration = 1;
    av_packet_rescale_ts(&p, video->context().time_base, stream->time_base);
    p.stream_index = stream->index;
    if (const int rc = av_interleaved_write_frame(output.get(), &p); rc < 0) {
      return Unexpected(muxer_out.error_or(av_error(who, "av_interleaved_write_frame", rc)));
    }
    return {};
  }

  // Whether a received frame can go to the encoder where it lies (no conversion, and planes
  // aligned as FFmpeg aligns its own frames), rather than be copied first.
  bool can_wrap(const FrameLease& lease) const {
    if (encode_format() != input_format || format.pixel_format == PixelFormat::v210) return false;
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
    if (!timeline) timeline.emplace(video->context().time_base);
    const auto placed = timeline->place(pts_ns, 1);
    if (placed.jumped && pts_jumps++ == 0) {
      log().warn(
          "[{}] frame {}: pts {} ns jumps more than {} s from the previous frame's; "
          "the recording continues one frame later (as for every such jump)",
          who, frames, pts_ns, AudioTrack::kMostGapNs / 1'000'000'000);
    }
    return placed.at;
  }

  // Stamps `frame` with its pts and colour, hands it to the encoder and writes what comes out.
  Result<void> encode(int64_t pts_ns, Clock::time_point began) {
    AVFrame* f = frame.get();
    f->pts = repaired_pts(pts_ns);
    stamp_colour(*f, video->context());
    auto ok = video->encode(*f, video_out);
    av_frame_unref(f);
    if (!ok) return ok;
    return frame_done(began);
  }

  // A frame in GPU memory to an encoder that takes it where it lies.
  Result<void> encode_gpu_frame(FrameLease lease) {
    const auto began = Clock::now();
    const int64_t pts = repaired_pts(lease.info().pts_ns);
    if (auto ok = video->encode(std::move(lease), pts, video_out); !ok) return ok;
    return frame_done(began);
  }

  // After each frame: the audio tracks told how far the picture goes, the speed kept.
  Result<void> frame_done(Clock::time_point began) {
    ++frames;
    last_gpu_ms.store(video->gpu_ms(), std::memory_order_relaxed);
    for (auto& track : audio) {
      if (auto ok = track->video_moved(video_end_ns(), write_audio_packet()); !ok) return ok;
    }
    const auto now = Clock::now();
    busy_s += std::chrono::duration<double>(now - began).count();
    update_speed(now);
    return {};
  }

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
