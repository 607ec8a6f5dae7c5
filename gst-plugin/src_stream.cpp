// SPDX-License-Identifier: Apache-2.0
#include "src_stream.hpp"

#include <algorithm>
#include <chrono>
#include <string>

GST_DEBUG_CATEGORY_EXTERN(rdmasrc_debug);
#define GST_CAT_DEFAULT rdmasrc_debug

namespace rdmavideo::gst {
namespace {

// The running time now on the element's clock; -1 without a clock.
int64_t arrival_now(GstElement* element) {
  GstClock* clock = gst_element_get_clock(element);
  if (!clock) return -1;
  const GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  const GstClockTime base = gst_element_get_base_time(element);
  return now > base ? static_cast<int64_t>(now - base) : 0;
}

// The stream's sink: runs on the service's connection thread. It stamps every frame and
// chunk on the stream's time line as it arrives, queues frames for create() and hands sound
// to the audio pads, whose threads push it: so no pad waits behind another.
class QueueSink final : public StreamSink {
 public:
  QueueSink(GstElement* element, SrcRuntime& rt, SrcAudioPads& pads)
      : self_(element), rt_(&rt), pads_(pads) {}

  void frame(FrameLease frame) override {
    const auto& rate = frame.format().frame_rate;
    const auto duration =
        static_cast<int64_t>(gst_util_uint64_scale(GST_SECOND, rate.den, rate.num));
    const int64_t pts =
        rt_->timeline.picture(frame.info().pts_ns, duration, arrival(), steady_ns());
    say_jumps();
    const bool copy = should_copy(frame);
    if (copy) {
      auto copied = std::move(frame).copied();
      if (!copied) {
        GST_ELEMENT_WARNING(self_, RESOURCE, READ, ("Could not copy a frame out of the ring."),
                            ("%s; the frame is dropped", copied.error().message().c_str()));
        return;
      }
      frame = std::move(*copied);
      if (rt_->copies++ == 0) {
        GST_WARNING_OBJECT(self_,
                           "copying frames out of the ring: downstream holds it while a muxer "
                           "waits for sound, or while the pipeline prerolls");
      }
    }
    {
      std::lock_guard lock(rt_->mutex);
      ++(frame.holds_slot() ? rt_->queued_slots : rt_->queued_copies);
      rt_->events.push_back({std::move(frame), static_cast<GstClockTime>(pts)});
      rt_->cv.notify_all();
    }
    pads().first_picture();
    for (const auto& owed : rt_->timeline.idle(steady_ns())) pads().silence(owed);
  }
  // Tracks not chosen (the `tracks` property) get no pad; their samples are not wanted, so
  // not counted as dropped either.
  void audio_started(const AudioTrack& track) override {
    if (!pads().chosen(track.index)) return;
    rt_->timeline.start_track(track.index, track.format.sample_rate, steady_ns());
    if (!pads().start(track)) rt_->timeline.end_track(track.index);
  }
  bool audio(AudioPacket packet) override {
    if (!pads().chosen(packet.track)) return true;
    const auto placed =
        rt_->timeline.sound(packet.track, packet.pts_ns, packet.samples, arrival(), steady_ns());
    say_jumps();
    pads().push(std::move(packet), placed);
    if (auto gap = rt_->timeline.picture_gap(steady_ns())) {
      std::lock_guard lock(rt_->mutex);
      rt_->events.push_back({PictureGap{static_cast<GstClockTime>(gap->second)},
                             static_cast<GstClockTime>(gap->first)});
      rt_->cv.notify_all();
    }
    return true;
  }
  void audio_ended(uint32_t track) override {
    if (!pads().chosen(track)) return;
    rt_->timeline.end_track(track);
    pads().end(track);
  }

  Result<void> finish(const StreamEnd& end) override {
    std::lock_guard lock(rt_->mutex);
    rt_->end = end;
    rt_->cv.notify_all();
    return {};
  }

 private:
  SrcAudioPads& pads() { return pads_; }

  // Live: when it arrived, in running time (-1 without a clock, when pts stamp it).
  int64_t arrival() const { return rt_->settings.is_live ? arrival_now(self_) : -1; }
  static int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // A jump is said once a source (the pictures, each track), and counted every time.
  void say_jumps() {
    for (const auto& j : rt_->timeline.take_jumps()) {
      ++rt_->jumps;
      if (!rt_->said_jump.insert(j.source).second) continue;
      const std::string who = j.source == StreamTimeline::kPictures
                                  ? std::string("the pictures'")
                                  : "audio track " + std::to_string(j.source) + "'s";
      GST_ELEMENT_WARNING(self_, STREAM, FAILED,
                          ("The sender's timestamps jumped; the stream was kept together."),
                          ("%s timestamps strayed %.3f s from the rest of the stream and were "
                           "moved back beside it (counted in stats as jumps; said once)",
                           who.c_str(), static_cast<double>(-j.by_ns) / 1e9));
    }
  }

  // Whether a frame is copied out of its ring slot as it arrives, so the sender is not held
  // back: the ring is nearly all held (queued here or downstream) and something downstream
  // may be waiting for what only the sender can send next. A muxer interleaving picture and
  // sound waits for sound that the sender sends after frames it has no credit for; a
  // pipeline still prerolling waits for an audio pad (someone listens for pad-added, as
  // gst-launch-1.0 does for `src.audio_0 ! ...`). At most half a second of frames is held
  // copied; beyond that a downstream that holds the ring holds the sender back, as it should.
  bool should_copy(const FrameLease& frame) {
    const uint32_t ring = rt_->settings.ring_size;
    if (frame.memory_kind() != memory::MemoryKind::host || ring <= 2) return false;
    const auto& rate = frame.format().frame_rate;
    const uint64_t most = std::max<uint64_t>(
        4, gst_util_uint64_scale(StreamTimeline::kApartNs, rate.num, rate.den * GST_SECOND));
    {
      std::lock_guard lock(rt_->mutex);
      if (rt_->held->load() + rt_->queued_slots + 2 < ring || rt_->queued_copies >= most)
        return false;
    }
    if (pads().has_pads()) return true;
    static const guint pad_added = g_signal_lookup("pad-added", GST_TYPE_ELEMENT);
    return GST_STATE(self_) != GST_STATE_PLAYING &&
           g_signal_has_handler_pending(self_, pad_added, 0, FALSE);
  }

  GstElement* self_;
  SrcRuntime* rt_;
  SrcAudioPads& pads_;  // made at start(), kept until after the service stops
};

}  // namespace

std::unique_ptr<StreamSink> make_stream_sink(GstElement* element, SrcRuntime& rt,
                                             SrcAudioPads& pads) {
  return std::make_unique<QueueSink>(element, rt, pads);
}

}  // namespace rdmavideo::gst
