// SPDX-License-Identifier: Apache-2.0
// StreamWriter: rdmavideo-recv's sink for one stream (a StreamSink of the ReceiverService).
//
// frame() queues the lease and returns at once; the writer's own thread verifies each frame
// (--verify), writes it raw or records it (--output), hands it to the display when this
// stream owns the window, and drops the lease, which returns the slot's credit. The queue
// never holds more than the ring's slots, so a slow disk holds the sender back instead of
// growing memory. The output is opened on the first frame (a template's {date} and {time}
// are that frame's) and closed in finish(), which finalises a recording whatever happened.
// A failed write makes failure() report it; the service then ends this stream alone.
//
// What the writer found is kept in a StreamOutput shared with the receiver's summary, so it
// outlives the writer.
//
// Audio: tracks, samples and track ends go through the same queue as the frames, so the
// writer sees them in the order they arrived. A recording records every track that started
// before its first frame (the sender starts its tracks before its first frame); samples that
// come before the first frame wait for it (bounded by the stream's audio queue, in the memory
// budget). Raw outputs and .y4m hold no audio: with --audio-output each track goes to a .wav
// beside them (placed as a recording's tracks are, from the first frame written); without it
// a stream's audio is dropped, with one warning, and counted, unless the stream owns the
// window, which plays its first track.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "rdmavideo/av/audio_file.hpp"
#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/media/engine_options.hpp"
#include "rdmavideo/media/monitor.hpp"
#include "rdmavideo/media/raw_output.hpp"
#include "rdmavideo/media/recording.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo::media {

/// What one stream's writer did, for the status line and the summary.
struct StreamOutput {
  std::atomic<uint64_t> checksum_failures{0};
  std::atomic<uint64_t> written{0};  ///< frames written or recorded
  std::atomic<double> encode_speed{0};
  std::atomic<double> encode_gpu_ms{0};  ///< the GPU's time for the last frame encoded there
  std::atomic<double> cpu_seconds{0};    ///< the writer thread's CPU time, once finished
  std::atomic<uint64_t> downloads{0};    ///< frames in GPU memory copied to the host here
  mutable std::mutex mu;
  std::string path;  ///< under mu: the file written, once opened
  /// under mu: where --verify checks frames: "gpu" (a kernel, in place), "download" (a
  /// frame in GPU memory copied to the host first) or "host"; empty without --verify.
  std::string verify;
  /// under mu: each recorded audio track as it went, by the stream's track number (a track
  /// not recorded has `recorded` false).
  struct Track {
    bool recorded = false;
    uint32_t sample_rate = 0;
    uint64_t silence = 0;  ///< samples of silence filling gaps and padding the end
    uint64_t trimmed = 0;  ///< samples cut: before the first frame, overlaps, past the last
  };
  std::vector<Track> audio;
};

class StreamWriter final : public StreamSink {
 public:
  /// `monitor` is null unless this stream owns the monitor (the window); `release_monitor` is
  /// called when the stream ends so another may take it. Fails, naming the call, when the writer
  /// cannot have what a stop needs to reach it (its eventfd, under descriptor exhaustion).
  static Result<std::unique_ptr<StreamWriter>> create(const WriterOptions& options, StreamInfo info,
                                                      std::shared_ptr<StreamOutput> output,
                                                      Monitor* monitor,
                                                      std::function<void()> release_monitor);
  ~StreamWriter() override;

  void frame(FrameLease frame) override;
  void audio_started(const AudioTrack& track) override;
  bool audio(AudioPacket packet) override;
  void audio_ended(uint32_t track) override;
  // Private to create(), which makes `abort_fd`; public for make_unique.
  StreamWriter(const WriterOptions& options, StreamInfo info, std::shared_ptr<StreamOutput> output,
               Monitor* monitor, std::function<void()> release_monitor, UniqueFd abort_fd);
  std::optional<Error> failure() const override;
  Result<void> finish(const StreamEnd& end) override;
  void abort() override;

 private:
  struct AudioEnd {
    uint32_t track;
  };
  using Item = std::variant<FrameLease, AudioTrack, AudioPacket, AudioEnd>;
  void push(Item item);
  void run();
  void handle(FrameLease& frame);
  void handle_audio(Item& item);
  void record_audio(Item& item);
  void open_audio_file(size_t index);
  void place_frame(Rational rate, int64_t pts_ns);
  void flush_pending_audio();
  bool audio_placeable() const;
  void add_track(size_t index);
  void note_audio();
  void prepare_verifier(const FrameLease& frame);
  std::optional<std::string> verify(const FrameLease& frame);
  void fail(const Error& error);
  Result<void> open_output(const FrameLease& first);
  void stop_thread();

  const WriterOptions options_;
  StreamInfo info_;
  std::string who_;  // "recv host:port "name"" for messages
  std::shared_ptr<StreamOutput> output_;
  Monitor* monitor_;
  std::function<void()> release_monitor_;

  // Writer thread only.
  std::optional<RawOutput> raw_;
  std::optional<Recording> recording_;
  RecordingMemory recording_memory_;  // the recording's in the budget, from the admission on
  bool opened_ = false;
  StreamVerifier verifier_;  // its pattern's frames in the memory budget

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;      // under mu_; frames at most the ring's slots, audio the queue's
  bool records_audio_ = false;  // the output can hold audio (a recording that is no .y4m)
  bool wav_audio_ = false;      // --audio-output: each track to a .wav beside the frames
  bool takes_audio_ = false;    // one of those, or this stream's window plays it
  bool audio_refusal_said_ = false;  // connection thread: the one warning for dropped audio

  // Writer thread only: the stream's tracks, and where each went in the recording.
  std::vector<AudioTrack> tracks_;
  std::vector<std::optional<uint32_t>> recorded_track_;      // by the stream's track number
  std::deque<AudioPacket> pending_audio_;                    // before the first frame
  std::vector<std::unique_ptr<av::AudioFile>> audio_files_;  // --audio-output, by track number
  std::optional<int64_t> first_pts_;  // with --audio-output: the first frame written, the origin
  int64_t last_pts_ = 0;              // and the last
  uint64_t first_sent_ns_ = 0;        // its send time, for the path's {date} and {time}
  Rational frame_rate_{60, 1};
  bool stopping_ = false;       // under mu_
  std::optional<Error> error_;  // under mu_: the first write failure
  UniqueFd abort_fd_;           // eventfd, readable once abort() was called
  std::thread thread_;
};

}  // namespace rdmavideo::media
