// SPDX-License-Identifier: Apache-2.0
// The composite (rdmavideo-recv --composite, --layout): every stream a tile of one canvas,
// produced at the canvas's own rate and handed to one StreamWriter, the writer every stream
// uses, so the canvas is written raw, recorded, piped or shown as a stream would be.
//
// Each stream's sink is a tile: frame() keeps the newest lease and lets the one before go, so
// a ring slot is held for at most one canvas period and the sender is never slowed. The
// compositor's thread wakes once a canvas period: it scales each tile's newest frame into its
// rectangle (libswscale, aspect ratio kept), labels it with the stream's name and lets the
// slot go; a tile with no new frame keeps the last one (a repeat), and a stream faster than
// the canvas is sampled. A stream that ends leaves a "no signal" tile with its name, which the
// next stream to arrive may take. The canvas starts with the first frame of any stream and
// never stops while the receiver runs; a tick whose canvas cannot be handed on in time (the
// writer is behind, or composing took longer than a period) is late, counted, and skipped.
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

#include "composite_layout.hpp"
#include "display.hpp"
#include "options.hpp"
#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "stream_writer.hpp"

namespace rdmavideo::receiver {

/// What the composite did, for the status line, --stats-json and the metrics.
struct CompositeReport {
  struct Tile {
    std::string name;         ///< the stream it shows or showed last; empty: never had one
    uint64_t stream = 0;      ///< that stream's number
    bool live = false;        ///< a stream is in it now
    uint64_t received = 0;    ///< frames the tile's streams delivered
    uint64_t composited = 0;  ///< of them, scaled into the canvas
    uint64_t sampled = 0;     ///< let go unseen: a newer frame came before the next tick
    uint64_t repeats = 0;     ///< canvas frames that showed its previous frame again
  };
  uint32_t width = 0, height = 0;
  std::string pix_fmt;
  std::string frame_rate;
  uint64_t frames = 0;  ///< canvas frames handed to the writer
  uint64_t late = 0;    ///< ticks skipped: the writer was behind, or composing took too long
  std::vector<Tile> tiles;
  nlohmann::json json() const;
};

class Compositor {
 public:
  /// The canvas and its writer (options.output, options.display) ready; the clock starts
  /// with the first frame of any stream.
  static Result<std::unique_ptr<Compositor>> start(const Options& options, Display* display,
                                                   std::shared_ptr<StreamOutput> output);
  ~Compositor();
  Compositor(const Compositor&) = delete;
  Compositor& operator=(const Compositor&) = delete;

  /// A tile for a newly admitted stream; `unsupported` for a stream that is not live, or
  /// `resource` where no tile is free for it.
  Result<std::unique_ptr<StreamSink>> make_sink(const StreamInfo& info);
  /// Ends the canvas: the thread stops, the writer finishes (a recording is finalised).
  Result<void> stop();
  /// Not nullopt once the canvas's writer failed (the disk, the encoder).
  std::optional<Error> failure() const;
  CompositeReport report() const;

  struct Tile;
  class TileSink;

 private:
  Compositor(const Options& options, std::unique_ptr<av::Canvas> canvas, CompositeLayout layout);
  void run();
  void compose(Tile& tile);
  void deliver(size_t tile, FrameLease frame);
  void ended(size_t tile);
  bool hand_on(uint64_t sequence, int64_t pts_ns);

  const Options& options_;
  std::unique_ptr<av::Canvas> canvas_;  // compositor thread only, once started
  CompositeLayout layout_;
  std::shared_ptr<const proto::StreamStart> format_;  // the canvas's, as its frames carry it
  std::unique_ptr<StreamWriter> writer_;

  class Pool;
  std::shared_ptr<Pool> pool_;  // buffers the canvas is handed to the writer in

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Tile>> tiles_;  // by layout tile; their state under mu_
  bool started_ = false;   // under mu_: a first frame has arrived
  bool stopping_ = false;  // under mu_
  uint64_t frames_ = 0;    // under mu_
  uint64_t late_ = 0;      // under mu_
  std::thread thread_;
};

}  // namespace rdmavideo::receiver
