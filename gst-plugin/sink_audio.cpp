// SPDX-License-Identifier: Apache-2.0
#include "sink_audio.hpp"

#include <algorithm>
#include <cstring>

#include "audio_caps.hpp"
#include "boundary.hpp"
#include "rdmavideo/sender_session.hpp"

GST_DEBUG_CATEGORY_EXTERN(rdmasink_debug);
#define GST_CAT_DEFAULT rdmasink_debug

namespace rdmavideo::gst {

GstPad* SinkAudio::request_pad(GstPadTemplate* templ, const gchar* name) {
  std::lock_guard lock(mutex_);
  if (tracks_.size() >= proto::kMaxAudioStreams) {
    GST_WARNING_OBJECT(element_, "at most %u audio pads", proto::kMaxAudioStreams);
    return nullptr;
  }
  std::string pad_name;
  guint n = 0;
  if (name) {
    if (std::sscanf(name, "audio_%u", &n) != 1) return nullptr;
    for (const auto& t : tracks_) {
      if (std::strcmp(GST_PAD_NAME(t.pad), name) == 0) return nullptr;  // taken
    }
    pad_name = name;
    next_pad_ = std::max(next_pad_, n + 1);
  } else {
    n = next_pad_++;
    pad_name = "audio_" + std::to_string(n);
  }
  GstPad* pad = gst_pad_new_from_template(templ, pad_name.c_str());
  gst_pad_set_element_private(pad, this);
  gst_pad_set_chain_function(pad, (guarded<"send sound", chain>));
  gst_pad_set_event_function(pad, (guarded<"handle an event on an audio pad", event>));
  GST_PAD_SET_PROXY_ALLOCATION(pad);
  Track track;
  track.pad = GST_PAD(gst_object_ref(pad));
  track.index = n;
  tracks_.push_back(std::move(track));
  if (GST_STATE(element_) > GST_STATE_READY) gst_pad_set_active(pad, TRUE);
  gst_element_add_pad(element_, pad);
  return pad;
}

void SinkAudio::release_pad(GstPad* pad) {
  {
    std::lock_guard lock(mutex_);
    auto it =
        std::find_if(tracks_.begin(), tracks_.end(), [&](const Track& t) { return t.pad == pad; });
    if (it == tracks_.end()) return;
    end_track(*it);
    gst_object_unref(it->pad);
    tracks_.erase(it);
    cv_.notify_all();
  }
  gst_pad_set_active(pad, FALSE);
  gst_element_remove_pad(element_, pad);
}

void SinkAudio::open(SenderSession* session, bool live) {
  std::lock_guard lock(mutex_);
  session_ = session;
  live_ = live;
  last_picture_.reset();
  for (auto& t : tracks_) {
    t.number.reset();
    t.convert.reset();
    t.eos = false;
    t.next_pts = 0;
  }
}

void SinkAudio::close() {
  std::lock_guard lock(mutex_);
  for (auto& t : tracks_) end_track(t);
  session_ = nullptr;
  cv_.notify_all();
}

template <typename Done>
bool SinkAudio::wait_for_every_track(std::unique_lock<std::mutex>& lock,
                                     std::chrono::milliseconds timeout, Done done) {
  return cv_.wait_for(lock, timeout, [&] {
    return unlocked_ || std::all_of(tracks_.begin(), tracks_.end(), [&](const Track& t) {
             return done(t) || !gst_pad_is_linked(t.pad);
           });
  });
}

void SinkAudio::before_picture() {
  std::unique_lock lock(mutex_);
  if (live_ || last_picture_ || !session_) return;
  const bool started = wait_for_every_track(
      lock, kStall, [](const Track& t) { return t.number || t.eos || t.flushing; });
  if (!started) {
    GST_WARNING_OBJECT(element_,
                       "an audio pad had no buffer %lld s after the first picture was "
                       "ready: the picture goes without its track, which a receiver's recording "
                       "may not take later",
                       static_cast<long long>(kStall.count()));
  }
}

void SinkAudio::picture_sent(std::optional<int64_t> pts_ns) {
  std::lock_guard lock(mutex_);
  // Pictures without a pts cannot pace the sound: it goes on as it comes.
  last_picture_ = pts_ns ? *pts_ns : last_picture_.value_or(INT64_MAX);
  cv_.notify_all();
}

void SinkAudio::wait_eos() {
  std::unique_lock lock(mutex_);
  const bool all = wait_for_every_track(lock, kEosWait, [](const Track& t) { return t.eos; });
  if (!all) {
    GST_WARNING_OBJECT(element_,
                       "the video ended and an audio pad had no EOS within %lld s: "
                       "the stream ends without the rest of its sound",
                       static_cast<long long>(kEosWait.count()));
  }
}

void SinkAudio::set_unlocked(bool unlocked) {
  std::lock_guard lock(mutex_);
  unlocked_ = unlocked;
  cv_.notify_all();
}

SinkAudio::Track* SinkAudio::find(GstPad* pad) {
  for (auto& t : tracks_) {
    if (t.pad == pad) return &t;
  }
  return nullptr;
}

void SinkAudio::end_track(Track& track) {
  if (track.number && session_) {
    if (auto ok = session_->end_audio(*track.number); !ok) {
      GST_WARNING_OBJECT(element_, "%s: %s", GST_PAD_NAME(track.pad), ok.error().message().c_str());
    }
  }
  track.number.reset();
  track.convert.reset();
}

// Every event ends here: a sink pad has nothing to forward it to.
gboolean SinkAudio::event(GstPad* pad, GstObject* parent, GstEvent* event) {
  (void)parent;
  auto* self = static_cast<SinkAudio*>(gst_pad_get_element_private(pad));
  const gboolean handled = self->handle_event(pad, event);
  gst_event_unref(event);
  return handled;
}

gboolean SinkAudio::handle_event(GstPad* pad, GstEvent* event) {
  std::unique_lock lock(mutex_);
  Track* track = find(pad);
  if (!track) return FALSE;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
      GstCaps* caps = nullptr;
      gst_event_parse_caps(event, &caps);
      GstAudioInfo info;
      if (!gst_audio_info_from_caps(&info, caps)) {
        GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                          ("%s: caps are not raw audio.", GST_PAD_NAME(pad)),
                          ("caps %" GST_PTR_FORMAT, caps));
        return FALSE;
      }
      if (auto start = audio_start(info); !start) {
        GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                          ("%s: cannot send this audio format.", GST_PAD_NAME(pad)),
                          ("%s", start.error().message().c_str()));
        return FALSE;
      }
      track->info = info;
      track->has_caps = true;
      cv_.notify_all();  // a pad numbered after it may wait for its caps
      if (!track->number || gst_audio_info_is_equal(&track->sent, &info)) {
        track->convert.reset();
        return TRUE;
      }
      // The track goes on in the format it started with (a receiver's recording takes its
      // tracks at the first picture): converted from now on.
      GstAudioConverter* convert = gst_audio_converter_new(GST_AUDIO_CONVERTER_FLAG_NONE,
                                                           &track->info, &track->sent, nullptr);
      if (!convert) {
        GST_ELEMENT_ERROR(
            element_, CORE, NEGOTIATION,
            ("%s: cannot convert its new caps into its track's format.", GST_PAD_NAME(pad)),
            ("caps %" GST_PTR_FORMAT, caps));
        return FALSE;
      }
      track->convert.reset(convert, gst_audio_converter_free);
      GST_INFO_OBJECT(element_,
                      "%s: caps changed to %" GST_PTR_FORMAT "; converted into its track's format",
                      GST_PAD_NAME(pad), caps);
      return TRUE;
    }
    case GST_EVENT_TAG: {
      GstTagList* tags = nullptr;
      gst_event_parse_tag(event, &tags);
      gchar* title = nullptr;
      if (gst_tag_list_get_string(tags, GST_TAG_TITLE, &title)) {
        track->title = title;
        g_free(title);
      }
      return TRUE;
    }
    case GST_EVENT_EOS:
      end_track(*track);
      track->eos = true;
      cv_.notify_all();
      return TRUE;
    case GST_EVENT_FLUSH_START:
      track->flushing = true;
      cv_.notify_all();
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      track->flushing = false;
      track->eos = false;
      return TRUE;
    default: return TRUE;
  }
}

GstFlowReturn SinkAudio::chain(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  (void)parent;
  auto* self = static_cast<SinkAudio*>(gst_pad_get_element_private(pad));
  const GstFlowReturn flow = self->send(pad, buffer);
  gst_buffer_unref(buffer);
  return flow;
}

void SinkAudio::wait_for_pictures(std::unique_lock<std::mutex>& lock, GstPad* pad, int64_t pts_ns) {
  const auto lead = std::chrono::duration_cast<std::chrono::nanoseconds>(kLead).count();
  const auto ahead = [&] {
    Track* t = find(pad);
    if (unlocked_ || !session_ || !t || t->flushing || session_->failure()) return false;
    // Before the first picture the stream's ring may not be up: sound sent then is lost.
    if (!last_picture_) return true;
    return pts_ns - *last_picture_ > lead;
  };
  while (ahead()) {
    const std::optional<int64_t> before = last_picture_;
    if (!cv_.wait_for(lock, kStall, [&] { return !ahead() || last_picture_ != before; })) {
      GST_DEBUG_OBJECT(element_, "%s: no picture for %lld s; its sound goes on", GST_PAD_NAME(pad),
                       static_cast<long long>(kStall.count()));
      return;
    }
  }
}

bool SinkAudio::start_track(Track& track) {
  auto start = audio_start(track.info);
  if (!start) return false;  // refused at its caps already
  // The library fits the name (whole characters, valid UTF-8).
  start->name = track.title.empty() ? GST_PAD_NAME(track.pad) : track.title;
  auto number = session_->start_audio(*start);
  if (!number) {
    // The stream goes on without this pad's sound: a picture is worth more than one track.
    GST_ELEMENT_WARNING(
        element_, RESOURCE, WRITE,
        ("%s: could not start its audio track; its sound is not sent.", GST_PAD_NAME(track.pad)),
        ("%s", number.error().message().c_str()));
    return false;
  }
  track.number = *number;
  track.sent = track.info;
  track.convert.reset();
  cv_.notify_all();  // the first picture may be waiting for it
  GST_INFO_OBJECT(element_, "%s: track %u \"%s\", %s %d Hz, %d channels", GST_PAD_NAME(track.pad),
                  *number, start->name.c_str(),
                  gst_audio_format_to_string(GST_AUDIO_INFO_FORMAT(&track.info)),
                  GST_AUDIO_INFO_RATE(&track.info), GST_AUDIO_INFO_CHANNELS(&track.info));
  return true;
}

bool SinkAudio::start_in_order(std::unique_lock<std::mutex>& lock, GstPad* pad) {
  const auto before_me = [&](const Track& t, uint32_t index) {
    return t.index < index && !t.number && !t.eos && gst_pad_is_linked(t.pad);
  };
  // The pads numbered before it get their caps first (they come at once, or after a
  // moment where upstream is slower to start), at most kStall; live, kLead.
  const auto most = live_ ? std::chrono::duration_cast<std::chrono::milliseconds>(kLead)
                          : std::chrono::duration_cast<std::chrono::milliseconds>(kStall);
  const bool ready = cv_.wait_for(lock, most, [&] {
    Track* me = find(pad);
    if (!me || me->number || unlocked_ || !session_) return true;
    return std::none_of(tracks_.begin(), tracks_.end(), [&](const Track& t) {
      return before_me(t, me->index) && !t.has_caps && !t.flushing;
    });
  });
  Track* me = find(pad);
  if (!me || me->number || !session_) return me != nullptr;
  if (!ready) {
    GST_WARNING_OBJECT(element_,
                       "%s: a pad numbered before it had no caps in time; its track starts "
                       "before that pad's",
                       GST_PAD_NAME(pad));
  }
  std::vector<Track*> order;
  for (auto& t : tracks_) {
    if (&t == me || (before_me(t, me->index) && t.has_caps)) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const Track* a, const Track* b) { return a->index < b->index; });
  bool started = false;
  for (Track* t : order) {
    const bool ok = start_track(*t);
    if (t == me) started = ok;
  }
  return started;
}

GstFlowReturn SinkAudio::send(GstPad* pad, GstBuffer* buffer) {
  std::unique_lock lock(mutex_);
  Track* track = find(pad);
  if (!track || track->flushing) return GST_FLOW_FLUSHING;
  if (!session_) return GST_FLOW_OK;               // the stream has ended: the rest is not sent
  if (session_->failure()) return GST_FLOW_ERROR;  // posted by the session's callback
  if (!track->has_caps) {
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                      ("%s: no caps before the first buffer.", GST_PAD_NAME(pad)), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const int rate = GST_AUDIO_INFO_RATE(&track->info);
  const int bpf = GST_AUDIO_INFO_BPF(&track->info);
  const auto in_samples = static_cast<uint32_t>(gst_buffer_get_size(buffer) / std::max(bpf, 1));
  if (in_samples == 0) return GST_FLOW_OK;
  const int64_t pts = GST_BUFFER_PTS_IS_VALID(buffer) ? static_cast<int64_t>(GST_BUFFER_PTS(buffer))
                                                      : track->next_pts;
  track->next_pts =
      pts + static_cast<int64_t>(gst_util_uint64_scale_int(in_samples, GST_SECOND, rate));
  // The track starts at once (the receiver's recorder knows its tracks by the first
  // picture), in its pad's order; its samples may then wait for the pictures.
  if (!track->number) {
    if (!start_in_order(lock, pad)) {
      track = find(pad);
      return track && !track->flushing ? GST_FLOW_OK : GST_FLOW_FLUSHING;
    }
    track = find(pad);
    if (!track || track->flushing) return GST_FLOW_FLUSHING;
  }
  if (!live_) {
    wait_for_pictures(lock, pad, pts);
    track = find(pad);  // the pad may have gone while waiting
    if (!track || track->flushing) return GST_FLOW_FLUSHING;
    if (!session_) return GST_FLOW_OK;
    if (session_->failure()) return GST_FLOW_ERROR;
  }
  // The samples in the track's format: as they are, or converted (the caps changed).
  const GstAudioInfo& in = track->info;
  const GstAudioInfo& out = track->sent;
  const bool planar_in = GST_AUDIO_INFO_LAYOUT(&in) == GST_AUDIO_LAYOUT_NON_INTERLEAVED;
  const bool planar_out = GST_AUDIO_INFO_LAYOUT(&out) == GST_AUDIO_LAYOUT_NON_INTERLEAVED;
  GstAudioBuffer planes;
  if (!gst_audio_buffer_map(&planes, &in, buffer, GST_MAP_READ)) return GST_FLOW_ERROR;
  uint32_t samples = static_cast<uint32_t>(planes.n_samples);
  std::span<const std::byte> data;
  if (track->convert) {
    const gsize out_frames =
        gst_audio_converter_get_out_frames(track->convert.get(), planes.n_samples);
    const size_t plane_bytes = out_frames * GST_AUDIO_INFO_WIDTH(&out) / 8;
    track->packed.resize(out_frames * GST_AUDIO_INFO_BPF(&out));
    std::vector<gpointer> to(planar_out ? GST_AUDIO_INFO_CHANNELS(&out) : 1);
    for (size_t p = 0; p < to.size(); ++p) to[p] = track->packed.data() + p * plane_bytes;
    if (!gst_audio_converter_samples(track->convert.get(), GST_AUDIO_CONVERTER_FLAG_NONE,
                                     planes.planes, planes.n_samples, to.data(), out_frames)) {
      gst_audio_buffer_unmap(&planes);
      GST_ELEMENT_ERROR(
          element_, STREAM, FORMAT,
          ("%s: could not convert its sound into its track's format.", GST_PAD_NAME(pad)),
          (nullptr));
      return GST_FLOW_ERROR;
    }
    samples = static_cast<uint32_t>(out_frames);
    data = track->packed;
  } else if (planar_in) {
    // Plane after plane, as the protocol carries planar samples.
    const size_t plane_bytes = size_t{planes.n_samples} * GST_AUDIO_INFO_WIDTH(&in) / 8;
    track->packed.resize(plane_bytes * planes.n_planes);
    for (int p = 0; p < planes.n_planes; ++p)
      std::memcpy(track->packed.data() + p * plane_bytes, planes.planes[p], plane_bytes);
    data = track->packed;
  } else {
    data = std::span<const std::byte>(static_cast<const std::byte*>(planes.planes[0]),
                                      size_t{samples} * bpf);
  }
  Result<void> ok;
  if (samples > 0) ok = session_->submit_audio(*track->number, pts, samples, data);
  gst_audio_buffer_unmap(&planes);
  if (!ok) GST_WARNING_OBJECT(element_, "%s: %s", GST_PAD_NAME(pad), ok.error().message().c_str());
  return GST_FLOW_OK;
}

}  // namespace rdmavideo::gst
