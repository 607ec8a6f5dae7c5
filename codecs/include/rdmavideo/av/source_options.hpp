// SPDX-License-Identifier: Apache-2.0
// What a Source (rdmavideo/av/source.hpp) is asked to read, how a front end names those
// settings, and the sound it decodes beside the picture: below the source and its sound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"

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

}  // namespace rdmavideo::av
