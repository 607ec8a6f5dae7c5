// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send's frames: the test pattern (rendered once into the session's buffers, one
// per phase, and stamped per frame), raw frames on stdin, or an FFmpeg input (decoded on the
// CPU or by NVDEC), filled into the session's buffers wherever they live.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "options.hpp"
#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/av/source.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo::send_cli {

class Source {
 public:
  Source(const Options& options, std::unique_ptr<av::Source> ffmpeg)
      : testsrc_(options.testsrc),
        // Live to several receivers, each phase of the pattern in two buffers: a receiver
        // that is behind holds the one it is sending, and the others' frames of that phase
        // go out in the other (SenderSession drops what a slow one has queued).
        copies_(options.realtime && options.connect.size() > 1 ? 2 : 1),
        ffmpeg_(std::move(ffmpeg)),
        memory_device_(options.memory.device) {}

  /// Buffers the session's pool needs for this source.
  uint32_t pool_buffers(const proto::StreamStart& format) const;
  /// Renders the pattern into the pool, once (uploaded, where the pool is GPU memory).
  Result<void> prepare(SenderSession& session, const proto::StreamStart& format);
  /// The buffer frame `sequence` goes in: the pattern's phase (the first of its copies no
  /// transfer reads, waiting for the first where none is free), or any free one.
  Result<FrameBuffer> buffer_for(SenderSession& session, uint64_t sequence);
  /// Fills `buffer` with frame `sequence`: false at the end of the input; an error for a
  /// truncated frame.
  Result<bool> fill(FrameBuffer& buffer, uint64_t sequence);
  /// The input's presentation time of the frame fill() gave last, where it has one.
  std::optional<int64_t> pts_ns() const { return pts_ns_; }
  /// An FFmpeg input's audio tracks (--audio), and what was decoded of them with the frames.
  std::vector<proto::AudioStart> audio_tracks() const {
    return ffmpeg_ ? ffmpeg_->audio_tracks() : std::vector<proto::AudioStart>{};
  }
  std::vector<av::DecodedAudio> take_audio() {
    return ffmpeg_ ? ffmpeg_->take_audio() : std::vector<av::DecodedAudio>{};
  }

 private:
  Result<bool> read_stdin(std::span<std::byte> buffer, uint64_t sequence);

  bool testsrc_;
  uint32_t copies_;  // testsrc: buffers holding each phase
  std::unique_ptr<av::Source> ffmpeg_;
  int memory_device_;  // --memory cuda:N
  proto::StreamStart format_;
  std::vector<std::byte> stamp_;    // testsrc: the frame's first bytes, up to the stamp's end
  size_t stamp_offset_ = 0;         // where the stamp starts (plane 0)
  std::vector<std::byte> staging_;  // a frame read for a GPU buffer
  std::optional<int64_t> pts_ns_;
};

/// Opens an FFmpeg input and returns the format it gives; nullptr for the test pattern and
/// stdin. Fills `o`'s format and decides live or not (a capture input is live unless
/// --no-drop). A build without FFmpeg fails here, the codecs layer naming what is missing.
Result<std::unique_ptr<av::Source>> open_ffmpeg(Options& o);
/// Opens --audio-i (with --audio-f): nullptr where none was given.
Result<std::unique_ptr<av::AudioCapture>> open_audio_capture(const Options& o);

}  // namespace rdmavideo::send_cli
