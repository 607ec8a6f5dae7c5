// SPDX-License-Identifier: Apache-2.0
// Records received frames: encodes them (ProRes, DNxHR, FFV1, H.264, HEVC or raw video) and
// muxes them into a container chosen by the file's extension (.mov, .mkv, .mp4, .nut, .y4m).
//
// Lifecycle: Recorder::open() checks the path and codec and opens the encoder and file for
// the stream's format; write() once per frame in presentation order; finish() drains the
// encoder, writes the trailer and closes the file, returning what went wrong. The destructor
// finishes too, as a fallback that can only log. One thread calls a Recorder (the
// receiver's sink thread); write(span) copies the frame (converting its pixel format only
// when the codec cannot take it), so the caller may release the ring slot as soon as it
// returns; write(FrameLease) encodes a frame that needs no conversion where it lies.
//
// The file is written through an OutputFile (rdmavideo/output_file.hpp): a FIFO or pipe is
// waited on only until RecorderOptions::abort_fd, and a regular file is fsynced by finish().
//
// Memory stays bounded: the encoder holds at most its thread count of frames, and a slow
// encoder makes write() slower, which fills the ring and holds back the sender.
// MOV and MP4 are written fragmented (a fragment about every second, empty moov first), so a
// crash loses at most about a second. v210 is unpacked to yuv422p10le first.
//
// FFV1 is lossless at 10 bits too: a yuv422p10le stream decodes to exactly the samples sent.
// A yuv422p10le word with bits above the 10th set holds no 10-bit sample, and FFV1 codes one
// so wrongly that the rest of its slice decodes as garbage; before an encoder (not raw video)
// such words are masked to their low 10 bits, with a warning naming the first. The test
// pattern's frame stamp (a tag and the frame number in the first 16 bytes) makes such words.
//
// A build without FFmpeg has the same API (codecs/src/unavailable.cpp):
// check_recorder_options() and open() fail with `unsupported`, naming the missing libraries.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/av/recorder_options.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// One audio track of a recording as it went (rdmavideo/av/recorder.hpp).
struct RecordedAudio {
  std::string name;
  uint64_t samples = 0;  ///< received
  uint64_t written = 0;  ///< in the file, silence included
  uint64_t silence = 0;  ///< gaps filled and the end padded
  uint64_t trimmed = 0;  ///< before the first frame, overlaps, past the last
  uint32_t sample_rate = 0;
};

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> open(const RecorderOptions& options,
                                                const proto::StreamStart& format);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Encodes one frame laid out as the stream's layout; pts_ns is the sender's
  /// FrameWritten.pts_ns (the first frame's becomes 0). The frame is copied first.
  Result<void> write(std::span<const std::byte> frame, int64_t pts_ns);
  /// The same for a received frame, without the copy where it can be: when the codec takes
  /// the stream's format as it is and the planes are aligned as FFmpeg's own, the encoder
  /// reads the ring slot itself and the lease (the slot's credit) is returned when the
  /// encoder lets the frame go, on whichever of its threads that is.
  Result<void> write(FrameLease frame);
  /// Whether write(FrameLease) takes frames in GPU memory as they are (NVENC with
  /// gpu_frames, or kOwnProresEncoder on a GPU for a format it converts there); else a frame
  /// in GPU memory must be downloaded first.
  bool takes_gpu_frames() const;
  /// Samples of audio track `track` (RecorderOptions::audio), as sent, the first at the
  /// sender's `pts_ns`: placed on the picture's timeline (the first frame is the origin; the
  /// frame's pts repairs apply), trimmed before it, gaps filled with silence. After the first
  /// frame only.
  Result<void> write_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                           std::span<const std::byte> data);
  /// The sender ended audio track `track`: silence from here as long as the picture goes on.
  void end_audio(uint32_t track);
  /// Each audio track as it went so far.
  std::vector<RecordedAudio> audio() const;
  /// Drains the encoder, writes the trailer, closes the file. Idempotent.
  Result<void> finish();

  uint64_t frames_written() const;
  /// The encoder's speed over the last second as a real-time factor (frames encoded per
  /// second spent encoding, over the stream's rate); 0 before a second has passed. Falling
  /// below 1 is also logged as a warning, at most every 5 s.
  double speed() const;
  /// The GPU's time for the last frame in ms (kOwnProresEncoder on a GPU); else 0.
  double gpu_ms() const;
  /// "prores_aw (prores HQ) yuv422p10le in mov" for the log.
  std::string describe() const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit Recorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
