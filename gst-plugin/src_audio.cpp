// SPDX-License-Identifier: Apache-2.0
#include "src_audio.hpp"

#include <algorithm>
#include <string>

#include "audio_caps.hpp"
#include "boundary.hpp"

GST_DEBUG_CATEGORY_EXTERN(rdmasrc_debug);
#define GST_CAT_DEFAULT rdmasrc_debug

namespace rdmavideo::gst {

struct SrcAudioPads::Pad {
  uint32_t track = 0;
  GstPad* pad = nullptr;  // a reference of ours
  GstAudioInfo info{};
  GstClockTime next = GST_CLOCK_TIME_NONE;  // where the last buffer queued ends

  std::mutex mu;  // the queue and the flags below
  std::condition_variable cv;
  std::deque<GstMiniObject*> items;  // buffers and events, in order; ours to unref
  size_t buffers = 0;                // of them, buffers
  bool eos_queued = false;           // nothing more is queued
  bool stopping = false;             // the thread ends now (the element stops)
  bool leave = false;                // after its EOS the thread removes the pad and ends
  bool removed = false;              // the pad is out of the element
  bool warned_full = false;
  std::thread thread;

  ~Pad() {
    for (GstMiniObject* item : items) gst_mini_object_unref(item);
    if (pad) gst_object_unref(pad);
  }
};

namespace {

// Latency as the element's video pad answers it; caps are the pad's own.
gboolean audio_pad_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    GstPad* video = gst_element_get_static_pad(GST_ELEMENT(parent), "src");
    if (!video) return FALSE;
    const gboolean answered = gst_pad_query(video, query);
    gst_object_unref(video);
    return answered;
  }
  return gst_pad_query_default(pad, parent, query);
}

GstClockTime duration_of(const GstAudioInfo& info, uint64_t samples) {
  return gst_util_uint64_scale_int(samples, GST_SECOND, GST_AUDIO_INFO_RATE(&info));
}

}  // namespace

SrcAudioPads::SrcAudioPads(GstElement* element, GstPad* video_pad,
                           std::optional<std::vector<uint32_t>> chosen)
    : element_(element), video_pad_(video_pad), chosen_(std::move(chosen)) {}

SrcAudioPads::~SrcAudioPads() { remove_all(); }

bool SrcAudioPads::chosen(uint32_t track) const {
  return !chosen_ || std::find(chosen_->begin(), chosen_->end(), track) != chosen_->end();
}

std::shared_ptr<SrcAudioPads::Pad> SrcAudioPads::find(uint32_t track) const {
  for (const auto& p : pads_) {
    if (p->track == track) return p;
  }
  return nullptr;
}

bool SrcAudioPads::has_pads() const {
  std::lock_guard lock(mutex_);
  return !pads_.empty();
}

bool SrcAudioPads::start(const AudioTrack& track) {
  {
    std::lock_guard lock(mutex_);
    join_left();
    if (eos_ || find(track.index)) return true;
  }
  auto received = audio_info(track.format);
  if (!received) {
    GST_ELEMENT_ERROR(element_, STREAM, FORMAT,
                      ("Audio track %u cannot be described.", track.index),
                      ("%s", received.error().message().c_str()));
    return false;
  }
  if (!received->positioned) {
    GST_WARNING_OBJECT(element_,
                       "audio track %u: channel mask 0x%" G_GINT64_MODIFIER
                       "x is not in GStreamer's channel order; its channels are unpositioned",
                       track.index, track.format.channel_layout);
  }
  auto p = std::make_shared<Pad>();
  p->track = track.index;
  // The info as the caps say it (mono is GStreamer's MONO position, whatever the sender's
  // mask), so every buffer's audio meta agrees with the caps downstream parses.
  GstCaps* caps = gst_audio_info_to_caps(&received->info);
  if (!gst_audio_info_from_caps(&p->info, caps)) p->info = received->info;

  const std::string name = "audio_" + std::to_string(track.index);
  GstPadTemplate* templ =
      gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(element_), "audio_%u");
  p->pad = gst_pad_new_from_template(templ, name.c_str());
  gst_object_ref_sink(p->pad);
  gst_pad_use_fixed_caps(p->pad);
  gst_pad_set_query_function(p->pad, (guarded<"answer a query on an audio pad", audio_pad_query>));
  gst_pad_set_active(p->pad, TRUE);

  // Sticky events before the pad is added: whoever links it at pad-added finds them.
  // The video's stream group, so downstream knows picture and sound belong together.
  guint group = 0;
  bool grouped = false;
  if (GstEvent* video_start = gst_pad_get_sticky_event(video_pad_, GST_EVENT_STREAM_START, 0)) {
    grouped = gst_event_parse_group_id(video_start, &group);
    gst_event_unref(video_start);
  }
  gchar* stream_id = gst_pad_create_stream_id(p->pad, element_, name.c_str());
  GstEvent* stream_start = gst_event_new_stream_start(stream_id);
  g_free(stream_id);
  if (grouped) gst_event_set_group_id(stream_start, group);
  gst_event_set_stream_flags(stream_start, GST_STREAM_FLAG_NONE);
  gst_pad_push_event(p->pad, stream_start);
  gst_pad_push_event(p->pad, gst_event_new_caps(caps));
  // A peer's name is checked as it comes in; GStreamer still gets valid UTF-8 whatever it is.
  gchar* title =
      g_utf8_make_valid(track.format.name.data(), static_cast<gssize>(track.format.name.size()));
  GST_INFO_OBJECT(element_, "audio track %u \"%s\": %" GST_PTR_FORMAT, track.index, title, caps);
  gst_caps_unref(caps);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  gst_pad_push_event(p->pad, gst_event_new_segment(&segment));
  if (title[0] != '\0') {
    GstTagList* tags = gst_tag_list_new(GST_TAG_TITLE, title, nullptr);
    gst_tag_list_set_scope(tags, GST_TAG_SCOPE_STREAM);
    gst_pad_push_event(p->pad, gst_event_new_tag(tags));
  }
  g_free(title);
  GstPad* pad = p->pad;
  {
    std::lock_guard lock(mutex_);
    Pad* raw = p.get();
    p->thread = std::thread([this, raw] {
      try {
        run(*raw);
      } catch (...) {  // a thread of the element's own: the error goes to the bus too
        report_exception(element_, "push sound", std::current_exception());
      }
    });
    pads_.push_back(std::move(p));
  }
  // Outside the lock: whoever listens for pad-added links the pad there, on this thread.
  gst_element_add_pad(element_, pad);  // the element takes a reference of its own
  return true;
}

GstBuffer* SrcAudioPads::silence_buffer(const Pad& p, uint64_t samples) const {
  const size_t bytes = samples * GST_AUDIO_INFO_BPF(&p.info);
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  gst_buffer_memset(buffer, 0, 0, bytes);  // zero is silence in every format carried
  if (GST_AUDIO_INFO_LAYOUT(&p.info) == GST_AUDIO_LAYOUT_NON_INTERLEAVED)
    gst_buffer_add_audio_meta(buffer, &p.info, samples, nullptr);
  GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_GAP);
  GST_BUFFER_DURATION(buffer) = duration_of(p.info, samples);
  return buffer;
}

void SrcAudioPads::queue(Pad& p, GstMiniObject* item) {
  if (GST_IS_BUFFER(item)) {
    // Contiguous but for a track placed anew (a sender's jump the time line kept).
    GstBuffer* buffer = GST_BUFFER(item);
    const GstClockTime pts = GST_BUFFER_PTS(buffer);
    if (!GST_CLOCK_TIME_IS_VALID(p.next) ||
        (pts > p.next ? pts - p.next : p.next - pts) > GST_MSECOND) {
      GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
    }
    p.next = pts + GST_BUFFER_DURATION(buffer);
  }
  std::lock_guard lock(p.mu);
  if (p.eos_queued || p.stopping) {
    gst_mini_object_unref(item);
    return;
  }
  if (GST_IS_BUFFER(item)) {
    if (p.buffers >= kMaxQueued) {
      // Downstream of this pad takes nothing: the oldest sound goes, counted and said once.
      auto oldest = std::find_if(p.items.begin(), p.items.end(),
                                 [](GstMiniObject* m) { return GST_IS_BUFFER(m); });
      const GstClockTime lost = GST_BUFFER_DURATION(GST_BUFFER(*oldest));
      dropped_samples_ += gst_util_uint64_scale_int(lost, GST_AUDIO_INFO_RATE(&p.info), GST_SECOND);
      gst_mini_object_unref(*oldest);
      p.items.erase(oldest);
      --p.buffers;
      if (!p.warned_full) {
        p.warned_full = true;
        GST_ELEMENT_WARNING(
            element_, STREAM, FAILED,
            ("Downstream of audio_%u takes no sound; the oldest is dropped.", p.track),
            ("%zu buffers queued on audio_%u", kMaxQueued, p.track));
      }
    }
    ++p.buffers;
  } else if (GST_EVENT_TYPE(GST_EVENT(item)) == GST_EVENT_EOS) {
    p.eos_queued = true;
  }
  p.items.push_back(item);
  p.cv.notify_one();
}

void SrcAudioPads::push(AudioPacket packet, const StreamTimeline::Sound& placed) {
  std::shared_ptr<Pad> p;
  {
    std::lock_guard lock(mutex_);
    p = find(packet.track);
  }
  if (!p) return;  // a track whose start could not be described
  queue_silence(*p, placed.silence_at_ns, placed.silence_samples);
  if (!placed.keep || placed.skip >= packet.samples) return;
  const uint32_t kept = packet.samples - placed.skip;
  const size_t bytes = packet.data.size();
  const bool planar = GST_AUDIO_INFO_LAYOUT(&p->info) == GST_AUDIO_LAYOUT_NON_INTERLEAVED;
  const size_t sample_bytes = GST_AUDIO_INFO_WIDTH(&p->info) / 8;
  auto* held = new AudioPacket(std::move(packet));
  // Interleaved, the samples cut are the first bytes; planar, the first of each plane.
  const size_t offset = planar ? 0 : size_t{placed.skip} * GST_AUDIO_INFO_BPF(&p->info);
  GstBuffer* buffer = gst_buffer_new_wrapped_full(
      GST_MEMORY_FLAG_READONLY, held->data.data(), bytes, offset, bytes - offset, held,
      [](gpointer data) { delete static_cast<AudioPacket*>(data); });
  if (planar) {
    std::vector<gsize> offsets(GST_AUDIO_INFO_CHANNELS(&p->info));
    for (size_t c = 0; c < offsets.size(); ++c)
      offsets[c] = (c * held->samples + placed.skip) * sample_bytes;
    gst_buffer_add_audio_meta(buffer, &p->info, kept, offsets.data());
  }
  GST_BUFFER_PTS(buffer) = static_cast<GstClockTime>(placed.at_ns);
  GST_BUFFER_DURATION(buffer) = duration_of(p->info, kept);
  queue(*p, GST_MINI_OBJECT_CAST(buffer));
}

void SrcAudioPads::silence(const StreamTimeline::Silence& owed) {
  std::shared_ptr<Pad> p;
  {
    std::lock_guard lock(mutex_);
    p = find(owed.track);
  }
  if (p) queue_silence(*p, owed.at_ns, owed.samples);
}

void SrcAudioPads::queue_silence(Pad& p, int64_t at_ns, uint64_t samples) {
  // A second a buffer at most, each where the samples before it end.
  const uint64_t rate = GST_AUDIO_INFO_RATE(&p.info);
  for (uint64_t done = 0; done < samples;) {
    const uint64_t n = std::min<uint64_t>(samples - done, rate);
    GstBuffer* silent = silence_buffer(p, n);
    GST_BUFFER_PTS(silent) =
        static_cast<GstClockTime>(at_ns) + gst_util_uint64_scale_int(done, GST_SECOND, rate);
    silence_ns_ += GST_BUFFER_DURATION(silent);
    queue(p, GST_MINI_OBJECT_CAST(silent));
    done += n;
  }
}

void SrcAudioPads::run(Pad& p) {
  bool said_error = false;
  for (;;) {
    GstMiniObject* item = nullptr;
    {
      std::unique_lock lock(p.mu);
      p.cv.wait(lock, [&] { return p.stopping || !p.items.empty(); });
      if (p.stopping) return;
      item = p.items.front();
      p.items.pop_front();
      if (GST_IS_BUFFER(item)) --p.buffers;
    }
    if (GST_IS_EVENT(item)) {
      const bool eos = GST_EVENT_TYPE(GST_EVENT(item)) == GST_EVENT_EOS;
      gst_pad_push_event(p.pad, GST_EVENT(item));
      if (!eos) continue;
      bool leave = false;
      {
        std::lock_guard lock(p.mu);
        leave = p.leave;
      }
      if (leave) {
        GST_INFO_OBJECT(element_, "audio track %u ended", p.track);
        gst_pad_set_active(p.pad, FALSE);
        gst_element_remove_pad(element_, p.pad);
        std::lock_guard lock(p.mu);
        p.removed = true;
      }
      return;  // nothing is pushed after EOS
    }
    const GstFlowReturn flow = gst_pad_push(p.pad, GST_BUFFER(item));
    // Not linked, or downstream wants no more: that branch is not wanted. Flushing: the
    // element is stopping.
    if (flow == GST_FLOW_OK || flow == GST_FLOW_NOT_LINKED || flow == GST_FLOW_EOS ||
        flow == GST_FLOW_FLUSHING || said_error) {
      continue;
    }
    said_error = true;
    if (flow == GST_FLOW_NOT_NEGOTIATED) {
      GstCaps* current = gst_audio_info_to_caps(&p.info);
      gchar* caps = gst_caps_to_string(current);
      gst_caps_unref(current);
      GST_ELEMENT_ERROR(
          element_, CORE, NEGOTIATION,
          ("Downstream of audio_%u does not accept the sender's audio format.", p.track),
          ("%s %d Hz, %d channels (%s)", gst_audio_format_to_string(GST_AUDIO_INFO_FORMAT(&p.info)),
           GST_AUDIO_INFO_RATE(&p.info), GST_AUDIO_INFO_CHANNELS(&p.info), caps));
      g_free(caps);
    } else {
      GST_ELEMENT_FLOW_ERROR(element_, flow);
    }
  }
}

void SrcAudioPads::join_left() {
  std::erase_if(left_, [](const std::shared_ptr<Pad>& p) {
    {
      std::lock_guard lock(p->mu);
      if (!p->removed) return false;  // still pushing what it has
    }
    if (p->thread.joinable()) p->thread.join();
    return true;
  });
}

void SrcAudioPads::end(uint32_t track) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(pads_.begin(), pads_.end(),
                         [&](const std::shared_ptr<Pad>& p) { return p->track == track; });
  if (it == pads_.end()) return;
  std::shared_ptr<Pad> p = *it;
  pads_.erase(it);
  {
    std::lock_guard pad_lock(p->mu);
    p->leave = true;
  }
  queue(*p, GST_MINI_OBJECT_CAST(gst_event_new_eos()));
  left_.push_back(std::move(p));
  join_left();
}

void SrcAudioPads::first_picture() {
  // Signalled outside the lock, as pad-added is.
  if (!no_more_pads_.exchange(true)) gst_element_no_more_pads(element_);
}

void SrcAudioPads::eos() {
  std::lock_guard lock(mutex_);
  eos_ = true;
  for (auto& p : pads_) queue(*p, GST_MINI_OBJECT_CAST(gst_event_new_eos()));
}

void SrcAudioPads::remove_all() {
  std::vector<std::shared_ptr<Pad>> all;
  {
    std::lock_guard lock(mutex_);
    all = std::move(pads_);
    all.insert(all.end(), left_.begin(), left_.end());
    pads_.clear();
    left_.clear();
  }
  // Downstream is flushing by now (it left PAUSED first), so a push in progress returns.
  for (auto& p : all) {
    std::lock_guard lock(p->mu);
    p->stopping = true;
    p->cv.notify_all();
  }
  for (auto& p : all) {
    if (p->thread.joinable()) p->thread.join();
    if (!p->removed) {
      gst_pad_set_active(p->pad, FALSE);
      gst_element_remove_pad(element_, p->pad);
      p->removed = true;
    }
  }
}

}  // namespace rdmavideo::gst
