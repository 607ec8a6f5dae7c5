// SPDX-License-Identifier: Apache-2.0
#define GST_USE_UNSTABLE_API  // GStreamer's CUDA library is unstable API in 1.22
#include "cuda_caps.hpp"

#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

#include "rdmavideo/log.hpp"

namespace rdmavideo::gst {

bool cuda_caps_built() { return true; }

std::string cuda_caps_unavailable(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::string> why;
  std::lock_guard lock(mu);
  if (auto it = why.find(ordinal); it != why.end()) return it->second;
  std::string reason;
  if (auto device = cuda::Device::shared(ordinal); !device) {
    reason = fmt::format("no memory:CUDAMemory caps: {}", device.error().message());
  } else if (!gst_cuda_load_library()) {
    reason =
        "no memory:CUDAMemory caps: GStreamer's CUDA library (libgstcuda-1.0) cannot load the "
        "CUDA driver it opens itself";
  }
  return why.emplace(ordinal, reason).first->second;
}

GstCaps* with_cuda_variants(GstCaps* caps) {
  GstCaps* cuda = gst_caps_copy(caps);
  gst_caps_set_features_simple(cuda,
                               gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, nullptr));
  // GStreamer's CUDA memory has no v210 (a packed format it does not lay out).
  for (guint i = 0; i < gst_caps_get_size(cuda); ++i) {
    GstStructure* structure = gst_caps_get_structure(cuda, i);
    const GValue* formats = gst_structure_get_value(structure, "format");
    if (formats && GST_VALUE_HOLDS_LIST(formats)) {
      GValue kept = G_VALUE_INIT;
      gst_value_list_init(&kept, gst_value_list_get_size(formats));
      for (guint f = 0; f < gst_value_list_get_size(formats); ++f) {
        const GValue* format = gst_value_list_get_value(formats, f);
        if (std::string_view(g_value_get_string(format)) != "v210")
          gst_value_list_append_value(&kept, format);
      }
      gst_structure_take_value(structure, "format", &kept);
    } else if (formats && G_VALUE_HOLDS_STRING(formats) &&
               std::string_view(g_value_get_string(formats)) == "v210") {
      gst_caps_remove_structure(cuda, i--);
    }
  }
  gst_caps_append(cuda, caps);
  return cuda;
}

GstCaps* without_cuda_variants(GstCaps* caps) {
  caps = gst_caps_make_writable(caps);
  for (guint i = gst_caps_get_size(caps); i-- > 0;) {
    GstCapsFeatures* features = gst_caps_get_features(caps, i);
    if (features && gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY)) {
      gst_caps_remove_structure(caps, i);
    }
  }
  return caps;
}

bool is_cuda_caps(const GstCaps* caps) {
  if (!caps || gst_caps_get_size(caps) == 0) return false;
  GstCapsFeatures* features = gst_caps_get_features(caps, 0);
  return features && gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
}

// ---- context

struct CudaContextShare::Impl {
  std::mutex mu;
  GstCudaContext* context = nullptr;  // wraps the primary context of `device`
  std::shared_ptr<cuda::Device> device;

  // The context for `ordinal`, made on first use; null where CUDA caps are not offered.
  GstCudaContext* get(int ordinal) {
    std::lock_guard lock(mu);
    if (context) return context;
    if (!cuda_caps_unavailable(ordinal).empty()) return nullptr;
    auto opened = cuda::Device::shared(ordinal);
    if (!opened) return nullptr;
    device = *opened;
    context = gst_cuda_context_new_wrapped(static_cast<CUcontext>(device->native_context()),
                                           static_cast<CUdevice>(device->native_device()));
    return context;
  }
};

CudaContextShare::CudaContextShare() : impl_(std::make_unique<Impl>()) {}
CudaContextShare::~CudaContextShare() {
  if (impl_->context) gst_object_unref(impl_->context);
}

bool CudaContextShare::handle_query(GstElement* element, GstQuery* query, int ordinal) {
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT) return false;
  const gchar* type = nullptr;
  gst_query_parse_context_type(query, &type);
  if (!type || std::string_view(type) != GST_CUDA_CONTEXT_TYPE) return false;
  GstCudaContext* context = impl_->get(ordinal);
  return context && gst_cuda_handle_context_query(element, query, context);
}

// ---- frames

struct CudaFrames::Impl {
  GstElement* element = nullptr;
  GstCudaContext* context = nullptr;  // the share's, which outlives this
  std::shared_ptr<cuda::Device> device;
  std::unique_ptr<cuda::Stream> stream;
  GstVideoInfo info;
  FrameLayout layout;
  GstBufferPool* pool = nullptr;  // copy_out's, made with the first caps
  uint64_t round_trips = 0;

  ~Impl() {
    if (pool) {
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
    }
  }

  // Queues the copy of each plane between a GStreamer frame (plane p at `base` + offset[p],
  // rows stride[p] apart) and the stream's layout at `ours`.
  Result<void> copy_planes(cuda::Pitched ours_base, bool to_ours, uint64_t base,
                           bool base_on_device, const gsize* offsets, const gint* strides) {
    std::array<cuda::Pitched, kMaxPlanes> theirs{};
    const int planes = std::min(layout.plane_count, kMaxPlanes);
    for (int p = 0; p < planes; ++p) {
      theirs[p] = {base_on_device, base + offsets[p], static_cast<size_t>(strides[p])};
    }
    return stream->copy_planes(layout, ours_base, std::span(theirs).first(planes),
                               to_ours ? CopyDirection::to_wire : CopyDirection::from_wire);
  }

  bool ours(GstMemory* memory) const {
    return gst_is_cuda_memory(memory) &&
           gst_cuda_context_get_handle(GST_CUDA_MEMORY_CAST(memory)->context) ==
               device->native_context();
  }

  void note_round_trip() {
    if (round_trips++ == 0) {
      GST_ELEMENT_WARNING(
          element, RESOURCE, SETTINGS,
          ("CUDA frames go through host memory: a neighbour uses a CUDA context of its own."),
          ("share one: the neighbour asks for GStreamer's CUDA context after this element "
           "(set cuda-device-id alike, or let this element reach READY first)"));
    }
  }
};

CudaFrames::CudaFrames(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaFrames::~CudaFrames() = default;

Result<std::unique_ptr<CudaFrames>> CudaFrames::create(GstElement* element, CudaContextShare& share,
                                                       int ordinal, const GstVideoInfo& info,
                                                       const FrameLayout& layout) {
  GstCudaContext* context = share.impl_->get(ordinal);
  if (!context) return make_error(ErrorCode::unsupported, "{}", cuda_caps_unavailable(ordinal));
  gst_cuda_memory_init_once();
  auto impl = std::make_unique<Impl>();
  impl->element = element;
  impl->context = context;
  impl->device = share.impl_->device;
  impl->info = info;
  impl->layout = layout;
  auto stream = impl->device->create_stream();
  if (!stream) return Unexpected(stream.error());
  impl->stream = std::move(*stream);
  return std::unique_ptr<CudaFrames>(new CudaFrames(std::move(impl)));
}

Result<void> CudaFrames::copy_in(GstBuffer* buffer, uint64_t out, bool on_device) {
  Impl& s = *impl_;
  const cuda::Pitched target{on_device, out, 0};
  GstMemory* memory =
      gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : nullptr;
  if (memory && s.ours(memory)) {
    // On the GPU, in our context: a copy there, plane by plane.
    GstMapInfo map;
    if (!gst_memory_map(memory, &map, static_cast<GstMapFlags>(GST_MAP_READ | GST_MAP_CUDA))) {
      return make_error(ErrorCode::system, "a CUDA buffer does not map for reading on the GPU");
    }
    const auto* cuda_memory = GST_CUDA_MEMORY_CAST(memory);
    auto ok = s.copy_planes(target, true, reinterpret_cast<uintptr_t>(map.data), true,
                            cuda_memory->info.offset, cuda_memory->info.stride);
    gst_memory_unmap(memory, &map);
    return ok;
  }
  if (memory && gst_is_cuda_memory(memory)) s.note_round_trip();
  // System memory, or CUDA memory of another context that GStreamer downloads to map it.
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &s.info, buffer, GST_MAP_READ)) {
    return make_error(ErrorCode::invalid_argument, "buffer of {} bytes does not map as a {} frame",
                      gst_buffer_get_size(buffer), GST_VIDEO_INFO_NAME(&s.info));
  }
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  const auto base = reinterpret_cast<uintptr_t>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    offsets[p] = reinterpret_cast<uintptr_t>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)) - base;
    strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
  }
  auto ok = s.copy_planes(target, true, base, false, offsets, strides);
  gst_video_frame_unmap(&frame);
  return ok;
}

Result<GstBuffer*> CudaFrames::copy_out(uint64_t from, bool on_device, GstCaps* caps) {
  Impl& s = *impl_;
  if (!s.pool) {
    s.pool = gst_cuda_buffer_pool_new(s.context);
    GstStructure* config = gst_buffer_pool_get_config(s.pool);
    gst_buffer_pool_config_set_params(config, caps,
                                      static_cast<guint>(GST_VIDEO_INFO_SIZE(&s.info)), 2, 0);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(s.pool, config) || !gst_buffer_pool_set_active(s.pool, TRUE)) {
      return make_error(ErrorCode::resource, "GStreamer's CUDA buffer pool refused {}",
                        GST_VIDEO_INFO_NAME(&s.info));
    }
  }
  GstBuffer* buffer = nullptr;
  if (gst_buffer_pool_acquire_buffer(s.pool, &buffer, nullptr) != GST_FLOW_OK || !buffer) {
    return make_error(ErrorCode::resource, "no buffer from GStreamer's CUDA buffer pool");
  }
  GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
  GstMapInfo map;
  if (!gst_memory_map(memory, &map, static_cast<GstMapFlags>(GST_MAP_WRITE | GST_MAP_CUDA))) {
    gst_buffer_unref(buffer);
    return make_error(ErrorCode::system, "a CUDA buffer does not map for writing on the GPU");
  }
  const auto* cuda_memory = GST_CUDA_MEMORY_CAST(memory);
  auto ok =
      s.copy_planes(cuda::Pitched{on_device, from, 0}, false, reinterpret_cast<uintptr_t>(map.data),
                    true, cuda_memory->info.offset, cuda_memory->info.stride);
  gst_memory_unmap(memory, &map);
  if (!ok) {
    gst_buffer_unref(buffer);
    return Unexpected(ok.error());
  }
  return buffer;
}

uint64_t CudaFrames::host_round_trips() const { return impl_->round_trips; }

}  // namespace rdmavideo::gst
