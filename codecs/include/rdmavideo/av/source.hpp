// SPDX-License-Identifier: Apache-2.0
// A frame source over libavformat/libavdevice/libavcodec: files (mp4, mkv, mov with H.264,
// HEVC, ProRes, ...), capture devices (-f v4l2, -f x11grab) and filter graphs (-f lavfi).
//
// Lifecycle: Source::open() probes the input and decides the stream format (width, height,
// rate and pixel format from the input unless SourceOptions asks for others); format() is
// then the StreamStart to send. read_frame() decodes the next frame into a caller's buffer
// laid out as format().layout, converting with libswscale only when the decoded frame's size
// or pixel format differ from the stream's (a native frame is one plane copy, no scaling).
// The decoder never writes into the caller's buffer except inside read_frame(), so a caller
// that waits for the transport to be done with a buffer before passing it keeps the
// "never write into a frame the transport still owns" promise.
//
// Decoding uses FFmpeg's frame and slice threads (thread_count 0: one per core). One thread
// calls a Source. v210 output is rejected (FFmpeg has no v210 pixel format): ask for
// yuv422p10le instead.
//
// A build without FFmpeg has the same API (codecs/src/unavailable.cpp): available() is false
// and open() fails with `unsupported`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/av/source_options.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

class Source {
 public:
  /// Whether this build has FFmpeg; without it open() fails with `unsupported`, naming the
  /// missing libraries.
  static bool available();
  static Result<std::unique_ptr<Source>> open(const SourceOptions& options);
  ~Source();
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  /// The stream's format in the canonical layout; flags and name are left to the caller.
  const proto::StreamStart& format() const;
  /// A capture device (v4l2, x11grab, ...) or a real-time input: send live, drop when behind.
  bool live() const;
  /// The input delivers frames at its own pace (a capture device); a live source that is
  /// not (lavfi, a file sent with --realtime) must be paced by the caller.
  bool paced_by_input() const;
  /// "h264 1280x720 yuv420p from clip.mp4 (mov,mp4,m4a,3gp,3g2,mj2)" for the log.
  std::string describe() const;

  struct FrameInfo {
    int64_t pts_ns = 0;  ///< presentation time from the input, from 0, growing across loops
  };
  /// Decodes the next frame into `out` (format().layout.frame_bytes bytes). nullopt at the
  /// end of the input.
  Result<std::optional<FrameInfo>> read_frame(std::span<std::byte> out);
  /// The same into GPU memory at `out` (device addresses, format().layout): with NVDEC a
  /// copy on the GPU from the decoder's surface, plane by plane from its pitch to the
  /// stream's strides; without, an upload of the frame read_frame() gives.
  Result<std::optional<FrameInfo>> read_frame_to_gpu(cuda::Device& device, cuda::DevicePtr out);
  /// Whether frames are decoded on the GPU (--hwaccel cuda).
  bool decodes_on_gpu() const;

  /// The audio tracks SourceOptions::audio chose, as AudioStarts (stream ids left to the
  /// sender): the decoder's sample format where the protocol carries it (s16, s32, float,
  /// planar or not), else converted by libswresample to float planar; named by the stream's
  /// title, else its language, else "audio N".
  std::vector<proto::AudioStart> audio_tracks() const;
  /// The audio decoded since the last call, in order per track. Audio is demuxed as the
  /// frames are read, so calling this after each read_frame() keeps it a frame's worth.
  std::vector<DecodedAudio> take_audio();

 private:
  struct Impl;
  explicit Source(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
