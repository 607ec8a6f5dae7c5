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

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// How a front end names the settings a Source's messages speak of. The defaults are plain
/// words; the command line gives its flags, so its users read what they typed.
struct SourceSettingNames {
  std::string input = "the input";                ///< before the input's url
  std::string input_format = "the input format";  ///< before its name, where one was given
  std::string loop = "looping";
  std::string decoder = "the NVDEC decoder";         ///< "leave out ... to decode on the CPU"
  std::string decoder_choice = "the NVDEC decoder";  ///< where it was asked for
  std::string audio = "audio stream";                ///< before a chosen stream's number
  std::string size = "the size";
  std::string rate = "the frame rate setting";  ///< "set one with ..."
  std::string pixel_format = "the pixel format";
  std::string host_memory = "host memory";
};

struct SourceOptions {
  std::string input;                        ///< file, URL or device (-i)
  std::string input_format;                 ///< -f: v4l2, x11grab, lavfi, ...; empty: probe
  std::optional<uint32_t> width, height;    ///< -s: scale to this size
  std::optional<Rational> frame_rate;       ///< -r: the stream's rate (and the device's)
  std::optional<PixelFormat> pixel_format;  ///< --pix-fmt: convert to this format
  /// --colour: what the frames are said to be in. A conversion into YUV uses its matrix and
  /// range. Not given: the input's colour, with the matrix and range a conversion chose.
  std::optional<Colour> colour;
  bool loop = false;  ///< --loop: start the file again at its end
  /// --hwaccel cuda[:N]: decode with NVDEC on GPU N through FFmpeg's CUDA hwaccel. Frames
  /// stay in GPU memory for read_frame_to_gpu(), and are downloaded for read_frame().
  std::optional<int> cuda_decoder;
  /// Frames go into GPU memory (read_frame_to_gpu): with cuda_decoder they keep the format
  /// NVDEC gives (nv12, or p010 for 10-bit), which -s and --pix-fmt may not change.
  bool into_gpu = false;
  /// Audio streams decoded beside the picture (--audio): none, the first, all, or those
  /// listed (0-based among the input's audio streams, as ffmpeg's -map 0:a:N).
  enum class Audio { none, first, all, listed };
  Audio audio = Audio::none;
  std::vector<int> audio_streams;  ///< for `listed`
  SourceSettingNames names;
};

/// Samples of one audio track, decoded while frames were read, on the frames' clock.
struct DecodedAudio {
  uint32_t track = 0;           ///< index into Source::audio_tracks()
  int64_t pts_ns = 0;           ///< of the first sample, on the same clock as FrameInfo::pts_ns
  uint32_t samples = 0;         ///< per channel
  std::vector<std::byte> data;  ///< in the track's format (planar: each channel in turn)
};

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
