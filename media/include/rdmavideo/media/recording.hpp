// SPDX-License-Identifier: Apache-2.0
// An encoded recording (--output FILE.mov/.mkv/.mp4/.nut/.y4m): opens the FFmpeg recorder
// (codecs/) on the first frame, once the stream's format is known, and feeds it every frame
// with the sender's pts. The first frame's send time (the sender's clock) becomes the file's
// creation_time and, in .mov, the start of its timecode track, so several cameras' files
// line up in an editor. One format per recording: a format change is refused.
// Called from the sink thread only; close() finalises the file and reports what went wrong.
// A build without FFmpeg refuses encoded outputs in option parsing: the codecs layer says
// which libraries the build lacked.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/media/engine_options.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::av {
class Recorder;
struct RecordedAudio;
}  // namespace rdmavideo::av

namespace rdmavideo::media {

struct RecordingOptions {
  std::string path;
  std::string codec;    // empty: the container's default
  std::string encoder;  // empty: the codec's default
  int abort_fd = -1;    // eventfd: once readable, waits on the output give up
  SettingNames names;   // the front end's names for the output, codec and encoder
  int threads = 0;      // the encoder's; 0: one a core (at most 16)
};

/// A recording's memory, held in a receiver's budget while `held` lives.
struct RecordingMemory {
  std::shared_ptr<const void> held;
  int threads = 1;  // the encoder threads it was reserved for
  uint32_t width = 0, height = 0;
  PixelFormat pixel_format{};
  /// Whether it was reserved for a stream of `format`'s size and pixel format.
  bool fits(const proto::StreamStart& format) const {
    return held && format.width == width && format.height == height &&
           format.pixel_format == pixel_format;
  }
};

/// A recording into `path` as `writer` asks for one (its codec, encoder and names).
RecordingOptions recording_options(const WriterOptions& writer, std::string path,
                                   int abort_fd = -1);

class Recording {
 public:
  /// Does `path` name a container (.mov, .mkv, ...) rather than raw frames?
  static bool is_recording_path(const std::string& path);
  /// Checks the options without opening anything (an error for the usage line).
  static Result<void> check(const RecordingOptions& options);
  /// Checks that a stream of `format` can be recorded so (asked at StreamStart, before a ring
  /// is reserved), naming the StreamStart field that cannot.
  static Result<void> check_format(const RecordingOptions& options,
                                   const proto::StreamStart& format);

  /// Reserves in `budget` what a recording of `format` holds beside the ring (its encoder's
  /// frames and state, converted copies, the muxer's buffered packets: av::recorder_memory()),
  /// with as many encoder threads as fit, up to one a core; or the budget's refusal, which
  /// names `who`'s recording and what it needs.
  static Result<RecordingMemory> reserve_memory(const RecordingOptions& options,
                                                const proto::StreamStart& format,
                                                memory::Budget& budget, std::string_view who);

  explicit Recording(RecordingOptions options);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  /// Opens the file and its encoder for the stream's first frame, before it is written: its
  /// format, where it lies (an encoder that reads GPU memory is chosen for a frame there), and
  /// its FrameWritten.sent_ns, which dates the file. The tracks add_audio() gave are opened
  /// with it.
  Result<void> open(const FrameLease& first);
  /// Records a received frame: where the codec takes it as it is, the encoder reads the
  /// ring slot itself and keeps the lease until it is done; else the frame is copied. A frame
  /// of another format than the first is refused.
  Result<void> write(FrameLease frame);
  /// Whether write() takes frames in GPU memory as they are (an NVENC encoder, which reads
  /// them on the GPU). Else the caller downloads them.
  bool takes_gpu_frames() const;
  /// Records a copy of the frame, leaving the lease with the caller (for the display).
  Result<void> write_copy(const FrameLease& frame);
  /// Whether a recording to `path` holds audio (every container but .y4m).
  static bool holds_audio(const std::string& path);
  /// An audio track to record beside the picture: before open() only (the file's tracks are
  /// fixed when it opens). Its number among the recording's tracks, or why not.
  Result<uint32_t> add_audio(const proto::AudioStart& format);
  /// Samples of recorded track `track` (add_audio()'s number); after the first frame.
  Result<void> write_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                           std::span<const std::byte> data);
  void end_audio(uint32_t track);
  /// Each recorded track as it went (none before the file opened).
  std::vector<av::RecordedAudio> audio() const;
  /// Whether the file is open (the first frame came).
  bool opened() const { return recorder_ != nullptr; }
  /// Finalises the file (drains the encoder, writes the trailer). Idempotent.
  Result<void> close();
  uint64_t frames() const;
  /// The encoder's speed over the last second as a real-time factor; 0 before it is known.
  double speed() const;
  /// The GPU's time for the last frame in ms where the encoder runs on one; else 0.
  double gpu_ms() const;
  const std::string& path() const { return options_.path; }

 private:
  RecordingOptions options_;
  std::unique_ptr<av::Recorder> recorder_;  // open() made it
  uint32_t ring_epoch_ = 0;                 // the StreamStart the recorder was opened for
  std::vector<proto::AudioStart> audio_;    // tracks to open the recorder with

  // Refuses a frame of another format than the recorder was opened for.
  Result<void> same_format(const FrameLease& frame) const;
};

}  // namespace rdmavideo::media
