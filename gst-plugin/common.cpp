// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

#include "cuda_caps.hpp"

#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

#include "rdmavideo/format.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::gst {
namespace {

struct FormatPair {
  PixelFormat ours;
  GstVideoFormat theirs;
};
constexpr std::array kFormats = {
    FormatPair{PixelFormat::nv12, GST_VIDEO_FORMAT_NV12},
    FormatPair{PixelFormat::i420, GST_VIDEO_FORMAT_I420},
    FormatPair{PixelFormat::p010, GST_VIDEO_FORMAT_P010_10LE},
    FormatPair{PixelFormat::uyvy, GST_VIDEO_FORMAT_UYVY},
    FormatPair{PixelFormat::yuy2, GST_VIDEO_FORMAT_YUY2},
    FormatPair{PixelFormat::v210, GST_VIDEO_FORMAT_v210},
    FormatPair{PixelFormat::rgba, GST_VIDEO_FORMAT_RGBA},
    FormatPair{PixelFormat::bgra, GST_VIDEO_FORMAT_BGRA},
    FormatPair{PixelFormat::rgb24, GST_VIDEO_FORMAT_RGB},
    FormatPair{PixelFormat::yuv422p10, GST_VIDEO_FORMAT_I422_10LE},
    FormatPair{PixelFormat::yuv444p, GST_VIDEO_FORMAT_Y444},
    FormatPair{PixelFormat::yuv444p10, GST_VIDEO_FORMAT_Y444_10LE},
    FormatPair{PixelFormat::yuv444p12, GST_VIDEO_FORMAT_Y444_12LE},
};

// GStreamer's colorimetry and ours meet at H.273 (the *_to_iso/_from_iso functions).
Colour colour_of(const GstVideoColorimetry& c) {
  Colour out;
  const auto code = [](guint iso, uint8_t unspecified) -> uint8_t {
    return iso == unspecified || iso > 255 ? 0 : static_cast<uint8_t>(iso);
  };
  out.primaries = code(gst_video_color_primaries_to_iso(c.primaries), 2);
  out.transfer = code(gst_video_transfer_function_to_iso(c.transfer), 2);
  out.matrix =
      c.matrix == GST_VIDEO_COLOR_MATRIX_RGB ? 0 : code(gst_video_color_matrix_to_iso(c.matrix), 2);
  out.range = c.range == GST_VIDEO_COLOR_RANGE_16_235  ? colour::kLimited
              : c.range == GST_VIDEO_COLOR_RANGE_0_255 ? colour::kFull
                                                       : 0;
  if (!validate(out)) return {};
  return out;
}

void set_colorimetry(GstVideoColorimetry& c, const Colour& colour, bool rgb) {
  if (colour.primaries) c.primaries = gst_video_color_primaries_from_iso(colour.primaries);
  if (colour.transfer) c.transfer = gst_video_transfer_function_from_iso(colour.transfer);
  if (colour.matrix && !rgb) c.matrix = gst_video_color_matrix_from_iso(colour.matrix);
  if (colour.range) {
    c.range =
        colour.range == colour::kFull ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235;
  }
}

}  // namespace

const char* caps_format_list() {
  return "{ NV12, I420, P010_10LE, UYVY, YUY2, v210, RGBA, BGRA, RGB, I422_10LE, Y444, Y444_10LE, "
         "Y444_12LE }";
}

GstCaps* template_caps() {
  // The protocol needs a fixed, non-zero frame rate (StreamStart.frame_rate).
  const std::string text = fmt::format(
      "video/x-raw, format = (string) {}, width = (int) [ 1, {} ], height = (int) [ 1, {} ], "
      "framerate = (fraction) [ 1/2147483647, 2147483647/1 ]",
      caps_format_list(), kMaxDimension, kMaxDimension);
  return gst_caps_from_string(text.c_str());
}

std::optional<GstVideoFormat> video_format(PixelFormat format) {
  for (const auto& pair : kFormats) {
    if (pair.ours == format) return pair.theirs;
  }
  return std::nullopt;
}

std::optional<PixelFormat> pixel_format(GstVideoFormat format) {
  for (const auto& pair : kFormats) {
    if (pair.theirs == format) return pair.ours;
  }
  return std::nullopt;
}

Result<proto::StreamStart> stream_start(const GstVideoInfo& info) {
  const GstVideoFormat gst_format = GST_VIDEO_INFO_FORMAT(&info);
  const auto format = pixel_format(gst_format);
  if (!format) {
    return make_error(ErrorCode::unsupported, "caps format {} is not one rdmavideo carries ({})",
                      gst_video_format_to_string(gst_format), caps_format_list());
  }
  if (GST_VIDEO_INFO_IS_INTERLACED(&info)) {
    return make_error(ErrorCode::unsupported, "interlaced video is not carried (caps say {})",
                      gst_video_interlace_mode_to_string(GST_VIDEO_INFO_INTERLACE_MODE(&info)));
  }
  const auto width = static_cast<uint32_t>(GST_VIDEO_INFO_WIDTH(&info));
  const auto height = static_cast<uint32_t>(GST_VIDEO_INFO_HEIGHT(&info));
  const Rational rate{static_cast<uint32_t>(std::max(GST_VIDEO_INFO_FPS_N(&info), 0)),
                      static_cast<uint32_t>(std::max(GST_VIDEO_INFO_FPS_D(&info), 0))};
  auto start = proto::make_stream_start(*format, width, height, rate);
  if (!start) return start;
  // GStreamer's layout, as it is: the protocol carries strides and offsets, so upstream's
  // buffers go out without being repacked.
  FrameLayout layout = start->layout;
  if (static_cast<int>(GST_VIDEO_INFO_N_PLANES(&info)) != layout.plane_count) {
    return make_error(ErrorCode::unsupported, "{} has {} planes in GStreamer, {} in rdmavideo",
                      gst_video_format_to_string(gst_format), GST_VIDEO_INFO_N_PLANES(&info),
                      layout.plane_count);
  }
  for (int i = 0; i < layout.plane_count; ++i) {
    if (GST_VIDEO_INFO_PLANE_STRIDE(&info, i) <= 0) {
      return make_error(ErrorCode::unsupported,
                        "plane {} stride {} (negative strides are not carried)", i,
                        GST_VIDEO_INFO_PLANE_STRIDE(&info, i));
    }
    layout.planes[i].offset = static_cast<uint32_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i));
    layout.planes[i].stride = static_cast<uint32_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, i));
  }
  layout.frame_bytes = static_cast<uint32_t>(GST_VIDEO_INFO_SIZE(&info));
  if (auto ok = validate_layout(*format, width, height, layout); !ok) {
    return Unexpected(ok.error().context("GStreamer layout"));
  }
  start->layout = layout;
  start->colour = colour_of(info.colorimetry);
  return start;
}

Result<GstVideoInfo> video_info(const proto::StreamStart& format) {
  const auto gst_format = video_format(format.pixel_format);
  if (!gst_format) {
    return make_error(ErrorCode::unsupported, "pixel format {} has no GStreamer format",
                      name(format.pixel_format));
  }
  GstVideoInfo info;
  gst_video_info_init(&info);
  if (!gst_video_info_set_format(&info, *gst_format, format.width, format.height)) {
    return make_error(ErrorCode::unsupported, "GStreamer cannot describe {} {}x{}",
                      name(format.pixel_format), format.width, format.height);
  }
  constexpr uint32_t kMostFractionTerm = G_MAXINT;  // GstFraction's terms are gints
  if (format.frame_rate.num > kMostFractionTerm || format.frame_rate.den > kMostFractionTerm) {
    return make_error(ErrorCode::unsupported,
                      "StreamStart.frame_rate {} does not fit GStreamer's framerate (a fraction "
                      "of two numbers up to {})",
                      to_string(format.frame_rate), kMostFractionTerm);
  }
  GST_VIDEO_INFO_FPS_N(&info) = static_cast<gint>(format.frame_rate.num);
  GST_VIDEO_INFO_FPS_D(&info) = static_cast<gint>(format.frame_rate.den);
  if (static_cast<int>(GST_VIDEO_INFO_N_PLANES(&info)) != format.layout.plane_count) {
    return make_error(ErrorCode::unsupported, "{} has {} planes in GStreamer, {} on the wire",
                      name(format.pixel_format), GST_VIDEO_INFO_N_PLANES(&info),
                      format.layout.plane_count);
  }
  for (int i = 0; i < format.layout.plane_count; ++i) {
    GST_VIDEO_INFO_PLANE_OFFSET(&info, i) = format.layout.planes[i].offset;
    GST_VIDEO_INFO_PLANE_STRIDE(&info, i) = static_cast<gint>(format.layout.planes[i].stride);
  }
  GST_VIDEO_INFO_SIZE(&info) = format.layout.frame_bytes;
  // What the sender said; the rest stays GStreamer's default for the format and size.
  set_colorimetry(info.colorimetry, format.colour, traits(format.pixel_format).rgb);
  return info;
}

bool has_default_layout(const GstVideoInfo& info) {
  GstVideoInfo reference;
  gst_video_info_init(&reference);
  if (!gst_video_info_set_format(&reference, GST_VIDEO_INFO_FORMAT(&info),
                                 GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info))) {
    return false;
  }
  for (guint i = 0; i < GST_VIDEO_INFO_N_PLANES(&info); ++i) {
    if (GST_VIDEO_INFO_PLANE_OFFSET(&info, i) != GST_VIDEO_INFO_PLANE_OFFSET(&reference, i) ||
        GST_VIDEO_INFO_PLANE_STRIDE(&info, i) != GST_VIDEO_INFO_PLANE_STRIDE(&reference, i)) {
      return false;
    }
  }
  return GST_VIDEO_INFO_SIZE(&info) <= GST_VIDEO_INFO_SIZE(&reference);
}

GType transport_enum_type() {
  static const GType type = [] {
    static const GEnumValue values[] = {
        {static_cast<gint>(TransportKind::automatic),
         "RDMA verbs where an RDMA device reaches the peer, else TCP", "auto"},
        {static_cast<gint>(TransportKind::tcp), "TCP", "tcp"},
        {static_cast<gint>(TransportKind::verbs), "RDMA verbs (rdma_cm, RC queue pair)", "verbs"},
        {0, nullptr, nullptr},
    };
    return g_enum_register_static("GstRdmaVideoTransport", values);
  }();
  return type;
}

namespace {

// What the shared properties say on each side; everything else about them is the same.
struct SideTexts {
  guint port_min;
  const char* port;
  const char* transport;
  const char* rdma_device;
  const char* key_file;
  const char* memory;
  const char* stats;
};

const SideTexts& texts(Side side) {
  static const SideTexts sender{
      1,
      "Receiver's port (TCP port, and rdma_cm port for verbs). Default 5000; read when the "
      "element starts (READY to PAUSED).",
      "How frames travel: auto (verbs where an RDMA device reaches the receiver, else TCP), tcp, "
      "or verbs. Default auto; read when the element starts.",
      "Verbs: the RDMA device the route must use, e.g. mlx5_0. Default empty (any); read when "
      "the element starts.",
      "Shared key (a file of at least 32 bytes, mode 0600; rdmavideo-doctor --new-key makes "
      "one): the receiver must prove it before a frame is sent, and this element proves it "
      "back. Default empty (no authentication); read when the element starts.",
      "Where the frames sent are kept: host, or cuda / cuda:N (GPU N's memory, which the NIC "
      "reads where GPUDirect RDMA works). Read when the element starts.",
      "rdmasink-stats: frames, bytes, dropped, copies (frames not sent zero-copy), "
      "checksum-failures, jumps, silence-ms and audio-dropped (0: rdmasrc's), latency-p50-ns, "
      "latency-p99-ns, latency-max-ns (credit wait plus "
      "write, per frame), seconds, transport, peer. Updated every frame.",
  };
  static const SideTexts receiver{
      0,
      "Port to listen on (TCP, and rdma_cm for verbs); 0 picks a free one, readable from "
      "bound-port. Default 5000; read when the element starts (READY to PAUSED).",
      "Which senders to take: auto (TCP, and verbs on the same port where an RDMA device "
      "exists), tcp, or verbs. Default auto; read when the element starts.",
      "Verbs: accept only on this RDMA device, e.g. mlx5_0. Default empty (any); read when the "
      "element starts.",
      "Shared key (a file of at least 32 bytes, mode 0600; rdmavideo-doctor --new-key makes "
      "one): a sender must prove it before it learns anything about the ring, and this element "
      "proves it back. Default empty (no authentication); read when the element starts.",
      "Where the ring is: host, or cuda / cuda:N (GPU N's memory, which the NIC writes where "
      "GPUDirect RDMA works). Read when the element starts.",
      "rdmasrc-stats: frames, bytes, dropped (by the sender, from gaps in its sequence), copies "
      "(frames repacked for downstream, or copied out of the ring while a muxer waits for "
      "sound), checksum-failures, jumps (pictures or a track whose timestamps strayed, moved "
      "back beside the others), silence-ms (silence put into holes in the sound), "
      "audio-dropped (samples a pad whose downstream took none dropped), latency-p50-ns, "
      "latency-p99-ns, "
      "latency-max-ns (sender's write start to arrival; same-clock hosts only), seconds, "
      "transport, peer. Updated every frame.",
  };
  return side == Side::sender ? sender : receiver;
}

}  // namespace

std::string string_of(const GValue* value, const char* otherwise) {
  const char* text = g_value_get_string(value);
  return text ? text : otherwise;
}

void install_common_properties(GObjectClass* klass, Side side) {
  const SideTexts& t = texts(side);
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  const auto read_only = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  const CommonSettings defaults;
  g_object_class_install_property(
      klass, PROP_PORT,
      g_param_spec_uint("port", "Port", t.port, t.port_min, 65535, defaults.port, flags));
  g_object_class_install_property(
      klass, PROP_TRANSPORT,
      g_param_spec_enum("transport", "Transport", t.transport, transport_enum_type(),
                        static_cast<gint>(defaults.transport), flags));
  g_object_class_install_property(
      klass, PROP_RDMA_DEVICE,
      g_param_spec_string("rdma-device", "RDMA device", t.rdma_device, "", flags));
  g_object_class_install_property(
      klass, PROP_KEY_FILE, g_param_spec_string("key-file", "Key file", t.key_file, "", flags));
  g_object_class_install_property(
      klass, PROP_MEMORY,
      g_param_spec_string("memory", "Memory", t.memory, defaults.memory.c_str(), flags));
  g_object_class_install_property(
      klass, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics", t.stats, GST_TYPE_STRUCTURE, read_only));
  g_object_class_install_property(
      klass, PROP_CUDA_CAPS,
      g_param_spec_string(
          "cuda-caps", "CUDA caps",
          "Whether video/x-raw(memory:CUDAMemory) is offered (\"offered on cuda:N\"), "
          "or why not.",
          "", read_only));
}

bool set_common_property(CommonSettings& s, guint id, const GValue* value) {
  switch (id) {
    case PROP_PORT: s.port = g_value_get_uint(value); return true;
    case PROP_TRANSPORT:
      s.transport = static_cast<TransportKind>(g_value_get_enum(value));
      return true;
    case PROP_RDMA_DEVICE: s.rdma_device = string_of(value); return true;
    case PROP_KEY_FILE: s.key_file = string_of(value); return true;
    case PROP_MEMORY: s.memory = string_of(value, "host"); return true;
    default: return false;
  }
}

bool get_common_property(const CommonSettings& s, guint id, GValue* value) {
  switch (id) {
    case PROP_PORT: g_value_set_uint(value, s.port); return true;
    case PROP_TRANSPORT: g_value_set_enum(value, static_cast<gint>(s.transport)); return true;
    case PROP_RDMA_DEVICE: g_value_set_string(value, s.rdma_device.c_str()); return true;
    case PROP_KEY_FILE: g_value_set_string(value, s.key_file.c_str()); return true;
    case PROP_MEMORY: g_value_set_string(value, s.memory.c_str()); return true;
    default: return false;
  }
}

GType mode_enum_type() {
  static const GType type = [] {
    static const GEnumValue values[] = {
        {static_cast<gint>(SinkMode::live),
         "Drop a frame when the receiver has no free slot (counted in stats)", "live"},
        {static_cast<gint>(SinkMode::no_drop), "Wait for a free slot; never drop", "no-drop"},
        {0, nullptr, nullptr},
    };
    return g_enum_register_static("GstRdmaSinkMode", values);
  }();
  return type;
}

StatsSnapshot snapshot(const stats::TransferStats& stats) {
  StatsSnapshot s;
  s.frames = stats.frames;
  s.bytes = stats.bytes;
  s.dropped = stats.dropped;
  s.drops = stats.drops;
  s.checksum_failures = stats.checksum_failures;
  s.latency_p50_ns = stats.latency.percentile_ns(0.50);
  s.latency_p99_ns = stats.latency.percentile_ns(0.99);
  s.latency_max_ns = stats.latency.max_ns();
  s.seconds = stats.seconds();
  return s;
}

GstStructure* stats_structure(const char* name, const StatsSnapshot& s) {
  GstStructure* structure =
      gst_structure_new(name,                                                     //
                        "frames", G_TYPE_UINT64, s.frames,                        //
                        "bytes", G_TYPE_UINT64, s.bytes,                          //
                        "dropped", G_TYPE_UINT64, s.dropped,                      //
                        "copies", G_TYPE_UINT64, s.copies,                        //
                        "checksum-failures", G_TYPE_UINT64, s.checksum_failures,  //
                        "jumps", G_TYPE_UINT64, s.jumps,                          //
                        "silence-ms", G_TYPE_UINT64, s.silence_ms,                //
                        "audio-dropped", G_TYPE_UINT64, s.audio_dropped,          //
                        "latency-p50-ns", G_TYPE_UINT64, s.latency_p50_ns,        //
                        "latency-p99-ns", G_TYPE_UINT64, s.latency_p99_ns,        //
                        "latency-max-ns", G_TYPE_UINT64, s.latency_max_ns,        //
                        "seconds", G_TYPE_DOUBLE, s.seconds,                      //
                        "transport", G_TYPE_STRING, s.transport.c_str(),          //
                        "peer", G_TYPE_STRING, s.peer.c_str(), nullptr);
  for (size_t i = 0; i < stats::kDropCauses; ++i) {
    std::string field =
        "dropped-" + std::string(stats::to_string(static_cast<stats::DropCause>(i)));
    std::replace(field.begin(), field.end(), '_', '-');
    gst_structure_set(structure, field.c_str(), G_TYPE_UINT64, s.drops[i], nullptr);
  }
  return structure;
}

bool load_key_file(GstElement* element, const std::string& path,
                   std::shared_ptr<const auth::SharedKey>& key) {
  if (path.empty()) return true;
  auto loaded = auth::load_key(path);
  if (!loaded) {
    // What GST_ELEMENT_ERROR posts, without a debug category of its own.
    gst_element_message_full(
        element, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        g_strdup_printf("Cannot use key-file %s.", path.c_str()),
        g_strdup(loaded.error().message().c_str()), __FILE__, GST_FUNCTION, __LINE__);
    return false;
  }
  key = std::move(*loaded);
  return true;
}

void ElementStats::publish(StatsSnapshot stats) {
  std::lock_guard lock(mu_);
  stats_ = std::move(stats);
}

StatsSnapshot ElementStats::read() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void ElementStats::post(GstElement* element, GstDebugCategory* category) const {
  const StatsSnapshot s = read();
  GST_CAT_INFO_OBJECT(
      category, element,
      "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT
      " dropped, %" G_GUINT64_FORMAT " copies, %" G_GUINT64_FORMAT " checksum failures, over %s",
      s.frames, s.bytes, s.dropped, s.copies, s.checksum_failures, s.transport.c_str());
  gst_element_post_message(element,
                           gst_message_new_element(GST_OBJECT(element), stats_structure(name_, s)));
}

void copy_planes(const FrameLayout& wire, std::byte* wire_data, const GstVideoFrame& frame,
                 CopyTo to) {
  std::array<ForeignPlane, kMaxPlanes> planes{};
  const int count = std::min<int>(wire.plane_count, GST_VIDEO_FRAME_N_PLANES(&frame));
  for (int p = 0; p < count; ++p) {
    planes[p] = {static_cast<std::byte*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)),
                 static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p))};
  }
  rdmavideo::copy_planes(wire, wire_data, std::span(planes).first(count),
                         to == CopyTo::wire ? CopyDirection::to_wire : CopyDirection::from_wire);
}

namespace {

// An spdlog sink writing into a GStreamer debug category.
class GstLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit GstLogSink(GstDebugCategory* category) : category_(category) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    GstDebugLevel level = GST_LEVEL_LOG;
    switch (msg.level) {
      case spdlog::level::critical:
      case spdlog::level::err: level = GST_LEVEL_ERROR; break;
      case spdlog::level::warn: level = GST_LEVEL_WARNING; break;
      case spdlog::level::info: level = GST_LEVEL_INFO; break;
      case spdlog::level::debug: level = GST_LEVEL_DEBUG; break;
      default: level = GST_LEVEL_LOG; break;
    }
    gst_debug_log(category_, level, msg.source.filename ? msg.source.filename : "librdmavideo",
                  msg.source.funcname ? msg.source.funcname : "", msg.source.line, nullptr, "%.*s",
                  static_cast<int>(msg.payload.size()), msg.payload.data());
  }
  void flush_() override {}

 private:
  GstDebugCategory* category_;
};

spdlog::level::level_enum level_for(GstDebugLevel threshold) {
  if (threshold >= GST_LEVEL_LOG) return spdlog::level::trace;
  if (threshold >= GST_LEVEL_DEBUG) return spdlog::level::debug;
  if (threshold >= GST_LEVEL_INFO) return spdlog::level::info;
  if (threshold >= GST_LEVEL_WARNING) return spdlog::level::warn;
  if (threshold >= GST_LEVEL_ERROR) return spdlog::level::err;
  return spdlog::level::off;
}

}  // namespace

void forward_library_log(GstDebugCategory* category) {
  auto& logger = log();
  logger.sinks().clear();
  logger.sinks().push_back(std::make_shared<GstLogSink>(category));
  logger.set_level(level_for(gst_debug_category_get_threshold(category)));
}

bool get_shared_property(GObject* object, const ElementStats& stats, const CommonSettings& settings,
                         guint id, GValue* value) {
  if (id == PROP_STATS) {
    g_value_take_boxed(value, stats.structure());
    return true;
  }
  if (id == PROP_CUDA_CAPS) {
    g_value_set_string(value,
                       cuda_caps_status(element_cuda_device(object, settings.memory)).c_str());
    return true;
  }
  GST_OBJECT_LOCK(object);
  const bool shared = get_common_property(settings, id, value);
  GST_OBJECT_UNLOCK(object);
  return shared;
}

}  // namespace rdmavideo::gst
