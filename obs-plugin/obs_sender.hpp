// SPDX-License-Identifier: Apache-2.0
// The OBS output's sending side, apart from libobs' output object so it can be driven by
// synthetic video_data/audio_data in tests: OBS's canvas and mix tracks into a
// SenderSession in non-blocking mode.
//
// OBS calls video() on its video thread and audio() on its audio thread. Neither ever waits:
// video() takes a pool buffer without blocking (none free: the frame is dropped and
// counted), copies OBS's planes into it and hands it to the session's sending threads;
// audio() copies the track's samples into the session's queue. Times are OBS's (one clock for
// video and audio, in ns), counted from the first frame: audio from before it is cut, so the
// recording starts with both. A track's samples are placed by their count from the first
// audio chunk's timestamp (see audio(): OBS 29's later chunks of a second mix are misdated).
#pragma once

#include <media-io/audio-io.h>
#include <media-io/video-io.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "obs_format.hpp"
#include "rdmavideo/audio_placement.hpp"
#include "rdmavideo/sender_session.hpp"

namespace rdmavideo::obs {

/// OBS has six mix tracks.
inline constexpr size_t kMixTracks = 6;

/// The output's settings, checked.
struct OutputSettings {
  std::vector<Endpoint> destinations;
  TransportKind transport = TransportKind::automatic;
  std::string key_file;
  std::string name = "OBS";
  uint32_t tracks = 1;  ///< bit i: OBS's mix track i + 1
  bool reconnect = false;

  /// From the settings' text, with an error naming the setting that is wrong.
  static Result<OutputSettings> parse(std::string_view destinations, std::string_view transport,
                                      std::string key_file, std::string name, int64_t tracks,
                                      bool reconnect);
  /// "host:port, host:port".
  std::string destinations_text() const;
};

/// One destination's counters for the dialog and obs-websocket.
struct DestinationStats {
  std::string endpoint, transport, state;
  uint64_t frames = 0, dropped = 0, bytes = 0;
  double gbps = 0;  ///< over the last stats() interval
};

class ObsSender {
 public:
  /// One mix track to send: OBS's index (0..5) and its stream.
  struct Track {
    size_t mix = 0;
    proto::AudioStart format;
  };
  /// Connects (blocking: call it off OBS's UI thread), starts the stream in `plan`'s format
  /// at the canvas' size and rate, and adds `tracks`. `stop`, once true, ends a connect or a
  /// wait at once; the sender keeps it as long as its session.
  static Result<std::unique_ptr<ObsSender>> start(
      const OutputSettings& settings, const video_output_info& canvas, const VideoPlan& plan,
      const std::vector<Track>& tracks, std::shared_ptr<const std::atomic<bool>> stop = nullptr,
      std::function<void(const Error&)> on_failure = {});
  ~ObsSender();
  ObsSender(const ObsSender&) = delete;
  ObsSender& operator=(const ObsSender&) = delete;

  /// OBS's video thread: a frame in the plan's format (after OBS's conversion). Never waits.
  void video(const video_data& frame);
  /// OBS's audio thread: `frames` float planar samples of mix track `mix`. Never waits.
  void audio(size_t mix, const audio_data& data);
  /// Sends what is in flight, EndOfStream, and closes. Idempotent.
  Result<void> stop();
  bool stopped() const { return stopped_.load(); }

  /// Frames OBS handed over that did not go: no free buffer here, no destination took it (no
  /// credit, or none up), or handed while the output stops.
  uint64_t dropped_frames() const;
  /// Frames handed to the session.
  uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }
  /// Payload bytes sent, all destinations together.
  uint64_t total_bytes() const;
  /// Why the session ended, if it did (every destination lost).
  std::optional<Error> failure() const;
  std::vector<DestinationStats> destinations() const;
  const proto::StreamStart& format() const { return format_; }
  std::string describe() const;
  /// Nanoseconds OBS's video thread spent in video(), in total (the render-to-send cost).
  uint64_t video_callback_ns() const { return video_ns_.load(std::memory_order_relaxed); }
  /// The CPU time of that thread in video(), in total.
  uint64_t video_callback_cpu_ns() const { return video_cpu_ns_.load(std::memory_order_relaxed); }

 private:
  ObsSender() = default;

  std::shared_ptr<const std::atomic<bool>> stop_;  // the session's stop flag: outlives it
  std::unique_ptr<SenderSession> session_;
  proto::StreamStart format_;
  std::array<std::optional<uint32_t>, kMixTracks> track_of_mix_{};  // session track numbers
  std::array<uint32_t, kMixTracks> channels_{}, rates_{};
  std::array<std::vector<std::byte>, kMixTracks> packed_;  // audio thread only
  std::array<uint64_t, kMixTracks> samples_seen_{};        // audio thread only
  int64_t audio_base_ns_ = -1;  // OBS timestamp of the first audio chunk (audio thread only)
  // Each mix's sound on the picture's timeline (audio thread only), from its first chunk after
  // the first frame.
  std::array<std::optional<AudioPlacement>, kMixTracks> placement_;
  std::atomic<int64_t> origin_ns_{-1};  // OBS timestamp of the first frame
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> no_buffer_{0};  // of the dropped, those with no pool buffer free
  std::atomic<uint64_t> late_{0};       // handed while the output stops: not sent, dropped
  std::atomic<uint64_t> video_ns_{0};
  std::atomic<uint64_t> video_cpu_ns_{0};
  uint64_t next_sequence_ = 0;  // video thread only
  std::atomic<bool> stopped_{false};
  // The callbacks hold it shared, never waiting (try_lock_shared: while stop() holds it they
  // drop what they have); stop() holds it alone, so the session is never used while it ends.
  // OBS's video and audio threads never contend with each other for it.
  std::shared_mutex running_;
};

}  // namespace rdmavideo::obs
