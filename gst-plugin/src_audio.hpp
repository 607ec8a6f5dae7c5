// SPDX-License-Identifier: Apache-2.0
// rdmasrc's sound: a sometimes pad audio_N for each audio track a sender starts, each pushed
// from a thread of its own, so that no pad ever waits on another.
//
// Pads are added when a track's AudioStart arrives (in the video's stream group, with the
// track's caps, a time segment and its title), get EOS and are removed when it ends, and
// no-more-pads is signalled at the first picture, when the tracks a sender starts before it
// are known. The stream's connection thread places every chunk on the stream's time line
// (StreamTimeline) and queues it for its pad; the pad's thread pushes what is queued. A muxer
// downstream waits on all its inputs at once, so a pad that waited on another (one streaming
// thread pushing every pad in arrival order) would let one full queue stop them all.
//
// Samples go downstream without a copy: a buffer wraps the received packet, whose place in
// the stream's audio queue (counted in the memory budget) is held until downstream drops it.
// A track's buffers are contiguous: a hole (the sender paused it, or a track silent behind
// the pictures) is filled with silence, flagged GAP, so muxers that count samples (qtmux's
// PCM) and those that wait for every input (matroskamux) both move on; an overlap is cut.
// What was filled, cut or moved is counted (stats) and said once a track.
#pragma once

#include <gst/audio/audio.h>
#include <gst/gst.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/stream_timeline.hpp"

namespace rdmavideo::gst {

class SrcAudioPads {
 public:
  /// `chosen`: the track numbers to give pads; nullopt for all.
  SrcAudioPads(GstElement* element, GstPad* video_pad, std::optional<std::vector<uint32_t>> chosen);
  ~SrcAudioPads();
  SrcAudioPads(const SrcAudioPads&) = delete;
  SrcAudioPads& operator=(const SrcAudioPads&) = delete;

  /// Whether a track gets a pad (the `tracks` property). Any thread.
  bool chosen(uint32_t track) const;

  // The stream's connection thread:
  /// A chosen track started: its pad, with stream-start, caps, segment and title, and its
  /// thread. False (an error posted) where its format has no GStreamer caps.
  bool start(const AudioTrack& track);
  /// A packet of a started track, placed: the silence before it and what of it is kept.
  void push(AudioPacket packet, const StreamTimeline::Sound& placed);
  /// Silence owed to a track that has said nothing behind the pictures.
  void silence(const StreamTimeline::Silence& owed);
  /// The track ended: EOS after what is queued, then its pad goes.
  void end(uint32_t track);
  /// The first picture: no-more-pads.
  void first_picture();

  // Any thread:
  /// The stream ended (or the application sent EOS): EOS on every pad after what is queued;
  /// what comes after is not pushed. The pads stay, for downstream to finish.
  void eos();
  /// Stops every pad's thread and removes every pad (the element stops).
  void remove_all();
  /// Whether a track has a pad now.
  bool has_pads() const;

  /// What the pads were given besides the sender's samples: silence in holes (ms), and
  /// samples dropped because a pad's queue was full.
  uint64_t silence_ms() const { return silence_ns_.load() / 1'000'000; }
  uint64_t dropped_samples() const { return dropped_samples_.load(); }

  /// Buffers a pad may have queued (its downstream not taking them) before the oldest go.
  static constexpr size_t kMaxQueued = 2000;

 private:
  struct Pad;
  std::shared_ptr<Pad> find(uint32_t track) const;  // under mutex_
  void queue(Pad& pad, GstMiniObject* item);
  void run(Pad& pad);  // a pad's thread
  GstBuffer* silence_buffer(const Pad& pad, uint64_t samples) const;
  void queue_silence(Pad& pad, int64_t at_ns, uint64_t samples);
  void join_left();  // under mutex_: the threads of pads that have gone

  GstElement* element_;
  GstPad* video_pad_;
  std::optional<std::vector<uint32_t>> chosen_;
  mutable std::mutex mutex_;                // pads_ and left_
  std::vector<std::shared_ptr<Pad>> pads_;  // the tracks that have pads
  std::vector<std::shared_ptr<Pad>> left_;  // ended: their threads remove them, then end
  std::atomic<bool> no_more_pads_{false};
  bool eos_ = false;
  std::atomic<uint64_t> silence_ns_{0};
  std::atomic<uint64_t> dropped_samples_{0};
};

}  // namespace rdmavideo::gst
