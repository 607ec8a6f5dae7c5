// SPDX-License-Identifier: Apache-2.0
// The composite (rdmavideo-recv --composite, --layout): every stream a tile of one canvas,
// produced at the canvas's own rate and handed to one StreamWriter, the writer every stream
// uses, so the canvas is written raw, recorded, piped or shown as a stream would be.
//
// Each stream's sink is a tile: frame() copies the frame into one of the tile's three buffers
// and lets the ring slot go at once, so the sender is never slowed. Where the canvas is drawn
// by the CPU the copy is the frame already scaled to its picture in the canvas's format, on
// its stream's connection thread: a frame much larger than its tile costs its own stream,
// never the canvas's thread (which then only copies it) or the other tiles. Each frame has a time
// on the canvas's clock (its pts laid on the canvas's clock by the tile's TileClock, which follows
// the frames' arrivals). The
// compositor's thread wakes once a canvas period: for each tile it takes the newest frame whose
// time is at least a period past, places it in the tile's rectangle (aspect ratio kept) and
// labels it with the stream's name. Showing frames a period late by their own
// times, not as they happen to arrive, lets a stream at the canvas's rate show every frame
// once despite network jitter; a tile with no new frame keeps the last one (a repeat), and a
// stream faster than the canvas is sampled. A stream that ends leaves a "no signal" tile with its
// name, which the next stream to arrive may take. The canvas starts with the first frame of any
// stream and never stops while the receiver runs; a tick whose canvas cannot be handed on in time
// (the writer is behind, or composing took longer than a period) is late, counted, and skipped.
//
// Sound: the canvas carries one track, 48 kHz stereo float, from the first audio track of the
// stream in tile CompositeOptions::audio_tile (1 by default; 0: no track), converted to it
// (libswresample) and laid on the canvas's clock one packet after another (TileClock), each
// resampled a little toward where its picture of the same instant is shown: its time on the
// canvas, plus how long after their times its frames are shown (smoothed, taken again only
// when it moves by a quarter period), so its sound stays with its picture as it was sent and
// a sender whose clock drifts against the receiver's is followed without a gap or a click. A stream
// that leaves the tile leaves silence; the next one's sound follows. With audio_mix
// every tile's first track is placed so on the canvas's clock, each in a buffer of its own, and the
// compositor's thread mixes (libavfilter's amix) what is 200 ms old at each tick: a track whose
// samples come later than that, or not at all, is silence there. The track is announced before the
// canvas's first frame, so a recording always has it.
//
// Tiles must be live: a sender that sends as fast as the receiver takes (a file without
// --realtime) would run through its input at the speed of the canvas's copies, so such a
// stream is refused, naming why.
//
// Threads: make_sink() on the service's connection threads, the tiles' calls on their
// streams' connection threads, report() on any thread, stop() once, on the main thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rdmavideo/av/audio_mixer.hpp"
#include "rdmavideo/media/composite_layout.hpp"
#include "rdmavideo/media/engine_options.hpp"
#include "rdmavideo/media/monitor.hpp"
#include "rdmavideo/media/stream_writer.hpp"
#include "rdmavideo/media/tile_clock.hpp"
#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::media {

class CompositeCanvas;

/// What the composite did, for the status line, --stats-json and the metrics.
struct CompositeReport {
  struct Tile {
    std::string name;         ///< the stream it shows or showed last; empty: never had one
    uint64_t stream = 0;      ///< that stream's number
    bool live = false;        ///< a stream is in it now
    uint64_t received = 0;    ///< frames the tile's streams delivered
    uint64_t composited = 0;  ///< of them, scaled into the canvas
    uint64_t sampled =
        0;  ///< let go unseen: a newer one was due first, or all three buffers were full
    uint64_t repeats = 0;        ///< canvas frames that showed its previous frame again
    uint64_t audio_samples = 0;  ///< samples of its sound the canvas carried (the canvas's rate)
    uint64_t uploads = 0;        ///< frames in host memory copied into a canvas in GPU memory
    uint64_t downloads = 0;      ///< frames in GPU memory copied into a canvas in host memory
    uint64_t audio_placed_again = 0;  ///< sound packets placed where they belong, not following on
    double audio_error_ms = 0;        ///< the sound's distance from where it belongs (+: early)
    uint64_t stalls =
        0;  ///< times its stream sent no frame for a while and it was marked "NO FRAMES"
  };
  uint32_t width = 0, height = 0;
  std::string pix_fmt;
  std::string frame_rate;
  std::string memory;       ///< where the canvas is: "host", "cuda:0"
  uint64_t frames = 0;      ///< canvas frames handed to the writer
  uint64_t late = 0;        ///< ticks skipped: the writer was behind, or composing took too long
  uint32_t audio_tile = 0;  ///< the tile whose sound the canvas carries; 0: none (or mix)
  bool audio_mix = false;   ///< every tile's sound, mixed
  std::vector<Tile> tiles;
  nlohmann::json json() const;
};

class Compositor {
 public:
  /// The canvas and its writer (options.writer; `monitor`, where not null, shows the canvas)
  /// ready; the clock starts with the first frame of any stream.
  static Result<std::unique_ptr<Compositor>> start(const CompositeOptions& options,
                                                   Monitor* monitor,
                                                   std::shared_ptr<StreamOutput> output);
  ~Compositor();
  Compositor(const Compositor&) = delete;
  Compositor& operator=(const Compositor&) = delete;

  /// A tile for a newly admitted stream; `unsupported` for a stream that is not live, or
  /// `resource` where no tile is free for it.
  Result<std::unique_ptr<StreamSink>> make_sink(const StreamInfo& info);
  /// Ends the canvas: the thread stops, the writer finishes (a recording is finalised).
  Result<void> stop();
  /// Stops the canvas at the receiver's end, its recording finalised, and says in the log
  /// what it made (written to `output`'s path); what failed it, if anything.
  std::optional<Error> finish(StreamOutput& output);
  /// Not nullopt once the canvas's writer failed (the disk, the encoder).
  std::optional<Error> failure() const;
  CompositeReport report() const;

  struct Tile;
  class TileSink;

 private:
  Compositor(CompositeOptions options, std::unique_ptr<CompositeCanvas> canvas,
             CompositeLayout layout);
  void run();
  void compose(Tile& tile, int64_t now_ns);
  void deliver(size_t tile, FrameLease frame);
  Result<void> charge(Tile& tile, size_t frame_bytes, size_t source_bytes);
  std::shared_ptr<const proto::StreamStart> held_format(
      Tile& tile, const std::shared_ptr<const proto::StreamStart>& format);
  void ended(size_t tile);
  void audio_started(size_t tile, const AudioTrack& track);
  bool audio(size_t tile, AudioPacket packet);
  void mix_audio(int64_t now_ns);
  bool hand_on(uint64_t sequence, int64_t pts_ns);

  const CompositeOptions options_;
  std::unique_ptr<CompositeCanvas> canvas_;  // compositor thread only, once started
  CompositeLayout layout_;
  std::shared_ptr<const proto::StreamStart> format_;  // the canvas's, as its frames carry it
  int64_t period_ns_ = 0;                             // one canvas frame
  std::unique_ptr<StreamWriter> writer_;

  class Pool;
  std::shared_ptr<Pool> pool_;  // buffers the canvas is handed to the writer in

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Tile>> tiles_;  // by layout tile; their state under mu_
  bool started_ = false;                      // under mu_: a first frame has arrived
  std::chrono::steady_clock::time_point
      origin_{};                            // under mu_: the canvas's time 0, that frame's arrival
  std::optional<AudioTrack> canvas_track_;  // the canvas's sound, announced to the writer
  std::unique_ptr<av::AudioMixer>
      mixer_;                 // --composite-audio mix: set at start, used by the compositor thread
  bool copy_failed_ = false;  // compositor thread: handing the canvas on failed once, said
  bool mix_failed_ = false;   // compositor thread: mixing failed once, the canvas goes on silent
  int64_t mixed_upto_ = 0;    // under mu_ (written by the compositor thread): canvas samples mixed
  int64_t mixed_pts_ns_ = 0;  // compositor thread: the next mixed packet's pts
  bool stopping_ = false;     // under mu_
  uint64_t frames_ = 0;       // under mu_
  uint64_t late_ = 0;         // under mu_
  std::thread thread_;
};

}  // namespace rdmavideo::media
