// SPDX-License-Identifier: Apache-2.0
// rdmasink: sends raw video to an rdmavideo receiver (rdmavideo-recv or rdmasrc) with the
// rdmavideo protocol, over RDMA verbs or TCP.
//
//   gst-launch-1.0 videotestsrc ! video/x-raw,format=UYVY,width=1920,height=1080,framerate=60/1
//       ! rdmasink host=10.0.0.2 port=5000   (one line)
//
// The connection is made in start(); each caps event sends a StreamStart (a caps change
// mid-stream starts a new ring epoch on the same connection); each buffer takes a credit and
// is written into the receiver's ring; EOS sends EndOfStream.
//
// The connection is a SenderSession (librdmavideo): it applies the live/no-drop policy,
// keeps the connection alive while the pipeline is paused, holds each buffer until no
// transfer reads it, and lends the staging buffers copies go into.
//
// Zero copy: the allocation query is answered with a pool of page-aligned buffers in the
// layout the stream announces, so upstream renders straight into memory the NIC reads. Over
// verbs each pool buffer's memory is registered by the session the first time it is sent
// and kept (and alive) until the connection closes. Buffers from elsewhere are sent in place
// over TCP when their layout is the stream's; otherwise (and always over verbs) they are
// copied into one of the session's buffers: one copy, counted in the `copies` statistic.
#include "rdmasink.hpp"

#include <gst/video/video.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "audio_caps.hpp"
#include "boundary.hpp"
#include "common.hpp"
#include "cuda_caps.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/sender_session.hpp"
#include "sink_audio.hpp"

GST_DEBUG_CATEGORY(rdmasink_debug);
#define GST_CAT_DEFAULT rdmasink_debug

namespace rdmavideo::gst {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr guint kPoolMinBuffers = 4;     // 2 in flight + 2 for upstream to render into
constexpr uint32_t kMaxInFlight = 2;     // frames posted but maybe still read by the NIC
constexpr uint32_t kStagingBuffers = 2;  // session buffers for frames that must be copied
constexpr size_t kPageBytes = 4096;

// Property values, under the object lock; copied at start().
struct SinkSettings : CommonSettings {
  std::string host = "127.0.0.1";
  std::string destinations;  // "host:port,host:port": fan-out; empty: host and port
  SinkMode mode = SinkMode::no_drop;
  bool checksum = false;
  std::string stream_name;
};

// Built in start(), dropped in stop(). The streaming thread uses it under `mutex`; the
// session's service thread reports a failure through its callback.
struct SinkRuntime {
  SinkSettings settings;
  std::mutex mutex;  // guards everything below
  std::unique_ptr<SenderSession> session;
  uint64_t copies = 0;
  uint64_t sequence = 0;  // frames offered, dropped ones included
  GstVideoInfo info{};
  std::optional<proto::StreamStart> format;
  bool ended = false;                       // EndOfStream sent or received; nothing more goes out
  memory::MemorySpec memory;                // the session's buffers
  std::unique_ptr<CudaFrames> cuda_frames;  // memory:CUDAMemory caps, or a GPU pool
  std::vector<std::byte> host_frame;        // system memory into a GPU pool without CUDA caps
};

struct SinkState {
  SinkSettings settings;              // under the object lock
  std::atomic<bool> unlocked{false};  // flushing or stopping: abandon a wait for a credit
  // Stopping (PAUSED to READY): also abandon a frame write. A flush must not, since a frame
  // half written would break the stream's framing and cost the connection.
  std::atomic<bool> stopping{false};
  std::unique_ptr<SinkRuntime> runtime;
  std::mutex pools_mutex;
  std::vector<GstBufferPool*> pools;  // every pool we offered since start(); one reference each
  ElementStats stats{"rdmasink-stats"};
  CudaContextShare cuda;             // the GstCudaContext this element offers its neighbours
  std::unique_ptr<SinkAudio> audio;  // the audio_N pads; made with the element
};

}  // namespace
}  // namespace rdmavideo::gst

struct _GstRdmaSink {
  GstBaseSink parent;
  rdmavideo::gst::SinkState* state;
};

G_DEFINE_TYPE(GstRdmaSink, gst_rdma_sink, GST_TYPE_BASE_SINK)
GST_ELEMENT_REGISTER_DEFINE(rdmasink, "rdmasink", GST_RANK_NONE, GST_TYPE_RDMA_SINK)

namespace rdmavideo::gst {
namespace {

enum {
  PROP_HOST = kFirstOwnProperty,
  PROP_MODE,
  PROP_CHECKSUM,
  PROP_STREAM_NAME,
  PROP_DESTINATIONS,
};

SinkState& state_of(gpointer object) { return *GST_RDMA_SINK(object)->state; }

void publish_stats(GstRdmaSink* self, SinkRuntime& rt) {
  auto s = snapshot(rt.session->stats());
  s.copies = rt.copies;
  s.transport = std::string(to_string(rt.session->kind()));
  s.peer = rt.session->peer();
  self->state->stats.publish(std::move(s));
}

gboolean sink_start(GstBaseSink* sink) {
  auto* self = GST_RDMA_SINK(sink);
  auto& state = *self->state;
  auto rt = std::make_unique<SinkRuntime>();
  GST_OBJECT_LOCK(self);
  rt->settings = state.settings;
  GST_OBJECT_UNLOCK(self);
  state.unlocked = false;

  std::shared_ptr<const auth::SharedKey> key;
  if (!load_key_file(GST_ELEMENT(self), rt->settings.key_file, key)) return FALSE;
  const auto memory_spec = memory_property(GST_ELEMENT(self), rt->settings.memory);
  if (!memory_spec) return FALSE;
  rt->memory = *memory_spec;
  SenderSessionOptions options;
  options.memory = rt->memory;
  options.transport = rt->settings.transport;
  options.connect.endpoint =
      discovery::host_or_name(rt->settings.host, static_cast<uint16_t>(rt->settings.port));
  if (!rt->settings.destinations.empty()) {
    auto endpoints = parse_endpoints(rt->settings.destinations);
    if (!endpoints) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Bad destinations property."),
                        ("%s", endpoints.error().message().c_str()));
      return FALSE;
    }
    options.destinations = std::move(*endpoints);
    options.connect.endpoint = options.destinations.front();
  }
  options.connect.rdma_device = rt->settings.rdma_device;
  options.connect.key = key;
  options.connect.stop = &state.stopping;  // stopping abandons a frame write; a flush must not
  options.policy.live = rt->settings.mode == SinkMode::live;
  options.policy.checksum = rt->settings.checksum;
  options.interrupt = &state.unlocked;  // a flush or a pause abandons a wait for a credit
  options.max_external_in_flight = kMaxInFlight;
  options.resolve = discovery::receiver_resolver(options.connect.timeouts.connect);
  options.on_failure = [self](const Error& error) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Lost the connection to the receiver."),
                      ("%s", error.message().c_str()));
  };
  const std::string receivers = rt->settings.destinations.empty()
                                    ? options.connect.endpoint.to_string()
                                    : rt->settings.destinations;
  GST_INFO_OBJECT(self, "connecting to %s over %s", receivers.c_str(),
                  std::string(to_string(rt->settings.transport)).c_str());
  auto session = SenderSession::connect(options);
  if (!session) {
    const auto code = session.error().code();
    const char* why = code == ErrorCode::timeout       ? "did not answer in time"
                      : code == ErrorCode::unsupported ? "cannot be reached with this transport"
                                                       : "refused or could not be reached";
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Receiver %s %s.", receivers.c_str(), why),
                      ("%s", session.error().message().c_str()));
    return FALSE;
  }
  rt->session = std::move(*session);
  GST_INFO_OBJECT(self, "connected to %s over %s", rt->session->peer().c_str(),
                  std::string(to_string(rt->session->kind())).c_str());
  state.audio->open(rt->session.get(), rt->settings.mode == SinkMode::live);
  publish_stats(self, *rt);
  state.runtime = std::move(rt);
  return TRUE;
}

void finish_stream(GstRdmaSink* self, SinkRuntime& rt) {
  if (rt.ended) return;
  rt.ended = true;
  self->state->audio->close();  // the tracks end before the stream does
  if (auto ok = rt.session->end_stream(); !ok) {
    GST_WARNING_OBJECT(self, "%s", ok.error().message().c_str());
  }
  publish_stats(self, rt);
}

gboolean sink_stop(GstBaseSink* sink) {
  auto* self = GST_RDMA_SINK(sink);
  auto& state = *self->state;
  state.audio->close();
  if (state.runtime) {
    {
      std::lock_guard lock(state.runtime->mutex);
      finish_stream(self, *state.runtime);
    }
    self->state->stats.post(GST_ELEMENT(self), rdmasink_debug);
    state.runtime.reset();
  }
  std::lock_guard lock(state.pools_mutex);
  for (GstBufferPool* pool : state.pools) gst_object_unref(pool);
  state.pools.clear();
  return TRUE;
}

GstStateChangeReturn change_state(GstElement* element, GstStateChange transition) {
  auto& state = state_of(element);
  // The base class starts (connects) at NULL to READY: a stop left set by the last run
  // would give up that connect's handshake at once.
  if (transition == GST_STATE_CHANGE_NULL_TO_READY ||
      transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    state.stopping = false;
  }
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) state.stopping = true;  // before unlock()
  return GST_ELEMENT_CLASS(gst_rdma_sink_parent_class)->change_state(element, transition);
}

gboolean sink_unlock(GstBaseSink* sink) {
  state_of(sink).unlocked = true;
  state_of(sink).audio->set_unlocked(true);
  return TRUE;
}

gboolean sink_unlock_stop(GstBaseSink* sink) {
  state_of(sink).unlocked = false;
  state_of(sink).audio->set_unlocked(false);
  return TRUE;
}

gboolean sink_set_caps(GstBaseSink* sink, GstCaps* caps) {
  auto* self = GST_RDMA_SINK(sink);
  auto& state = *self->state;
  if (!state.runtime) return FALSE;
  auto& rt = *state.runtime;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Caps are not raw video."),
                      ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  auto format = stream_start(info);
  if (!format) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot send this video format."),
                      ("%s", format.error().message().c_str()));
    return FALSE;
  }
  // The session fits the name and stamps live and checksums from its policy.
  format->name = rt.settings.stream_name.empty() ? GST_OBJECT_NAME(self) : rt.settings.stream_name;

  std::lock_guard lock(rt.mutex);
  if (rt.format && gst_video_info_is_equal(&rt.info, &info)) return TRUE;
  if (rt.ended) return TRUE;  // the receiver is done; buffers will return EOS
  // Frames of the old format go out first (the session sees to that).
  auto ring = rt.session->start_stream(*format, kStagingBuffers);
  if (!ring) {
    if (rt.session->receiver_ended()) {
      rt.ended = true;
      return TRUE;
    }
    GST_ELEMENT_ERROR(
        self, RESOURCE, WRITE,
        ("The receiver did not take stream format %s %dx%d.", GST_VIDEO_INFO_NAME(&info),
         GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info)),
        ("%s", ring.error().message().c_str()));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "stream %s %dx%d %d/%d, %u bytes a frame, ring of %u slots (epoch %u)",
                  GST_VIDEO_INFO_NAME(&info), GST_VIDEO_INFO_WIDTH(&info),
                  GST_VIDEO_INFO_HEIGHT(&info), GST_VIDEO_INFO_FPS_N(&info),
                  GST_VIDEO_INFO_FPS_D(&info), format->layout.frame_bytes, ring->slot_count,
                  ring->ring_epoch);
  rt.info = info;
  rt.format = *format;
  rt.cuda_frames.reset();
  const bool gpu_pool = rt.memory.kind == memory::MemoryKind::cuda;
  if (is_cuda_caps(caps) || gpu_pool) {
    // Frames into or out of GPU memory are copied plane by plane on the GPU.
    const int device = gpu_pool ? rt.memory.device : 0;
    auto frames = CudaFrames::create(GST_ELEMENT(self), state.cuda, device, info, format->layout);
    if (frames) {
      rt.cuda_frames = std::move(*frames);
    } else if (is_cuda_caps(caps)) {
      GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot take memory:CUDAMemory buffers."),
                        ("%s", frames.error().message().c_str()));
      return FALSE;
    }
  }
  return TRUE;
}

gboolean sink_propose_allocation(GstBaseSink* sink, GstQuery* query) {
  auto* self = GST_RDMA_SINK(sink);
  GstCaps* caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  if (!caps) return FALSE;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return FALSE;
  // CUDA buffers come from upstream's CUDA pool; a GPU session pool is filled by copies.
  if (is_cuda_caps(caps)) return TRUE;

  // Page-aligned buffers in GStreamer's default layout for these caps, which is the layout
  // set_caps announces, so each buffer goes out as it is.
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = kPageBytes - 1;
  UniqueObject<GstBufferPool> pool(gst_video_buffer_pool_new());
  GstStructure* config = gst_buffer_pool_get_config(pool.get());
  gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(info.size), kPoolMinBuffers,
                                    0);
  gst_buffer_pool_config_set_allocator(config, nullptr, &params);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool.get(), config)) {
    GST_WARNING_OBJECT(self, "the buffer pool refused its configuration");
    return FALSE;
  }
  gst_query_add_allocation_pool(query, pool.get(), static_cast<guint>(info.size), kPoolMinBuffers,
                                0);
  gst_query_add_allocation_param(query, nullptr, &params);
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  GST_DEBUG_OBJECT(self, "offered a pool of %u-byte page-aligned buffers",
                   static_cast<guint>(info.size));
  auto& state = *self->state;
  std::lock_guard lock(state.pools_mutex);
  state.pools.push_back(pool.release());
  return TRUE;
}

bool from_our_pool(SinkState& state, GstBuffer* buffer) {
  if (!buffer->pool) return false;
  std::lock_guard lock(state.pools_mutex);
  return std::find(state.pools.begin(), state.pools.end(), buffer->pool) != state.pools.end();
}

// True when the buffer's bytes are the frame in the stream's layout, in one memory.
bool sendable_in_place(const SinkRuntime& rt, GstBuffer* buffer) {
  if (gst_buffer_n_memory(buffer) != 1) return false;
  if (gst_buffer_get_size(buffer) < rt.format->layout.frame_bytes) return false;
  if (const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer)) {
    for (guint i = 0; i < meta->n_planes; ++i) {
      if (meta->offset[i] != rt.format->layout.planes[i].offset ||
          meta->stride[i] != static_cast<gint>(rt.format->layout.planes[i].stride)) {
        return false;
      }
    }
  }
  return true;
}

// The buffer packed into `to`, in the stream's layout.
Result<void> pack(const SinkRuntime& rt, GstBuffer* buffer, std::byte* to) {
  GstVideoFrame source;
  if (!gst_video_frame_map(&source, &rt.info, buffer, GST_MAP_READ)) {
    return make_error(ErrorCode::invalid_argument, "buffer of {} bytes does not map as a {} frame",
                      gst_buffer_get_size(buffer), GST_VIDEO_INFO_NAME(&rt.info));
  }
  copy_planes(rt.format->layout, to, source, CopyTo::wire);
  gst_video_frame_unmap(&source);
  return {};
}

// Copies the buffer into a session buffer, in the stream's layout.
Result<FrameBuffer> copy_to_staging(SinkRuntime& rt, GstBuffer* buffer) {
  auto target = rt.session->acquire_buffer();
  if (!target) return Unexpected(target.error());
  const bool gpu_pool = target->kind() == memory::MemoryKind::cuda;
  if (rt.cuda_frames) {
    // On the GPU where the buffer or the pool is there.
    auto ok = rt.cuda_frames->copy_in(buffer, reinterpret_cast<uintptr_t>(target->bytes().data()),
                                      gpu_pool);
    if (!ok) return Unexpected(ok.error());
    return target;
  }
  if (gpu_pool) {
    // A GPU pool where GStreamer's CUDA library is not there: packed here, then uploaded.
    rt.host_frame.resize(rt.format->layout.frame_bytes);
    if (auto ok = pack(rt, buffer, rt.host_frame.data()); !ok) return Unexpected(ok.error());
    if (auto ok = target->write(rt.host_frame); !ok) return Unexpected(ok.error());
    return target;
  }
  if (auto ok = pack(rt, buffer, target->bytes().data()); !ok) return Unexpected(ok.error());
  return target;
}

// A buffer mapped for reading, for as long as a transfer reads it: the session holds this
// until the frame's write is complete.
struct MappedBuffer {
  GstBuffer* buffer = nullptr;  // our reference
  GstMapInfo map = GST_MAP_INFO_INIT;
  bool is_mapped = false;
  ~MappedBuffer() {
    if (is_mapped) gst_buffer_unmap(buffer, &map);
    if (buffer) gst_buffer_unref(buffer);
  }
};

GstFlowReturn sink_render(GstBaseSink* sink, GstBuffer* buffer) {
  auto* self = GST_RDMA_SINK(sink);
  auto& state = *self->state;
  if (!state.runtime) return GST_FLOW_FLUSHING;
  auto& rt = *state.runtime;
  state.audio->before_picture();  // the tracks start before the first picture goes
  auto ready = Clock::now();
  std::unique_lock lock(rt.mutex);
  if (rt.session->failure()) return GST_FLOW_ERROR;  // posted by the session's callback
  if (rt.ended || rt.session->receiver_ended()) return GST_FLOW_EOS;
  if (!rt.format) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps before the first buffer."), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  const bool ours = from_our_pool(state, buffer);
  // Our pool's buffers can be registered for the connection's life; others are sent as they
  // lie where every destination reads any memory (TCP), else copied.
  const bool in_place = rt.session->sends_in_place(ours);
  std::shared_ptr<MappedBuffer> mapped;  // sent in place
  FrameBuffer staged;                    // or copied into a session buffer
  const bool host_frames = rt.memory.kind == memory::MemoryKind::host && !rt.cuda_frames;
  if (host_frames && sendable_in_place(rt, buffer) && in_place) {
    mapped = std::make_shared<MappedBuffer>();
    mapped->buffer = gst_buffer_ref(buffer);
    mapped->is_mapped = gst_buffer_map(buffer, &mapped->map, GST_MAP_READ);
    if (!mapped->is_mapped) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not map a buffer."), (nullptr));
      return GST_FLOW_ERROR;
    }
  } else {
    auto copied = copy_to_staging(rt, buffer);
    if (!copied) {
      GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Could not stage a frame."),
                        ("%s", copied.error().message().c_str()));
      return GST_FLOW_ERROR;
    }
    if (rt.copies++ == 0) {
      GST_WARNING_OBJECT(
          self, "copying frames: upstream buffers are not from rdmasink's pool%s",
          in_place ? " or not in the stream's layout" : " (verbs sends only registered memory)");
    }
    staged = std::move(*copied);
  }

  // Without a pts the session makes one from the frame rate.
  const std::optional<int64_t> pts_ns = GST_BUFFER_PTS_IS_VALID(buffer)
                                            ? std::optional<int64_t>(GST_BUFFER_PTS(buffer))
                                            : std::nullopt;
  const uint64_t sequence = rt.sequence++;
  const auto send = [&] {
    const FrameMeta meta{sequence, pts_ns, ready};
    if (!mapped) return rt.session->submit(staged, meta);
    // Our pool's memory, where a transport registers it (verbs), is registered once and kept,
    // with a reference, for the connection's life, so its registration never outlives it.
    std::shared_ptr<const void> keep_registered;
    if (ours) {
      GstMemory* memory = gst_memory_ref(gst_buffer_peek_memory(buffer, 0));
      keep_registered = std::shared_ptr<const void>(memory, [](const void* m) {
        gst_memory_unref(static_cast<GstMemory*>(const_cast<void*>(m)));
      });
    }
    const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(mapped->map.data),
                                           rt.format->layout.frame_bytes);
    return rt.session->submit_external(frame, meta, mapped, keep_registered);
  };
  auto outcome = send();
  GstFlowReturn stopped_flow = GST_FLOW_FLUSHING;
  while (outcome && *outcome == SenderSession::Outcome::interrupted) {
    // unlock() ended the wait for a credit: a flush, or a pause (GstBaseSink unlocks render
    // for PLAYING to PAUSED too). Wait in preroll, without the lock (the session keeps the
    // connection alive meanwhile), then send this frame unless flushing.
    lock.unlock();
    stopped_flow = gst_base_sink_wait_preroll(sink);
    lock.lock();
    if (stopped_flow != GST_FLOW_OK) break;
    if (rt.session->failure() || rt.ended || rt.session->receiver_ended()) {
      stopped_flow = rt.session->failure() ? GST_FLOW_ERROR : GST_FLOW_EOS;
      break;
    }
    ready = Clock::now();
    outcome = send();
  }
  publish_stats(self, rt);
  if (outcome &&
      (*outcome == SenderSession::Outcome::sent || *outcome == SenderSession::Outcome::dropped)) {
    state.audio->picture_sent(pts_ns);  // sound may go on up to a little ahead of it
  }
  if (!outcome) {
    if (state.unlocked && outcome.error().sys_errno() == EINTR) return GST_FLOW_FLUSHING;
    rt.ended = true;
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Lost the connection to the receiver."),
                      ("%s", outcome.error().message().c_str()));
    return GST_FLOW_ERROR;
  }
  switch (*outcome) {
    case SenderSession::Outcome::sent:
    case SenderSession::Outcome::dropped: return GST_FLOW_OK;
    case SenderSession::Outcome::interrupted: return stopped_flow;
    case SenderSession::Outcome::receiver_ended:
      GST_INFO_OBJECT(self, "the receiver ended the stream");
      rt.ended = true;
      return GST_FLOW_EOS;
  }
  return GST_FLOW_OK;
}

gboolean sink_event(GstBaseSink* sink, GstEvent* event) {
  auto* self = GST_RDMA_SINK(sink);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && self->state->runtime) {
    self->state->audio->wait_eos();  // the rest of the sound goes before EndOfStream
    {
      std::lock_guard lock(self->state->runtime->mutex);
      finish_stream(self, *self->state->runtime);
    }
    self->state->stats.post(GST_ELEMENT(self), rdmasink_debug);
  }
  return GST_BASE_SINK_CLASS(gst_rdma_sink_parent_class)->event(sink, event);
}

// The template's caps, less memory:CUDAMemory where it is not offered.
GstCaps* sink_get_caps(GstBaseSink* sink, GstCaps* filter) {
  const int device = element_cuda_device(sink, state_of(sink).settings.memory);
  GstCaps* caps = offered_caps(GST_ELEMENT(sink),
                               gst_pad_get_pad_template_caps(GST_BASE_SINK_PAD(sink)), device);
  if (filter) {
    GstCaps* both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = both;
  }
  return caps;
}

// GStreamer's CUDA context query: upstream CUDA elements get the primary context's.
gboolean sink_query(GstBaseSink* sink, GstQuery* query) {
  const int device = element_cuda_device(sink, state_of(sink).settings.memory);
  if (state_of(sink).cuda.handle_query(GST_ELEMENT(sink), query, device)) return TRUE;
  return GST_BASE_SINK_CLASS(gst_rdma_sink_parent_class)->query(sink, query);
}

void set_property(GObject* object, guint id, const GValue* value, GParamSpec* pspec) {
  auto& s = state_of(object).settings;
  GST_OBJECT_LOCK(object);
  if (!set_common_property(s, id, value)) {
    switch (id) {
      case PROP_HOST: s.host = string_of(value); break;
      case PROP_DESTINATIONS: s.destinations = string_of(value); break;
      case PROP_MODE: s.mode = static_cast<SinkMode>(g_value_get_enum(value)); break;
      case PROP_CHECKSUM: s.checksum = g_value_get_boolean(value); break;
      case PROP_STREAM_NAME: s.stream_name = string_of(value); break;
      default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
    }
  }
  GST_OBJECT_UNLOCK(object);
}

void get_property(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
  auto& state = state_of(object);
  if (get_shared_property(object, state.stats, state.settings, id, value)) return;
  auto& s = state.settings;
  GST_OBJECT_LOCK(object);
  switch (id) {
    case PROP_HOST: g_value_set_string(value, s.host.c_str()); break;
    case PROP_DESTINATIONS: g_value_set_string(value, s.destinations.c_str()); break;
    case PROP_MODE: g_value_set_enum(value, static_cast<gint>(s.mode)); break;
    case PROP_CHECKSUM: g_value_set_boolean(value, s.checksum); break;
    case PROP_STREAM_NAME: g_value_set_string(value, s.stream_name.c_str()); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(object);
}

GstPad* request_new_pad(GstElement* element, GstPadTemplate* templ, const gchar* name,
                        const GstCaps* caps) {
  (void)caps;
  return state_of(element).audio->request_pad(templ, name);
}

void release_pad(GstElement* element, GstPad* pad) { state_of(element).audio->release_pad(pad); }

void finalize(GObject* object) {
  delete GST_RDMA_SINK(object)->state;
  G_OBJECT_CLASS(gst_rdma_sink_parent_class)->finalize(object);
}

}  // namespace
}  // namespace rdmavideo::gst

static void gst_rdma_sink_class_init(GstRdmaSinkClass* klass) {
  using namespace rdmavideo::gst;
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* sink_class = GST_BASE_SINK_CLASS(klass);
  GST_DEBUG_CATEGORY_INIT(rdmasink_debug, "rdmasink", 0, "rdmavideo sender element");

  gobject_class->set_property = guarded<"set a property", set_property>;
  gobject_class->get_property = guarded<"read a property", get_property>;
  gobject_class->finalize = finalize;
  install_common_properties(gobject_class, Side::sender);
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_HOST,
      g_param_spec_string("host", "Host",
                          "Receiver's address or host name, or the name a receiver advertises "
                          "by DNS-SD (a name no host has is looked up so; port is then the "
                          "advertised one). Default 127.0.0.1; read when the element starts "
                          "(READY to PAUSED).",
                          "127.0.0.1", flags));
  g_object_class_install_property(
      gobject_class, PROP_DESTINATIONS,
      g_param_spec_string("destinations", "Destinations",
                          "Fan-out: receivers as host:port,host:port (or their DNS-SD names); "
                          "every frame goes to each, on "
                          "a connection of its own (host and port are then not used). A receiver "
                          "that fails is dropped while the others go on. Default empty (host and "
                          "port); read when the element starts.",
                          "", flags));
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Mode",
                        "live: drop a frame when the receiver has no free slot (counted in "
                        "stats, the stream is flagged live); no-drop: wait for a slot. "
                        "Default no-drop; read when the element starts.",
                        mode_enum_type(), static_cast<gint>(SinkMode::no_drop), flags));
  g_object_class_install_property(
      gobject_class, PROP_CHECKSUM,
      g_param_spec_boolean("checksum", "Checksum",
                           "Send an XXH3-64 checksum of every frame, which the receiver checks "
                           "when it verifies. Default false; read when the element starts.",
                           FALSE, flags));
  g_object_class_install_property(
      gobject_class, PROP_STREAM_NAME,
      g_param_spec_string("stream-name", "Stream name",
                          "Name sent in StreamStart (at most 63 bytes); empty: the element's "
                          "name. Read when the element starts.",
                          "", flags));

  gst_element_class_set_static_metadata(
      element_class, "RDMA video sink", "Sink/Network/Video",
      "Sends raw video frames into an rdmavideo receiver's ring over RDMA verbs or TCP, with "
      "an audio track for each audio_N pad",
      "rdmavideo developers");
  GstCaps* caps = cuda_caps_built() ? with_cuda_variants(template_caps()) : template_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  GstCaps* audio_caps = audio_template_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("audio_%u", GST_PAD_SINK, GST_PAD_REQUEST, audio_caps));
  gst_caps_unref(audio_caps);

  // Every function GStreamer calls stops exceptions at its edge (boundary.hpp).
  element_class->change_state = guarded<"change state", change_state>;
  element_class->request_new_pad = guarded<"add an audio pad", request_new_pad>;
  element_class->release_pad = guarded<"release an audio pad", release_pad>;
  sink_class->start = guarded<"connect to the receiver", sink_start>;
  sink_class->stop = guarded<"end the stream", sink_stop>;
  sink_class->unlock = guarded<"unlock", sink_unlock>;
  sink_class->unlock_stop = guarded<"end an unlock", sink_unlock_stop>;
  sink_class->set_caps = guarded<"take the caps", sink_set_caps>;
  sink_class->propose_allocation = guarded<"propose an allocation", sink_propose_allocation>;
  sink_class->render = guarded<"send a frame", sink_render>;
  sink_class->event = guarded<"handle an event", sink_event>;
  sink_class->get_caps = guarded<"answer a caps query", sink_get_caps>;
  sink_class->query = guarded<"answer a query", sink_query>;
  gst_type_mark_as_plugin_api(transport_enum_type(), static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(mode_enum_type(), static_cast<GstPluginAPIFlags>(0));
}

static void gst_rdma_sink_init(GstRdmaSink* self) {
  self->state = new rdmavideo::gst::SinkState();
  self->state->audio = std::make_unique<rdmavideo::gst::SinkAudio>(GST_ELEMENT(self));
  // Latency and sync are the pipeline's: a network sink renders when the clock says.
  gst_base_sink_set_sync(GST_BASE_SINK(self), TRUE);
  // A held last sample would keep a pool buffer (and its registration) busy for nothing.
  gst_base_sink_set_last_sample_enabled(GST_BASE_SINK(self), FALSE);
}
