// SPDX-License-Identifier: Apache-2.0
// One audio track of a recording: its encoder (PCM s24le in .mov and .nut, FLAC up to 8
// channels in .mkv and PCM above, AAC in .mp4), the conversion of the sender's samples into
// what the encoder takes (libswresample: sample format and layout only, never the rate), and
// where each sample goes in the file.
//
// Placement: samples are placed by their pts on the video's timeline, the file's origin
// being the first frame's pts (with the recorder's pts repairs applied as to video: the
// caller passes the offset they add). Samples before the origin are trimmed; a gap is filled
// with silence; a small overlap is dropped; nothing that follows is ever shifted. A step
// backwards or a jump of more than kMostGapNs (a seek, a restarted source, a hostile pts)
// continues where the track was, as the video does, counted and logged the first time: a
// gap is never more silence than that. Silence is encoded as it is made, so a gap never sits
// in memory whole. Samples are encoded only up to the video's end plus a frame's
// worth of lead (the rest waits, at most kMostLead), and finish() pads or trims the track to
// the video's end, so the file's tracks and picture last as long as each other.
#pragma once

extern "C" {
#include <libavutil/audio_fifo.h>
#include <libswresample/swresample.h>
}

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "av_util.hpp"

namespace rdmavideo::av {

struct AudioTrackStats {
  uint64_t samples = 0;  ///< samples per channel received
  uint64_t written = 0;  ///< samples per channel encoded into the file, silence included
  uint64_t silence = 0;  ///< of them, silence filling gaps and padding the end
  uint64_t trimmed = 0;  ///< samples dropped: before the origin, overlaps, past the end
  uint64_t jumps = 0;    ///< steps backwards or jumps over kMostGapNs, continued in place
};

class AudioTrack {
 public:
  /// Writes a packet of this track's stream into the file (the recorder's interleaving).
  using WritePacket = std::function<Result<void>(AVPacket* packet)>;

  /// Which encoder `muxer` gets for `format` ("pcm_s24le", "flac", "aac"); an error names a
  /// layout the container's encoder cannot take (AAC in .mp4).
  static Result<const AVCodec*> encoder_for(const std::string& muxer,
                                            const proto::AudioStart& format);
  /// Adds the track's stream to `output` (before its header is written).
  static Result<std::unique_ptr<AudioTrack>> open(AVFormatContext* output, const std::string& muxer,
                                                  const proto::AudioStart& format, std::string who);
  ~AudioTrack();

  /// Samples as the sender sent them (the track's format), the first at `pts_ns`;
  /// `since_origin_ns` is pts_ns on the file's timeline: minus the origin, plus the repairs.
  /// `video_end_ns` is where the picture ends so far, on the same timeline.
  Result<void> write(int64_t since_origin_ns, uint32_t samples, std::span<const std::byte> data,
                     int64_t video_end_ns, const WritePacket& out);
  /// The picture moved on: samples held back for it may go now.
  Result<void> video_moved(int64_t video_end_ns, const WritePacket& out);
  /// The sender ended the track (AudioEnd): from now on it is silence as long as the picture.
  void end() { ended_ = true; }
  /// Pads (silence) or trims the track to the video's end and drains the encoder.
  Result<void> finish(int64_t video_end_ns, const WritePacket& out);

  AVStream* stream() const { return stream_; }
  const AudioTrackStats& stats() const { return stats_; }
  /// "pcm_s24le 48000 Hz stereo "Track 1"" for the log.
  std::string describe() const;

  /// A lead that long beyond the picture is encoded anyway: a picture that stalls never holds
  /// more audio than this.
  static constexpr int64_t kMostLeadNs = 2'000'000'000;
  /// The longest gap a file keeps, in a picture's pts (the recorder's and the .wav writer's
  /// repairs) and in a track's: further ahead than this is a discontinuity, continued in
  /// place; and no recorded frame lasts longer (slower frame rates are refused).
  static constexpr int64_t kMostGapNs = 10'000'000'000;

 private:
  AudioTrack() = default;
  // Samples into the FIFO at next_ (write() decided where they go), converted.
  Result<void> place(uint32_t samples, const uint8_t* const* planes);
  // `samples` of silence into the FIFO, whole encoder frames encoded up to `encodable` as it
  // goes, so that a long gap is never in memory at once.
  Result<void> silence(int64_t samples, int64_t encodable, const WritePacket& out);
  // The first discontinuity is logged; all are counted.
  void jumped(const char* what, int64_t samples);
  // Encodes whole encoder frames from the FIFO up to `until` samples (the last one short
  // only at the end), and writes what comes out.
  Result<void> encode_until(int64_t until, bool at_end, const WritePacket& out);
  Result<void> drain(const WritePacket& out);
  int64_t samples_of(int64_t ns) const;

  std::string who_;
  proto::AudioStart format_;
  AVStream* stream_ = nullptr;
  UniqueCodecContext encoder_;
  UniqueSwr swr_;
  UniqueAudioFifo fifo_;
  UniqueFrame frame_;
  UniquePacket packet_;
  int frame_samples_ = 1024;  // per encoder frame
  int64_t next_ = 0;          // file position (samples) of the next sample into the FIFO
  int64_t encoded_ = 0;       // file position of the next sample out of the FIFO
  AudioTrackStats stats_;
  bool ended_ = false;
};

}  // namespace rdmavideo::av
