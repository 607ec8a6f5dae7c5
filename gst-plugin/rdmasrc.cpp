// SPDX-License-Identifier: Apache-2.0
// rdmasrc: receives raw video from an rdmavideo sender (rdmavideo-send or rdmasink) into a
// ring of frame buffers and pushes each frame downstream without copying it.
//
//   gst-launch-1.0 rdmasrc port=5000 ! videoconvert ! autovideosink
//
// start() starts a ReceiverService (librdmavideo) that takes one stream: its connection
// thread services the sender (keepalives answered even while the pipeline is paused), stamps
// each frame and queues it for create(), which takes them in order, and hands the sound to
// the audio pads' own threads (src_stream.hpp, src_audio.hpp). A stream's format becomes caps
// (renegotiated when the sender changes format), each frame a buffer whose memory is the ring
// slot itself: the slot's credit goes back to the sender when downstream drops the buffer,
// so a slow downstream slows the sender instead of growing a queue. The sender's
// EndOfStream becomes EOS; a second sender while one streams is refused as busy. With is-live=false
// (the default) buffers carry the sender's pts, counted from its first frame; with is-live=true the
// element is a live source and stamps each buffer on the pipeline's running time as the
// receive thread saw it complete (not when create() dequeued it, which a busy downstream delays).
// Liveness is a property (as in shmsrc) because a GstBaseSrc must declare it before READY->PAUSED
// completes, before any sender has connected; the sender's live flag is compared with it and a
// mismatch is logged.
//
// Strides and offsets are the sender's. Where they differ from GStreamer's defaults the
// buffer carries a GstVideoMeta, or, when downstream cannot read one, is copied once into
// GStreamer's layout (counted in the `copies` statistic).
#include "rdmasrc.hpp"

#include <gst/video/video.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "audio_caps.hpp"
#include "boundary.hpp"
#include "common.hpp"
#include "cuda_caps.hpp"
#include "slot_memory.hpp"
#include "src_audio.hpp"
#include "src_runtime.hpp"
#include "src_stream.hpp"

GST_DEBUG_CATEGORY(rdmasrc_debug);
#define GST_CAT_DEFAULT rdmasrc_debug

namespace rdmavideo::gst {
namespace {

constexpr uint64_t kMaxVerifyWarnings = 10;

struct SrcState {
  SrcSettings settings;     // under the object lock
  guint bound_port = 0;     // under the object lock
  GstCaps* caps = nullptr;  // the current stream's caps; under the object lock
  std::atomic<bool> unlocked{false};
  std::unique_ptr<SrcRuntime> runtime;
  // The audio pads: made at start(), removed once stopped (PAUSED to READY).
  std::unique_ptr<SrcAudioPads> audio;
  ElementStats stats{"rdmasrc-stats"};
  CudaContextShare cuda;  // the GstCudaContext this element offers its neighbours
};

}  // namespace
}  // namespace rdmavideo::gst

struct _GstRdmaSrc {
  GstPushSrc parent;
  rdmavideo::gst::SrcState* state;
};

G_DEFINE_TYPE(GstRdmaSrc, gst_rdma_src, GST_TYPE_PUSH_SRC)
GST_ELEMENT_REGISTER_DEFINE(rdmasrc, "rdmasrc", GST_RANK_NONE, GST_TYPE_RDMA_SRC)

namespace rdmavideo::gst {
namespace {

enum {
  PROP_ADDRESS = kFirstOwnProperty,
  PROP_RING_SIZE,
  PROP_VERIFY,
  PROP_IS_LIVE,
  PROP_BOUND_PORT,
  PROP_TRACKS,
};

SrcState& state_of(gpointer object) { return *GST_RDMA_SRC(object)->state; }

// The stats property. Frames, bytes, drops, latency and seconds are the service's, as it
// counted them on arrival (this element takes one stream: stream_limit); verify failures,
// copies, jumps and what the audio pads were given are this element's own.
void publish_stats(GstRdmaSrc* self, SrcRuntime& rt) {
  stats::TransferStats counted;
  if (rt.service) {
    auto reports = rt.service->reports();
    if (!reports.empty()) counted = reports.back().stats;
  }
  counted.checksum_failures = rt.checksum_failures;
  auto s = snapshot(counted);
  s.copies = rt.copies.load();
  s.jumps = rt.jumps.load();
  if (const auto& audio = self->state->audio) {
    s.silence_ms = audio->silence_ms();
    s.audio_dropped = audio->dropped_samples();
  }
  {
    std::lock_guard lock(rt.mutex);
    if (rt.connected) {
      s.transport = std::string(to_string(rt.kind));
      s.peer = rt.peer;
    }
  }
  self->state->stats.publish(std::move(s));
}

gboolean src_start(GstBaseSrc* src) {
  auto* self = GST_RDMA_SRC(src);
  auto& state = *self->state;
  auto rt = std::make_unique<SrcRuntime>();
  GST_OBJECT_LOCK(self);
  rt->settings = state.settings;
  GST_OBJECT_UNLOCK(self);
  state.unlocked = false;

  std::shared_ptr<const auth::SharedKey> key;
  if (!load_key_file(GST_ELEMENT(self), rt->settings.key_file, key)) return FALSE;
  auto tracks = parse_tracks(rt->settings.tracks);
  if (!tracks) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Bad tracks property."),
                      ("%s", tracks.error().message().c_str()));
    return FALSE;
  }
  rt->timeline = StreamTimeline(rt->settings.is_live);
  state.audio = std::make_unique<SrcAudioPads>(GST_ELEMENT(self), GST_BASE_SRC_PAD(src), *tracks);
  // One stream per element, as GStreamer composes: a second sender is refused as busy.
  ReceiverServiceOptions options;
  options.transport = rt->settings.transport;
  options.listen.endpoint =
      Endpoint{rt->settings.address, static_cast<uint16_t>(rt->settings.port)};
  options.listen.rdma_device = rt->settings.rdma_device;
  options.listen.key = key;
  options.listen.ring_size = rt->settings.ring_size;
  const auto memory_spec = memory_property(GST_ELEMENT(self), rt->settings.memory);
  if (!memory_spec) return FALSE;
  options.memory = *memory_spec;
  rt->cuda_device = cuda_device_of(rt->settings.memory);
  options.max_streams = 1;
  options.stream_limit = 1;
  SrcRuntime* raw = rt.get();
  // A format GStreamer cannot describe is refused at StreamStart, naming the field.
  options.format_check = [](const proto::StreamStart& format) -> Result<void> {
    if (auto info = gst::video_info(format); !info) return Unexpected(info.error());
    return {};
  };
  options.sink_factory = [self,
                          raw](const StreamInfo& info) -> Result<std::unique_ptr<StreamSink>> {
    GST_INFO_OBJECT(self, "sender %s connected over %s", info.peer.c_str(),
                    std::string(to_string(info.transport)).c_str());
    std::lock_guard lock(raw->mutex);
    raw->connected = true;
    raw->kind = info.transport;
    raw->peer = info.peer;
    raw->announced = info.format;
    return make_stream_sink(GST_ELEMENT(self), *raw, *self->state->audio);
  };
  auto service = ReceiverService::start(std::move(options));
  if (!service) {
    GST_ELEMENT_ERROR(
        self, RESOURCE, OPEN_READ,
        ("Could not listen on %s:%u.", rt->settings.address.c_str(), rt->settings.port),
        ("%s", service.error().message().c_str()));
    return FALSE;
  }
  rt->service = std::move(*service);
  const Endpoint bound = rt->service->local_endpoint();
  GST_INFO_OBJECT(self, "listening on %s (%s)", bound.to_string().c_str(),
                  rt->service->describe().c_str());
  GST_OBJECT_LOCK(self);
  state.bound_port = bound.port;
  GST_OBJECT_UNLOCK(self);
  g_object_notify(G_OBJECT(self), "bound-port");
  state.runtime = std::move(rt);
  return TRUE;
}

gboolean src_stop(GstBaseSrc* src) {
  auto* self = GST_RDMA_SRC(src);
  auto& state = *self->state;
  if (state.runtime) {
    state.runtime->service->stop();
    publish_stats(self, *state.runtime);
    if (!state.runtime->eos) self->state->stats.post(GST_ELEMENT(self), rdmasrc_debug);
    state.runtime.reset();  // queued frames return their slots; buffers downstream keep theirs
  }
  GST_OBJECT_LOCK(self);
  gst_clear_caps(&state.caps);
  state.bound_port = 0;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

gboolean src_unlock(GstBaseSrc* src) {
  auto& state = state_of(src);
  state.unlocked = true;
  if (state.runtime) {
    std::lock_guard lock(state.runtime->mutex);
    state.runtime->cv.notify_all();
  }
  return TRUE;
}

gboolean src_unlock_stop(GstBaseSrc* src) {
  state_of(src).unlocked = false;
  return TRUE;
}

GstCaps* src_get_caps(GstBaseSrc* src, GstCaps* filter) {
  auto& state = state_of(src);
  GstCaps* caps = nullptr;
  GST_OBJECT_LOCK(src);
  if (state.caps) caps = gst_caps_ref(state.caps);
  GST_OBJECT_UNLOCK(src);
  if (!caps) caps = gst_pad_get_pad_template_caps(GST_BASE_SRC_PAD(src));
  const int device = element_cuda_device(src, state.settings.memory);
  caps = offered_caps(GST_ELEMENT(src), caps, device);
  if (filter) {
    GstCaps* both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = both;
  }
  return caps;
}

gboolean src_negotiate(GstBaseSrc* src) {
  // Nothing to negotiate until a sender has described its stream; create() negotiates then.
  GST_OBJECT_LOCK(src);
  const bool known = state_of(src).caps != nullptr;
  GST_OBJECT_UNLOCK(src);
  if (!known) return TRUE;
  return GST_BASE_SRC_CLASS(gst_rdma_src_parent_class)->negotiate(src);
}

gboolean src_decide_allocation(GstBaseSrc* src, GstQuery* query) {
  auto& state = state_of(src);
  // Buffers are ring slots, never from a pool: drop downstream's pools so none is filled.
  while (gst_query_get_n_allocation_pools(query) > 0)
    gst_query_remove_nth_allocation_pool(query, 0);
  if (state.runtime) {
    state.runtime->downstream_meta =
        gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  }
  return TRUE;
}

gboolean src_query(GstBaseSrc* src, GstQuery* query) {
  auto& state = state_of(src);
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY && state.runtime && state.runtime->format) {
    // A frame is pushed as soon as it has arrived; up to a ring of frames may wait for
    // downstream.
    const auto& rate = state.runtime->format->frame_rate;
    const GstClockTime frame = gst_util_uint64_scale(GST_SECOND, rate.den, rate.num);
    gst_query_set_latency(query, gst_base_src_is_live(src), frame,
                          frame * state.runtime->settings.ring_size);
    return TRUE;
  }
  const int device = element_cuda_device(src, state.settings.memory);
  if (state.cuda.handle_query(GST_ELEMENT(src), query, device)) return TRUE;  // CUDA neighbours
  return GST_BASE_SRC_CLASS(gst_rdma_src_parent_class)->query(src, query);
}

GstFlowReturn start_stream(GstRdmaSrc* self, SrcRuntime& rt,
                           const std::shared_ptr<const proto::StreamStart>& shared) {
  auto* src = GST_BASE_SRC(self);
  const proto::StreamStart& format = *shared;
  auto info = video_info(format);
  if (!info) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("The sender's stream cannot be described as caps."),
                      ("%s", info.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  rt.format = shared;
  rt.info = *info;
  rt.default_layout = has_default_layout(*info);
  gst_video_info_set_format(&rt.default_info, GST_VIDEO_INFO_FORMAT(&rt.info),
                            GST_VIDEO_INFO_WIDTH(&rt.info), GST_VIDEO_INFO_HEIGHT(&rt.info));
  rt.verifier.reset();
  if (rt.settings.verify) rt.verifier.emplace();
  const bool sender_live = (format.flags & proto::kStreamLive) != 0;
  if (sender_live != rt.settings.is_live) {
    GST_WARNING_OBJECT(self, "the sender's stream is %slive but is-live=%s: %s",
                       sender_live ? "" : "not ", rt.settings.is_live ? "true" : "false",
                       sender_live
                           ? "buffers carry the sender's pts and a syncing sink may drop late ones"
                           : "buffers are stamped on arrival, as fast as the sender sends");
  }
  GstCaps* caps = gst_video_info_to_caps(&rt.info);
  // memory:CUDAMemory first where it is offered: downstream picks it if it can take it.
  if (cuda_caps_built() && cuda_caps_unavailable(rt.cuda_device).empty())
    caps = with_cuda_variants(caps);
  GST_INFO_OBJECT(self, "stream \"%s\": %" GST_PTR_FORMAT "%s", format.name.c_str(), caps,
                  rt.default_layout ? "" : " (sender's strides)");
  GST_OBJECT_LOCK(self);
  gst_caps_replace(&self->state->caps, caps);
  GST_OBJECT_UNLOCK(self);
  gst_caps_unref(caps);
  if (!gst_base_src_negotiate(src)) {
    // Where downstream wanted GPU memory that is not offered here, say why.
    const std::string cuda_why = cuda_caps_unavailable(rt.cuda_device);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Downstream does not accept the sender's format."),
                      ("%s %ux%u%s%s", std::string(name(format.pixel_format)).c_str(), format.width,
                       format.height, cuda_why.empty() ? "" : "; ", cuda_why.c_str()));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  rt.cuda_out.reset();
  gst_clear_caps(&rt.cuda_caps);
  GstCaps* current = gst_pad_get_current_caps(GST_BASE_SRC_PAD(src));
  if (current && is_cuda_caps(current)) {
    auto frames = CudaFrames::create(GST_ELEMENT(self), self->state->cuda, rt.cuda_device,
                                     rt.default_info, format.layout);
    if (!frames) {
      gst_caps_unref(current);
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot push memory:CUDAMemory buffers."),
                        ("%s", frames.error().message().c_str()));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    rt.cuda_out = std::move(*frames);
    rt.cuda_caps = current;
    GST_INFO_OBJECT(self, "pushing memory:CUDAMemory buffers on cuda:%d", rt.cuda_device);
  } else if (current) {
    gst_caps_unref(current);
  }
  return GST_FLOW_OK;
}

GstBuffer* make_buffer(GstRdmaSrc* self, SrcRuntime& rt, FrameLease frame) {
  if (rt.cuda_out) {
    // A copy on the GPU (from a ring in GPU memory) or an upload into a CUDA buffer.
    auto buffer =
        rt.cuda_out->copy_out(reinterpret_cast<uintptr_t>(frame.data().data()),
                              frame.memory_kind() == memory::MemoryKind::cuda, rt.cuda_caps);
    if (buffer) return *buffer;
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Could not copy a frame into CUDA memory."),
                      ("%s", buffer.error().message().c_str()));
    return nullptr;
  }
  if (rt.default_layout || rt.downstream_meta) {
    // The ring slot itself, or the copy made of it as it arrived (QueueSink::should_copy).
    GstBuffer* buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, wrap_lease(std::move(frame), rt.held));
    if (!rt.default_layout) {
      gst_buffer_add_video_meta_full(
          buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&rt.info),
          GST_VIDEO_INFO_WIDTH(&rt.info), GST_VIDEO_INFO_HEIGHT(&rt.info),
          GST_VIDEO_INFO_N_PLANES(&rt.info), rt.info.offset, rt.info.stride);
    }
    return buffer;
  }
  // Downstream reads only GStreamer's own layout: repack into it.
  if (rt.copies++ == 0) {
    GST_WARNING_OBJECT(self,
                       "copying frames: the sender's strides differ from GStreamer's and "
                       "downstream does not read GstVideoMeta");
  }
  GstBuffer* buffer =
      gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&rt.default_info), nullptr);
  GstVideoFrame target;
  if (gst_video_frame_map(&target, &rt.default_info, buffer, GST_MAP_WRITE)) {
    copy_planes(rt.format->layout, frame.mutable_data().data(), target, CopyTo::gst_frame);
    gst_video_frame_unmap(&target);
  }
  return buffer;
}

// The pictures are missing while the sound goes on (none yet, or the sender's pictures
// stopped): a GAP event on the picture's pad up to half a second behind the sound, so a muxer
// waiting on every input moves on. Before the first picture, the caps are the stream's.
GstFlowReturn picture_gap(GstRdmaSrc* self, SrcRuntime& rt, GstClockTime from, GstClockTime until) {
  if (!rt.format) {
    std::shared_ptr<const proto::StreamStart> announced;
    {
      std::lock_guard lock(rt.mutex);
      announced = rt.announced;
    }
    if (!announced) return GST_FLOW_OK;
    if (auto flow = start_stream(self, rt, announced); flow != GST_FLOW_OK) return flow;
  }
  GstPad* pad = GST_BASE_SRC_PAD(self);
  if (GstEvent* segment = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0)) {
    gst_event_unref(segment);
  } else {
    // The base class sends its segment with the first picture; a gap needs one before.
    GstSegment time;
    gst_segment_init(&time, GST_FORMAT_TIME);
    gst_pad_push_event(pad, gst_event_new_segment(&time));
  }
  GST_LOG_OBJECT(self, "no picture from %" GST_TIME_FORMAT " to %" GST_TIME_FORMAT,
                 GST_TIME_ARGS(from), GST_TIME_ARGS(until));
  gst_pad_push_event(pad, gst_event_new_gap(from, until - from));
  return GST_FLOW_OK;
}

GstFlowReturn frame_arrived(GstRdmaSrc* self, SrcRuntime& rt, FrameLease frame, GstClockTime pts,
                            GstBuffer** out) {
  const proto::FrameWritten info = frame.info();
  // The sender's sequence counts the frames it dropped (the service counts them): a gap.
  const bool discont = rt.pushed == 0 || info.sequence > rt.next_sequence;
  rt.next_sequence = info.sequence + 1;
  std::optional<std::string> bad;
  if (rt.verifier) {
    std::string said;
    auto ok = rt.verifier->prepare(frame.format(), frame.cuda_device(), &said);
    if (!ok) {
      GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Could not verify the received frames."),
                        ("%s", ok.error().message().c_str()));
      return GST_FLOW_ERROR;
    }
    if (!said.empty()) GST_INFO_OBJECT(self, "verify: %s", said.c_str());
    if (rt.verifier->on_gpu()) {
      auto found = rt.verifier->verify_on_gpu(info, cuda::address(frame.data().data()), nullptr);
      if (!found) {
        GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Could not verify a frame in GPU memory."),
                          ("%s", found.error().message().c_str()));
        return GST_FLOW_ERROR;
      }
      bad = *found;
    }
  }
  const bool cpu_verifies = rt.verifier && !rt.verifier->on_gpu();
  if (frame.memory_kind() == memory::MemoryKind::cuda && (cpu_verifies || !rt.cuda_out)) {
    // The CPU verifies or downstream reads system memory: a download of the ring slot.
    auto host = std::move(frame).to_host();
    if (!host) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not download a frame from GPU memory."),
                        ("%s", host.error().message().c_str()));
      return GST_FLOW_ERROR;
    }
    frame = std::move(*host);
  }
  if (cpu_verifies) bad = rt.verifier->verify_on_host(info, frame.data());
  if (bad && ++rt.checksum_failures <= kMaxVerifyWarnings) {
    GST_ELEMENT_WARNING(self, STREAM, DECODE, ("A received frame failed verification."),
                        ("%s", bad->c_str()));
  }
  ++rt.pushed;

  GstBuffer* buffer = make_buffer(self, rt, std::move(frame));
  if (!buffer) return GST_FLOW_ERROR;
  GST_BUFFER_PTS(buffer) = pts;  // stamped on arrival, on the time line of the sound too
  GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION(buffer) =
      gst_util_uint64_scale(GST_SECOND, rt.format->frame_rate.den, rt.format->frame_rate.num);
  GST_BUFFER_OFFSET(buffer) = info.sequence;
  GST_BUFFER_OFFSET_END(buffer) = info.sequence + 1;
  if (discont) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
  *out = buffer;
  publish_stats(self, rt);
  return GST_FLOW_OK;
}

GstFlowReturn src_create(GstPushSrc* push_src, GstBuffer** out) {
  auto* self = GST_RDMA_SRC(push_src);
  auto& state = *self->state;
  if (!state.runtime) return GST_FLOW_FLUSHING;
  auto& rt = *state.runtime;
  if (rt.eos) return GST_FLOW_EOS;
  std::unique_lock lock(rt.mutex);
  // Gaps in the pictures are pushed as they come, until a picture (returned) or the end.
  for (;;) {
    rt.cv.wait(lock, [&] { return state.unlocked || !rt.events.empty() || rt.end; });
    if (state.unlocked) return GST_FLOW_FLUSHING;
    if (rt.events.empty()) break;
    Arrival arrival = std::move(rt.events.front());
    rt.events.pop_front();
    if (auto* frame = std::get_if<FrameLease>(&arrival.what)) {
      --(frame->holds_slot() ? rt.queued_slots : rt.queued_copies);
      lock.unlock();
      if (frame->shared_format() != rt.format) {  // the first frame of a new format
        if (auto flow = start_stream(self, rt, frame->shared_format()); flow != GST_FLOW_OK) {
          return flow;
        }
      }
      return frame_arrived(self, rt, std::move(*frame), arrival.pts, out);
    }
    lock.unlock();
    const auto& gap = std::get<PictureGap>(arrival.what);
    if (auto flow = picture_gap(self, rt, arrival.pts, gap.until); flow != GST_FLOW_OK) return flow;
    lock.lock();
  }
  const StreamEnd end = *rt.end;
  const std::string peer = rt.peer;
  lock.unlock();
  // However it ended, what was received ends with EOS on every pad, so a recording
  // downstream is finished and playable; a sender that failed or went away is a warning.
  if (!end.ok()) {
    GST_ELEMENT_WARNING(self, RESOURCE, READ,
                        ("The sender %s failed or went away; the stream ends here.", peer.c_str()),
                        ("%s", end.error ? end.error->message().c_str() : "unknown"));
  } else {
    GST_INFO_OBJECT(self,
                    "the sender ended the stream after %" G_GUINT64_FORMAT
                    " frames (%" G_GUINT64_FORMAT " dropped)",
                    end.sender_frames, end.sender_dropped);
  }
  rt.eos = true;
  if (state.audio) state.audio->eos();
  publish_stats(self, rt);
  self->state->stats.post(GST_ELEMENT(self), rdmasrc_debug);
  return GST_FLOW_EOS;
}

// The application's EOS (gst-launch-1.0 -e on Ctrl+C) reaches the base class for the
// picture's pad; every audio pad gets it too, after what it has queued, so a muxer
// downstream finishes its file.
gboolean send_event(GstElement* element, GstEvent* event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    if (auto& audio = state_of(element).audio) audio->eos();
  }
  return GST_ELEMENT_CLASS(gst_rdma_src_parent_class)->send_event(element, event);
}

void set_property(GObject* object, guint id, const GValue* value, GParamSpec* pspec) {
  auto& s = state_of(object).settings;
  GST_OBJECT_LOCK(object);
  if (!set_common_property(s, id, value)) {
    switch (id) {
      case PROP_ADDRESS: s.address = string_of(value); break;
      case PROP_RING_SIZE: s.ring_size = g_value_get_uint(value); break;
      case PROP_VERIFY: s.verify = g_value_get_boolean(value); break;
      case PROP_IS_LIVE: s.is_live = g_value_get_boolean(value); break;
      case PROP_TRACKS: s.tracks = string_of(value, "all"); break;
      default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
    }
  }
  GST_OBJECT_UNLOCK(object);
  if (id == PROP_IS_LIVE) {
    // GstBaseSrc reads it before start(), at READY->PAUSED; it takes the object lock.
    const bool live = g_value_get_boolean(value);
    gst_base_src_set_live(GST_BASE_SRC(object), live);
  }
}

void get_property(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
  auto& state = state_of(object);
  if (get_shared_property(object, state.stats, state.settings, id, value)) return;
  auto& s = state.settings;
  GST_OBJECT_LOCK(object);
  switch (id) {
    case PROP_ADDRESS: g_value_set_string(value, s.address.c_str()); break;
    case PROP_RING_SIZE: g_value_set_uint(value, s.ring_size); break;
    case PROP_VERIFY: g_value_set_boolean(value, s.verify); break;
    case PROP_IS_LIVE: g_value_set_boolean(value, s.is_live); break;
    case PROP_BOUND_PORT: g_value_set_uint(value, state.bound_port); break;
    case PROP_TRACKS: g_value_set_string(value, s.tracks.c_str()); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(object);
}

// Once stopped, the audio pads go (a pipeline started again gets them anew).
GstStateChangeReturn change_state(GstElement* element, GstStateChange transition) {
  const GstStateChangeReturn result =
      GST_ELEMENT_CLASS(gst_rdma_src_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) state_of(element).audio.reset();
  return result;
}

void finalize(GObject* object) {
  auto* state = GST_RDMA_SRC(object)->state;
  gst_clear_caps(&state->caps);
  delete state;
  G_OBJECT_CLASS(gst_rdma_src_parent_class)->finalize(object);
}

}  // namespace
}  // namespace rdmavideo::gst

static void gst_rdma_src_class_init(GstRdmaSrcClass* klass) {
  using namespace rdmavideo::gst;
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* base_class = GST_BASE_SRC_CLASS(klass);
  auto* push_class = GST_PUSH_SRC_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(rdmasrc_debug, "rdmasrc", 0, "rdmavideo receiver element");

  gobject_class->set_property = guarded<"set a property", set_property>;
  gobject_class->get_property = guarded<"read a property", get_property>;
  gobject_class->finalize = finalize;
  install_common_properties(gobject_class, Side::receiver);
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  const auto read_only = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property(
      gobject_class, PROP_ADDRESS,
      g_param_spec_string("address", "Address",
                          "Local address to listen on. Default 0.0.0.0 (all); read when the "
                          "element starts (READY to PAUSED).",
                          "0.0.0.0", flags));
  g_object_class_install_property(
      gobject_class, PROP_RING_SIZE,
      g_param_spec_uint("ring-size", "Ring size",
                        "Frame buffers in the receive ring (1..240). Buffers downstream still "
                        "holds count against it. Default 8; read when the element starts.",
                        1, rdmavideo::proto::kMaxRingSlots, 8, flags));
  g_object_class_install_property(
      gobject_class, PROP_VERIFY,
      g_param_spec_boolean("verify", "Verify",
                           "Check each frame's checksum when the sender sends them, and the "
                           "built-in test pattern when the stream carries it; failures are "
                           "counted in stats and posted as warnings. Frames in GPU memory "
                           "(memory=cuda) are checked there by a kernel where the GPU can, "
                           "as rdmavideo-recv checks them. Default false.",
                           FALSE, flags));
  g_object_class_install_property(
      gobject_class, PROP_IS_LIVE,
      g_param_spec_boolean("is-live", "Is live",
                           "Act as a live source: buffers are stamped with the running time "
                           "they arrived at. Set it for live senders (rdmavideo-send "
                           "--realtime, rdmasink mode=live, capture). Default false: buffers "
                           "carry the sender's pts from its first frame. Read at READY to "
                           "PAUSED.",
                           FALSE, flags));
  g_object_class_install_property(
      gobject_class, PROP_BOUND_PORT,
      g_param_spec_uint("bound-port", "Bound port",
                        "The port actually listened on (useful with port=0); 0 when not "
                        "listening.",
                        0, 65535, 0, read_only));

  g_object_class_install_property(
      gobject_class, PROP_TRACKS,
      g_param_spec_string("tracks", "Tracks",
                          "The sender's audio tracks given an audio_N pad: all, none, or track "
                          "numbers N[,M] (0-based, in the order the sender started them). "
                          "Default all; read when the element starts.",
                          "all", flags));

  gst_element_class_set_static_metadata(
      element_class, "RDMA video source", "Source/Network/Video",
      "Receives raw video frames from an rdmavideo sender into a ring of frame buffers over "
      "RDMA verbs or TCP, and pushes them without copying, with each of its audio tracks on a "
      "pad of its own",
      "rdmavideo developers");
  GstCaps* caps = cuda_caps_built() ? with_cuda_variants(template_caps()) : template_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  GstCaps* audio_caps = audio_template_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("audio_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, audio_caps));
  gst_caps_unref(audio_caps);

  // Every function GStreamer calls stops exceptions at its edge (boundary.hpp).
  element_class->change_state = guarded<"change state", change_state>;
  element_class->send_event = guarded<"handle an event", send_event>;
  base_class->start = guarded<"listen for the sender", src_start>;
  base_class->stop = guarded<"end the stream", src_stop>;
  base_class->unlock = guarded<"unlock", src_unlock>;
  base_class->unlock_stop = guarded<"end an unlock", src_unlock_stop>;
  base_class->get_caps = guarded<"answer a caps query", src_get_caps>;
  base_class->negotiate = guarded<"negotiate caps", src_negotiate>;
  base_class->decide_allocation = guarded<"decide an allocation", src_decide_allocation>;
  base_class->query = guarded<"answer a query", src_query>;
  push_class->create = guarded<"receive a frame", src_create>;
}

static void gst_rdma_src_init(GstRdmaSrc* self) {
  self->state = new rdmavideo::gst::SrcState();
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
  gst_base_src_set_live(GST_BASE_SRC(self), FALSE);
}
