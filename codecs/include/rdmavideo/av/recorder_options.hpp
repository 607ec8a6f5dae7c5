// SPDX-License-Identifier: Apache-2.0
// What a recording is asked to be (RecorderOptions) and what can be known of it before a
// Recorder opens (rdmavideo/av/recorder.hpp): the containers and codecs it takes, whether its
// options, a stream's format and its sound fit, and the memory it will hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// The library's own ProRes 422 encoder (rdmavideo/prores.hpp), for --codec prores and
/// prores_hq in .mov: on a GPU, where frames in GPU memory are coded without leaving it, else
/// on the CPU (its twin, a reference rather than a race).
inline constexpr const char* kOwnProresEncoder = "rdmavideo_prores";

struct RecorderOptions {
  std::string path;   ///< output file; the extension picks the container
  std::string codec;  ///< prores, prores_hq, prores_4444, dnxhr_hq, ffv1, h264, hevc,
                      ///< rawvideo; empty: the container's default
  /// The encoder for the codec: FFmpeg's (prores_aw, prores_ks, h264_nvenc, ...), or
  /// kOwnProresEncoder; empty: the codec's default.
  std::string encoder;
  /// The first frame's wall-clock time (ns since the Unix epoch, the sender's clock): the
  /// file's creation_time, and in .mov the start of a timecode track (time of day, local
  /// time zone, drop-frame at 29.97 and 59.94), so recordings of several cameras line up.
  std::optional<uint64_t> start_wall_ns;
  /// Frames arrive in GPU memory of this CUDA device. An NVENC encoder (h264_nvenc,
  /// hevc_nvenc) then takes them there: each is copied on the GPU into a frame of FFmpeg's
  /// CUDA frame pool, and nothing crosses PCIe but the bitstream. Other encoders are given
  /// host frames, so their caller downloads first (takes_gpu_frames() is false).
  std::optional<int> gpu_frames;
  /// The encoder's threads; 0: one a core, at most 16. A memory budget may ask for fewer
  /// (recorder_memory()).
  int threads = 0;
  /// An eventfd (not owned), or -1: once readable, a wait on the output gives up (a FIFO with
  /// no reader yet, a pipe nobody reads), so a stop is never held by a reader. Regular files
  /// are written, finalised and fsynced as usual.
  int abort_fd = -1;
  /// Audio tracks recorded beside the picture, in order, as their senders started them:
  /// PCM s24le in .mov and .nut, FLAC (up to 8 channels, else PCM) in .mkv, AAC in .mp4; a
  /// .y4m holds none (recorder_holds_audio()).
  std::vector<proto::AudioStart> audio;
  /// The front end's names for the file, the codec and the encoder ("--output", "--codec",
  /// "--encoder"), which the errors about each begin with (the file's with its path too).
  std::string setting = "the output";
  std::string codec_setting = "the codec";
  std::string encoder_setting = "the encoder";
};

/// The extensions a Recorder takes (".mov", ...).
const std::vector<std::string>& recorder_extensions();
/// The codec names --codec takes.
const std::vector<std::string>& recorder_codecs();
/// Checks path, codec and encoder without opening anything (for option parsing).
Result<void> check_recorder_options(const RecorderOptions& options);
/// Whether a recording to `path` holds audio: every container but .y4m (false for a path
/// that names no container).
bool recorder_holds_audio(const std::string& path);
/// Checks that a recording with these options can record an audio track of `format` (AAC
/// in .mp4 takes only the layouts FFmpeg's encoder does), naming what it cannot.
Result<void> check_recorder_audio(const RecorderOptions& options, const proto::AudioStart& format);
/// Checks that a recording with these options takes a stream of `format` (its frame rate
/// fits FFmpeg's time base, its size the encoder's), naming the StreamStart field that does
/// not: asked when a StreamStart arrives, before a ring is reserved or a file opened.
Result<void> check_recorder_format(const RecorderOptions& options,
                                   const proto::StreamStart& format);

/// What a recording holds in memory for a stream, beside the receiver's ring: the encoder's
/// frames, copies and state (a part of it for each encoder thread), the frame copied and
/// converted for it, and the packets the muxer keeps until it writes them (a fragment's in
/// .mov and .mp4, a cluster's in .mkv). Measured with FFmpeg 5.1 and rounded up; the memory
/// section of docs/operations.md gives the figures.
struct RecorderMemory {
  uint64_t fixed = 0;       ///< whatever the threads
  uint64_t per_thread = 0;  ///< each encoder thread's
  int threads = 1;          ///< the threads the encoder takes when left to choose
  uint64_t bytes(int t) const { return fixed + per_thread * static_cast<uint64_t>(t); }
};
/// What a recording with these options holds for a stream of `format` (whose
/// check_recorder_format() passed).
Result<RecorderMemory> recorder_memory(const RecorderOptions& options,
                                       const proto::StreamStart& format);

}  // namespace rdmavideo::av
