// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv's view of its streams: it makes each stream's writer (the service's sink
// factory), gives the display to one stream at a time, and turns the service's reports and
// the writers' outputs into the status line, the summary lines and the --stats-json summary.
//
// make_sink() and ended() are called on the streams' connection threads; status_line(),
// summary() and all_ok() on the main thread. Everything shared is under a mutex.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "display.hpp"
#include "options.hpp"
#include "rdmavideo/media/compositor.hpp"
#include "rdmavideo/media/stream_writer.hpp"
#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::recv_cli {

class Streams {
 public:
  /// With `compositor`, every stream is a tile of it (and the display is the canvas's).
  Streams(const Options& options, Display* display, std::string listener_kind,
          media::Compositor* compositor = nullptr);

  /// The SinkFactory: a writer for a newly admitted stream, or its tile of the composite.
  Result<std::unique_ptr<StreamSink>> make_sink(const StreamInfo& info);
  /// A stream's sink has finished: logs its summary line.
  void ended(const StreamReport& report);
  /// The service folded an ended stream's report into its totals: so does this, forgetting
  /// the stream's output, so nothing kept grows with the streams served.
  void folded(const StreamReport& report);
  /// Frames of every stream, folded ones too, that failed --verify.
  uint64_t checksum_failures() const;
  /// Whether this receiver's output can take a stream of `format` (a recording's encoder):
  /// the check the service asks of every StreamStart (ReceiverServiceOptions::format_check).
  static Result<void> check_format(const Options& options, const proto::StreamStart& format);

  /// "[recv] 2 streams: frames ... | cam1 59.9 fps ... | cam2 ...", from rates since the
  /// last call; empty before the first stream.
  std::string status_line(const std::vector<StreamReport>& reports,
                          const FoldedStreams& folded = {});
  /// The `audio` of a stream in the summary: per track the service's counters and, when
  /// recorded, the recording's (gaps filled, trimmed).
  static nlohmann::json audio_json(const std::vector<AudioReport>& tracks,
                                   const std::vector<media::StreamOutput::Track>& recorded);
  /// The --stats-json summary: totals over every stream at the top level (the format keys
  /// describe the first stream), and `streams`, a summary per stream.
  nlohmann::json summary(const std::vector<StreamReport>& reports,
                         const FoldedStreams& folded = {}) const;
  /// The one-line human summary of the totals.
  std::string total_text(const std::vector<StreamReport>& reports,
                         const FoldedStreams& folded = {}) const;
  /// Every stream ended well (a stream whose frames failed --verify did not).
  static bool all_ok(const std::vector<StreamReport>& reports, const FoldedStreams& folded = {});
  /// The composite's report, where the streams are its tiles.
  std::optional<media::CompositeReport> composite() const {
    if (!compositor_) return std::nullopt;
    return compositor_->report();
  }
  /// What stream `number`'s writer did so far; null for a stream never admitted.
  std::shared_ptr<media::StreamOutput> output_of(uint64_t number) const;

 private:
  struct Rates {
    uint64_t frames = 0;
    uint64_t bytes = 0;
  };
  stats::TransferStats totals(const std::vector<StreamReport>& reports,
                              const FoldedStreams& folded) const;

  const Options& options_;
  const media::WriterOptions writer_options_;  // each stream's writer's
  Display* display_;
  media::Compositor* compositor_;
  std::string listener_kind_;  // "tcp+verbs": the summary's transport before any stream

  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<media::StreamOutput>>
      outputs_;                            // by stream number, until folded
  uint64_t folded_checksum_failures_ = 0;  // of the streams whose outputs were folded
  bool display_taken_ = false;             // a running stream shows in the window
  double process_cpu_at_first_ = 0;        // process CPU when the first stream was admitted
  std::chrono::steady_clock::time_point last_status_{};
  std::map<uint64_t, Rates> last_rates_;        // main thread only
  std::optional<uint64_t> last_canvas_frames_;  // main thread only: at the last status line
};

// The receiver service the options ask for, its streams' sinks and reports `streams`'.
ReceiverServiceOptions service_options(const Options& o, Streams& streams);

}  // namespace rdmavideo::recv_cli
