// SPDX-License-Identifier: Apache-2.0
// One audio track written beside raw frames (rdmavideo-recv --audio-output FILE.wav): a WAV
// file of 24-bit PCM, placed on the picture's timeline as a recording's tracks are (the
// first frame is the origin, samples before it trimmed, gaps filled with silence, the end
// padded or trimmed to the picture's), so the .wav starts with the raw file's first frame
// and lasts as long as its frames.
//
// Raw frames carry no time: where a live sender dropped frames, the raw file's picture has
// fewer frames than the sound has seconds. The .wav keeps the sender's time; a container
// (--output FILE.mov) keeps both.
//
// Lifecycle as the recorder's: open(), frame() for every frame written beside it, write()
// for the samples once the first frame is there, finish() writes the WAV's sizes and
// fsyncs. A receiver killed outright leaves a WAV whose header says no size, which FFmpeg
// and most players read to its end anyway, less at most the last 64 KiB not yet written. One thread
// calls an AudioFile. A build without FFmpeg has the same API; open() fails with `unsupported`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

class AudioFile {
 public:
  /// Creates `path` for a track of `format`. `abort_fd` as RecorderOptions::abort_fd.
  static Result<std::unique_ptr<AudioFile>> open(const std::string& path,
                                                 const proto::AudioStart& format, int abort_fd = -1,
                                                 const std::string& setting = {});
  ~AudioFile();
  AudioFile(const AudioFile&) = delete;
  AudioFile& operator=(const AudioFile&) = delete;

  /// A frame of `rate` with the sender's `pts_ns` was written beside the track: the first
  /// is the origin, and the picture now ends one frame after it.
  Result<void> frame(int64_t pts_ns, Rational rate);
  /// The track's samples as sent, the first at the sender's `pts_ns`; after the first frame.
  Result<void> write(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data);
  /// The sender ended the track: silence from here as long as the picture goes on.
  void end();
  /// Pads or trims the track to the picture's end, writes the header's sizes, closes.
  /// Idempotent.
  Result<void> finish();

  bool started() const;  ///< the first frame came
  RecordedAudio stats() const;
  const std::string& path() const;
  /// "pcm_s24le 48000 Hz stereo "Track 1"" for the log.
  std::string describe() const;

 private:
  struct Impl;
  explicit AudioFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
