// SPDX-License-Identifier: Apache-2.0
// An audio input on its own, as ffmpeg opens one with -f FORMAT -i URL: a capture device
// (alsa, pulse), a filter graph (lavfi), or a file's audio. rdmavideo-send's --audio-f and
// --audio-i: the track beside a picture from elsewhere.
//
// read() blocks until the input has samples (a device delivers them as they are captured)
// and gives them in the track's format: the decoder's where the protocol carries it, else
// converted by libswresample to float planar. Each carries the time it was read (the
// sender's steady clock) and its place in the input's own sample count, so the caller maps
// the input's clock onto the video's. One thread calls an AudioCapture.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// How a front end names the settings an AudioCapture's messages speak of (the CLI: its flags).
struct AudioCaptureSettingNames {
  std::string input = "the audio input";
  std::string format = "the audio input's format";
};

class AudioCapture {
 public:
  struct Chunk {
    uint64_t first_sample = 0;                      ///< samples the input gave before this chunk
    uint32_t samples = 0;                           ///< per channel
    std::vector<std::byte> data;                    ///< in format() (planar: each channel in turn)
    std::chrono::steady_clock::time_point read_at;  ///< when read() had it
  };

  static Result<std::unique_ptr<AudioCapture>> open(const std::string& url,
                                                    const std::string& format,
                                                    const AudioCaptureSettingNames& names = {});
  ~AudioCapture();
  AudioCapture(const AudioCapture&) = delete;
  AudioCapture& operator=(const AudioCapture&) = delete;

  /// The track, named after the input.
  const proto::AudioStart& format() const;
  /// A device delivers samples as they are captured; anything else (lavfi, a file) as fast
  /// as it is read, so its reader paces it.
  bool live() const;
  /// The next samples; nullopt at the end of the input.
  Result<std::optional<Chunk>> read();
  /// "pulse default: pcm_s16le 48000 Hz, 2 channels" for the log.
  std::string describe() const;

 private:
  struct Impl;
  explicit AudioCapture(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
