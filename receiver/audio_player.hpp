// SPDX-License-Identifier: Apache-2.0
// The sound of --display: one audio track played through an SDL2 audio device, and the clock
// the window paces its picture by.
//
// Samples go from the stream's writer thread (play()) through the converter (rdmavideo/av/
// audio_converter.hpp: interleaved float at the device's rate and channels) into a queue that
// SDL's audio thread drains. Playback starts once the queue holds the target depth (100 ms plus
// a positive --audio-delay); a queue that ran dry is filled with silence back to the target
// before the next samples, so a stall costs a gap, never a lasting loss of sync.
//
// The clock: each time SDL takes a buffer, the pts of its first sample is noted with the time.
// What is heard now is taken to be the buffer before that one (SDL hands the device a buffer
// while it plays the last), advancing with time but never past the buffer taken; clock() adds
// --audio-delay. So the picture follows what is heard, as a player's does.
//
// Following the sender's clock: the sender's samples come at its clock's pace, the device
// takes them at its own; a sender 0.1% fast grows the queue by 0.6 s in ten minutes. After
// each chunk the queue's depth (smoothed) is compared with the target, and the converter is
// asked to play a few samples more or fewer (libswresample's compensation, at most 2%: a
// sound card is within 0.01% of its rate, SDL's disk driver about 1% slow),
// which keeps the depth and so the latency where it should be. A jump of the sender's pts
// by more than a second either way (a restarted source) empties the queue and starts again.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::recv_cli {

class AudioPlayer {
 public:
  struct Stats {
    uint64_t chunks = 0;        ///< chunks played
    uint64_t underruns = 0;     ///< buffers SDL found the queue too short for, after the start
    uint64_t gaps_ms = 0;       ///< silence put in: gaps in the sender's pts and refills
    uint64_t dropped_ms = 0;    ///< samples dropped: overlaps, and a queue far too deep
    uint64_t restarts = 0;      ///< jumps of the pts that started the queue again
    double latency_ms = 0;      ///< the queue's smoothed depth plus SDL's buffer
    double correction_ppm = 0;  ///< the compensation now: + plays slower (the queue grows)
  };

  /// Opens the default audio device for `format` (SDL's audio subsystem must be initialised).
  /// `delay_ns`: --audio-delay (positive: the sound comes later than the picture).
  static Result<std::unique_ptr<AudioPlayer>> open(const proto::AudioStart& format,
                                                   int64_t delay_ns);
  ~AudioPlayer();
  AudioPlayer(const AudioPlayer&) = delete;
  AudioPlayer& operator=(const AudioPlayer&) = delete;

  /// One thread: samples in the track's format, the first at the sender's `pts_ns`.
  void play(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data);
  /// Any thread: the pts the picture should show now (what is heard, plus --audio-delay), or
  /// nullopt before playback has started.
  std::optional<int64_t> clock() const;
  Stats stats() const;
  /// "48000 Hz stereo on pulseaudio (f32p 48000 Hz 2 ch -> ...)" for the log.
  const std::string& describe() const;

 private:
  struct Impl;
  explicit AudioPlayer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::recv_cli
