// SPDX-License-Identifier: Apache-2.0
#include "src_audio.hpp"

#include <algorithm>
#include <string>

#include "audio_caps.hpp"

GST_DEBUG_CATEGORY_EXTERN(rdmasrc_debug);
#define GST_CAT_DEFAULT rdmasrc_debug

namespace rdmavideo::gst {

GstClockTime Timeline::stamp(int64_t pts_ns, GstClockTime arrival) {
  if (live_ && GST_CLOCK_TIME_IS_VALID(arrival)) {
    const int64_t delay = static_cast<int64_t>(arrival) - pts_ns;
    if (!offset_ || delay < *offset_) {
      offset_ = delay;
    } else {
      // A receiver clock running faster than the sender's: follow it, slowly.
      const int64_t gone = std::max<int64_t>(pts_ns - last_pts_, 0);
      *offset_ += std::min<int64_t>(delay - *offset_, gone / 1000);
    }
    last_pts_ = pts_ns;
    return static_cast<GstClockTime>(std::max<int64_t>(pts_ns + *offset_, 0));
  }
  if (!origin_) origin_ = pts_ns;
  return static_cast<GstClockTime>(std::max<int64_t>(pts_ns - *origin_, 0));
}

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

}  // namespace

SrcAudioPads::SrcAudioPads(GstElement* element, GstPad* video_pad,
                           std::optional<std::vector<uint32_t>> chosen)
    : element_(element), video_pad_(video_pad), chosen_(std::move(chosen)) {}

SrcAudioPads::~SrcAudioPads() { remove_all(); }

bool SrcAudioPads::chosen(uint32_t track) const {
  return !chosen_ || std::find(chosen_->begin(), chosen_->end(), track) != chosen_->end();
}

SrcAudioPads::Pad* SrcAudioPads::find(uint32_t track) {
  for (auto& p : pads_) {
    if (p.track == track) return &p;
  }
  return nullptr;
}

bool SrcAudioPads::start(const AudioTrack& track) {
  if (find(track.index)) return true;
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
  const std::string name = "audio_" + std::to_string(track.index);
  GstPadTemplate* templ =
      gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(element_), "audio_%u");
  Pad p;
  p.track = track.index;
  p.info = received->info;
  p.since = last_picture_;  // a track that starts late is silent from here until it speaks
  p.pad = gst_pad_new_from_template(templ, name.c_str());
  gst_pad_use_fixed_caps(p.pad);
  gst_pad_set_query_function(p.pad, audio_pad_query);
  gst_pad_set_active(p.pad, TRUE);

  // The video's stream group, so downstream knows picture and sound belong together.
  guint group = 0;
  bool grouped = false;
  if (GstEvent* video_start = gst_pad_get_sticky_event(video_pad_, GST_EVENT_STREAM_START, 0)) {
    grouped = gst_event_parse_group_id(video_start, &group);
    gst_event_unref(video_start);
  }
  gchar* stream_id = gst_pad_create_stream_id(p.pad, element_, name.c_str());
  GstEvent* stream_start = gst_event_new_stream_start(stream_id);
  g_free(stream_id);
  if (grouped) gst_event_set_group_id(stream_start, group);
  gst_event_set_stream_flags(stream_start, GST_STREAM_FLAG_NONE);
  gst_pad_push_event(p.pad, stream_start);
  GstCaps* caps = gst_audio_info_to_caps(&p.info);
  gst_pad_push_event(p.pad, gst_event_new_caps(caps));
  GST_INFO_OBJECT(element_, "audio track %u \"%s\": %" GST_PTR_FORMAT, track.index,
                  track.format.name.c_str(), caps);
  gst_caps_unref(caps);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  gst_pad_push_event(p.pad, gst_event_new_segment(&segment));
  if (!track.format.name.empty()) {
    GstTagList* tags = gst_tag_list_new(GST_TAG_TITLE, track.format.name.c_str(), nullptr);
    gst_tag_list_set_scope(tags, GST_TAG_SCOPE_STREAM);
    gst_pad_push_event(p.pad, gst_event_new_tag(tags));
  }
  gst_element_add_pad(element_, p.pad);  // takes the floating reference
  gst_object_ref(p.pad);
  pads_.push_back(p);
  return true;
}

void SrcAudioPads::gap(Pad& p, GstClockTime until) {
  if (!GST_CLOCK_TIME_IS_VALID(p.next) || until <= p.next) return;
  gst_pad_push_event(p.pad, gst_event_new_gap(p.next, until - p.next));
  p.next = until;
  p.discont = true;
}

GstFlowReturn SrcAudioPads::push(AudioPacket packet, GstClockTime pts) {
  Pad* p = find(packet.track);
  if (!p) return GST_FLOW_OK;  // a track whose start could not be described
  if (GST_CLOCK_TIME_IS_VALID(p->next) && pts > p->next + kHole) gap(*p, pts);
  const uint32_t samples = packet.samples;
  const size_t bytes = packet.data.size();
  auto* held = new AudioPacket(std::move(packet));
  GstBuffer* buffer = gst_buffer_new_wrapped_full(
      GST_MEMORY_FLAG_READONLY, held->data.data(), bytes, 0, bytes, held,
      [](gpointer data) { delete static_cast<AudioPacket*>(data); });
  if (GST_AUDIO_INFO_LAYOUT(&p->info) == GST_AUDIO_LAYOUT_NON_INTERLEAVED)
    gst_buffer_add_audio_meta(buffer, &p->info, samples, nullptr);
  const GstClockTime duration =
      gst_util_uint64_scale_int(samples, GST_SECOND, GST_AUDIO_INFO_RATE(&p->info));
  GST_BUFFER_PTS(buffer) = pts;
  GST_BUFFER_DURATION(buffer) = duration;
  if (p->discont) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
  p->discont = false;
  p->next = std::max(GST_CLOCK_TIME_IS_VALID(p->next) ? p->next : 0, pts + duration);
  const GstFlowReturn flow = gst_pad_push(p->pad, buffer);
  if (flow == GST_FLOW_NOT_LINKED || flow == GST_FLOW_EOS) return GST_FLOW_OK;
  if (flow == GST_FLOW_NOT_NEGOTIATED) {
    GstCaps* current = gst_audio_info_to_caps(&p->info);
    gchar* caps = gst_caps_to_string(current);
    gst_caps_unref(current);
    GST_ELEMENT_ERROR(
        element_, CORE, NEGOTIATION,
        ("Downstream of audio_%u does not accept the sender's audio format.", p->track),
        ("%s %d Hz, %d channels (%s)", gst_audio_format_to_string(GST_AUDIO_INFO_FORMAT(&p->info)),
         GST_AUDIO_INFO_RATE(&p->info), GST_AUDIO_INFO_CHANNELS(&p->info), caps));
    g_free(caps);
  }
  return flow;
}

void SrcAudioPads::end(uint32_t track) {
  auto it =
      std::find_if(pads_.begin(), pads_.end(), [&](const Pad& p) { return p.track == track; });
  if (it == pads_.end()) return;
  GST_INFO_OBJECT(element_, "audio track %u ended", track);
  gst_pad_push_event(it->pad, gst_event_new_eos());
  gst_pad_set_active(it->pad, FALSE);
  gst_element_remove_pad(element_, it->pad);
  gst_object_unref(it->pad);
  pads_.erase(it);
}

void SrcAudioPads::picture(GstClockTime pts) {
  if (!no_more_pads_) {
    no_more_pads_ = true;
    gst_element_no_more_pads(element_);
  }
  if (!GST_CLOCK_TIME_IS_VALID(pts)) return;
  last_picture_ = pts;
  for (auto& p : pads_) {
    if (!GST_CLOCK_TIME_IS_VALID(p.next)) {
      // Nothing from it yet: silent since it started, or since the first picture.
      if (!GST_CLOCK_TIME_IS_VALID(p.since)) p.since = pts;
      if (pts < p.since + kIdle) continue;
      p.next = p.since;
    }
    if (pts >= kIdle && pts - kIdle > p.next) gap(p, pts - kIdle);
  }
}

void SrcAudioPads::eos() {
  for (auto& p : pads_) gst_pad_push_event(p.pad, gst_event_new_eos());
}

void SrcAudioPads::remove_all() {
  for (auto& p : pads_) {
    gst_pad_set_active(p.pad, FALSE);
    gst_element_remove_pad(element_, p.pad);
    gst_object_unref(p.pad);
  }
  pads_.clear();
}

}  // namespace rdmavideo::gst
