// SPDX-License-Identifier: Apache-2.0
// The recorder's path through the library's own ProRes 422 encoder (--encoder
// rdmavideo_prores, rdmavideo/prores.hpp): on a GPU where there is one, else its CPU twin.
// Frames in GPU memory are made the encoder's 10-bit 4:2:2 picture there and encoded there;
// only the coded frame crosses to the host. Host frames (and GPU frames of a format the GPU
// does not convert, downloaded first) are made yuv422p10le by the recorder's CPU path, then
// uploaded once to the GPU encoder, or coded by the CPU twin.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/prores.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// Frames a GPU encoder codes at once, each on its own stream: one frame's passes overlap the
/// next's, and the host waits for none of them.
inline constexpr unsigned kGpuFramesInFlight = 3;

class OwnProres {
 public:
  /// `gpu`: the GPU the stream's frames are in, if they are; else the first GPU, if any.
  /// Without a usable GPU the CPU twin encodes, on `threads` threads (encoder_threads()), and
  /// the first recording to find so says why (once a process).
  static Result<std::unique_ptr<OwnProres>> open(const prores::FrameFormat& format,
                                                 const proto::StreamStart& stream,
                                                 std::optional<int> gpu, int threads,
                                                 const std::string& who);
  ~OwnProres();

  /// Whether frames of the stream in GPU memory are encoded there (a GPU encoder, and the
  /// stream's format made 10-bit 4:2:2 on the GPU).
  bool takes_gpu_frames() const;
  /// What a coded frame is handed to: its packet (data and size; no timing) and its pts.
  using Coded = std::function<Result<void>(AVPacket& packet, int64_t pts)>;
  /// A yuv422p10le picture in host memory, stamped `pts`. On a GPU up to
  /// kGpuFramesInFlight frames are coded at once: `out` is given the oldest once that many
  /// are queued, and flush() the rest.
  Result<void> encode(const AVFrame& picture, int64_t pts, const Coded& out);
  /// A frame in GPU memory; the lease goes back once it is converted.
  Result<void> encode(FrameLease frame, int64_t pts, const Coded& out);
  /// The frames still being coded, in order.
  Result<void> flush(const Coded& out);
  /// The GPU's time for the last frame (ms, conversion or upload included); 0 on the CPU.
  double gpu_ms() const;
  /// "on the GPU (...)" or "on the CPU (...)", for the recording's description.
  std::string describe() const;

 private:
  struct Impl;
  explicit OwnProres(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
