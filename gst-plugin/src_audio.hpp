// SPDX-License-Identifier: Apache-2.0
// rdmasrc's sound: a sometimes pad audio_N for each audio track a sender starts, and the
// one timeline that stamps its pictures and its sound.
//
// Pads are added when a track's AudioStart arrives (in the video's stream group, with the
// track's caps and a time segment), get EOS and are removed when it ends, and no-more-pads is
// signalled at the first picture, when the tracks a sender starts before it are known. Every
// call comes from the element's streaming thread, which takes the stream's messages in the
// order they arrived, as a demuxer does: so, as after any demuxer, each branch needs a
// queue. Samples go downstream without a copy: a buffer wraps the received packet, whose
// place in the stream's audio queue (counted in the memory budget) is held until downstream
// drops it. A hole in a track's samples (the sender paused it) becomes a GAP event, and a
// track that falls silent while the pictures go on gets GAP events up to shortly behind them,
// so muxers and mixers downstream move on rather than wait: no silence is made up here.
#pragma once

#include <gst/audio/audio.h>
#include <gst/gst.h>

#include <optional>
#include <vector>

#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::gst {

/// Stamps pictures and sound on one timeline. Not live: the sender's pts, from the first
/// pts received (picture or sound). Live: the sender's pts moved onto the pipeline's running
/// time by the smallest delay yet seen between a pts and its arrival (so a buffer is never
/// stamped after it arrived), which may creep up by 0.1% of the time gone by, following a
/// receiver clock that runs faster than the sender's.
class Timeline {
 public:
  explicit Timeline(bool live) : live_(live) {}
  /// `arrival`: the running time it arrived at; GST_CLOCK_TIME_NONE without a clock.
  GstClockTime stamp(int64_t pts_ns, GstClockTime arrival);

 private:
  bool live_;
  std::optional<int64_t> origin_;  // not live (or no clock): the first pts
  std::optional<int64_t> offset_;  // live: running time minus pts
  int64_t last_pts_ = 0;
};

class SrcAudioPads {
 public:
  /// `chosen`: the track numbers to give pads; nullopt for all.
  SrcAudioPads(GstElement* element, GstPad* video_pad, std::optional<std::vector<uint32_t>> chosen);
  ~SrcAudioPads();
  SrcAudioPads(const SrcAudioPads&) = delete;
  SrcAudioPads& operator=(const SrcAudioPads&) = delete;

  /// Whether a track gets a pad (the `tracks` property). Any thread: the stream's sink asks
  /// before it queues a track's start, samples and end.
  bool chosen(uint32_t track) const;
  /// A chosen track started: its pad, with stream-start, caps and segment. False (an error
  /// posted) where its format has no GStreamer caps.
  bool start(const AudioTrack& track);
  /// A packet of a started track, stamped `pts`: after a GAP for a hole since its last.
  /// NOT_LINKED and EOS from downstream are OK here (that branch is not wanted).
  GstFlowReturn push(AudioPacket packet, GstClockTime pts);
  /// The track ended: EOS, and its pad goes.
  void end(uint32_t track);
  /// A picture stamped `pts` goes downstream: tracks with nothing for longer than kIdle
  /// before it get a GAP up to there. The first call also signals no-more-pads.
  void picture(GstClockTime pts);
  /// The stream ended: EOS on every pad (they stay, for downstream to finish).
  void eos();
  /// Removes every pad (the element stops).
  void remove_all();
  /// Whether a track has a pad now.
  bool has_pads() const { return !pads_.empty(); }

  /// How long a track may say nothing, behind the pictures, before a GAP says it for it.
  static constexpr GstClockTime kIdle = 500 * GST_MSECOND;
  /// A hole in a track's timestamps shorter than this is jitter, not a gap.
  static constexpr GstClockTime kHole = 10 * GST_MSECOND;

 private:
  struct Pad {
    uint32_t track = 0;
    GstPad* pad = nullptr;
    GstAudioInfo info{};
    GstClockTime next = GST_CLOCK_TIME_NONE;   // where its last samples ended
    GstClockTime since = GST_CLOCK_TIME_NONE;  // where it started, before any samples
    bool discont = true;
  };
  Pad* find(uint32_t track);
  void gap(Pad& pad, GstClockTime until);

  GstElement* element_;
  GstPad* video_pad_;
  std::optional<std::vector<uint32_t>> chosen_;
  std::vector<Pad> pads_;
  bool no_more_pads_ = false;
  GstClockTime last_picture_ = GST_CLOCK_TIME_NONE;
};

}  // namespace rdmavideo::gst
