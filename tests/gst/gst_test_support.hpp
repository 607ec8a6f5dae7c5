// SPDX-License-Identifier: Apache-2.0
// Test support for the GStreamer elements: GStreamer started once per process with a private
// registry and the build tree's plugin, owners for pipelines and samples, bus waits with a
// deadline, free ports, open file descriptors, and frame contents compared plane by plane
// (visible bytes only, so a mismatch names frame, plane, row and byte).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"

namespace rdmavideo::testing {

/// Points GStreamer at the build tree's plugin and a registry file of our own, in this
/// process and in every child it starts. In a sanitizer build the children (GStreamer's
/// plugin scanner, gst-launch-1.0, gst-inspect-1.0) are not linked with the sanitizer
/// runtime, which must come first in a process to load our plugin: they get it preloaded,
/// and their leak check is off (their leaks are GStreamer's, not ours; this process still
/// checks its own, which ASAN_OPTIONS fixed when it started).
inline void set_gst_environment() {
  setenv("GST_PLUGIN_PATH", RDMAVIDEO_GST_PLUGIN_DIR, 1);
  setenv("GST_REGISTRY_1_0", RDMAVIDEO_GST_REGISTRY, 1);
  if (std::string(RDMAVIDEO_TEST_SANITIZER_RUNTIME).empty()) return;
  // GLib's slice allocator (GstBuffer, GstCaps, events) keeps leaked blocks in its own slabs
  // where LeakSanitizer cannot see them. GLib reads G_SLICE before main, so the sanitizer
  // run must set it; say so rather than pass with the leak check half blind.
  if (const char* slice = getenv("G_SLICE"); !slice || std::string(slice) != "always-malloc") {
    std::fprintf(stderr,
                 "note: G_SLICE=always-malloc is not set: leaked GStreamer buffers, caps and "
                 "events will not be reported\n");
  }
  setenv("LD_PRELOAD", RDMAVIDEO_TEST_SANITIZER_RUNTIME, 1);
  const char* options = getenv("ASAN_OPTIONS");
  const std::string children =
      std::string(options ? options : "") + (options ? ":" : "") + "detect_leaks=0";
  setenv("ASAN_OPTIONS", children.c_str(), 1);
}

inline void init_gstreamer() {
  static std::once_flag once;
  std::call_once(once, [] {
    set_gst_environment();
    gst_init(nullptr, nullptr);
  });
}

struct PipelineDeleter {
  void operator()(GstElement* pipeline) const noexcept {
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
  }
};
/// A pipeline that is set to NULL and unreffed when it goes.
using UniquePipeline = std::unique_ptr<GstElement, PipelineDeleter>;

struct ObjectDeleter {
  void operator()(gpointer object) const noexcept { gst_object_unref(object); }
};
template <typename T>
using UniqueObject = std::unique_ptr<T, ObjectDeleter>;

struct SampleDeleter {
  void operator()(GstSample* sample) const noexcept { gst_sample_unref(sample); }
};
using UniqueSample = std::unique_ptr<GstSample, SampleDeleter>;

struct BufferDeleter {
  void operator()(GstBuffer* buffer) const noexcept { gst_buffer_unref(buffer); }
};
using UniqueBuffer = std::unique_ptr<GstBuffer, BufferDeleter>;

struct CapsDeleter {
  void operator()(GstCaps* caps) const noexcept { gst_caps_unref(caps); }
};
using UniqueCaps = std::unique_ptr<GstCaps, CapsDeleter>;

struct MessageDeleter {
  void operator()(GstMessage* message) const noexcept { gst_message_unref(message); }
};
using UniqueMessage = std::unique_ptr<GstMessage, MessageDeleter>;

struct StructureDeleter {
  void operator()(GstStructure* s) const noexcept { gst_structure_free(s); }
};
using UniqueStructure = std::unique_ptr<GstStructure, StructureDeleter>;

/// gst_parse_launch, throwing with the parser's message.
inline UniquePipeline parse_pipeline(const std::string& description) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    std::string message = error->message;
    g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
    throw std::runtime_error("gst_parse_launch(" + description + "): " + message);
  }
  return UniquePipeline(pipeline);
}

/// The named element of a pipeline (a new reference).
inline UniqueObject<GstElement> element(GstElement* pipeline, const char* name) {
  GstElement* e = gst_bin_get_by_name(GST_BIN(pipeline), name);
  if (!e) throw std::runtime_error(std::string("no element named ") + name);
  return UniqueObject<GstElement>(e);
}

/// The next message of `types` on the pipeline's bus, or null at the deadline.
inline UniqueMessage pop_message(GstElement* pipeline, GstMessageType types,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  UniqueObject<GstBus> bus(gst_element_get_bus(pipeline));
  return UniqueMessage(gst_bus_timed_pop_filtered(
      bus.get(), static_cast<GstClockTime>(timeout.count()) * GST_MSECOND, types));
}

/// "error from rdmasrc0: <message> (<debug>)" for an error or warning message.
inline std::string describe(GstMessage* message) {
  if (!message) return "no message";
  GError* error = nullptr;
  gchar* debug = nullptr;
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
    gst_message_parse_error(message, &error, &debug);
  } else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_WARNING) {
    gst_message_parse_warning(message, &error, &debug);
  } else {
    return std::string(GST_MESSAGE_TYPE_NAME(message)) + " from " + GST_MESSAGE_SRC_NAME(message);
  }
  std::string text = std::string(GST_MESSAGE_TYPE_NAME(message)) + " from " +
                     GST_MESSAGE_SRC_NAME(message) + ": " + (error ? error->message : "") + " (" +
                     (debug ? debug : "") + ")";
  if (error) g_error_free(error);
  g_free(debug);
  return text;
}

/// What a pipeline posted until EOS, an error or the deadline.
struct BusLog {
  bool eos = false;
  std::optional<std::string> error;  ///< the first ERROR, described; or that time ran out
  std::vector<UniqueStructure> element_messages;  ///< in the order posted
  std::vector<std::string> warnings;              ///< WARNING messages, described
  /// The last element message of this structure name, or null.
  const GstStructure* last(const char* name) const {
    for (auto it = element_messages.rbegin(); it != element_messages.rend(); ++it) {
      if (gst_structure_has_name(it->get(), name)) return it->get();
    }
    return nullptr;
  }
  bool warned(const std::string& text) const {
    for (const auto& w : warnings) {
      if (w.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

/// Reads the bus until EOS or ERROR, keeping the element messages on the way.
inline BusLog wait_for_end(GstElement* pipeline,
                           std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  BusLog log;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto types = static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
                                                 GST_MESSAGE_ELEMENT | GST_MESSAGE_WARNING);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto message = left.count() > 0 ? pop_message(pipeline, types, left) : nullptr;
    if (!message) {
      log.error = "neither EOS nor an error within " + std::to_string(timeout.count()) + " ms";
      return log;
    }
    switch (GST_MESSAGE_TYPE(message.get())) {
      case GST_MESSAGE_EOS: log.eos = true; return log;
      case GST_MESSAGE_ERROR: log.error = describe(message.get()); return log;
      case GST_MESSAGE_WARNING: log.warnings.push_back(describe(message.get())); break;
      default:
        if (const GstStructure* s = gst_message_get_structure(message.get())) {
          log.element_messages.emplace_back(gst_structure_copy(s));
        }
    }
  }
}

/// The element's `stats` property.
inline UniqueStructure stats_of(GstElement* e) {
  GstStructure* s = nullptr;
  g_object_get(e, "stats", &s, nullptr);
  return UniqueStructure(s);
}

inline uint64_t u64_field(const GstStructure* s, const char* field) {
  guint64 value = 0;
  if (!s || !gst_structure_get_uint64(s, field, &value)) {
    throw std::runtime_error(std::string("stats have no uint64 field ") + field);
  }
  return value;
}

inline std::string string_field(const GstStructure* s, const char* field) {
  const gchar* value = s ? gst_structure_get_string(s, field) : nullptr;
  if (!value) throw std::runtime_error(std::string("stats have no string field ") + field);
  return value;
}

/// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
inline uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("bind to 127.0.0.1:0 failed");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

inline size_t open_fd_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

/// A frame's visible bytes, plane by plane, rows packed (no stride padding).
struct FrameBytes {
  std::vector<std::vector<uint8_t>> planes;
  std::vector<size_t> row_bytes;  // per plane
};

/// Bytes of one visible row of `plane`.
inline size_t visible_row_bytes(const GstVideoInfo& info, guint plane) {
  gint components[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(info.finfo, plane, components);
  const gint pstride = GST_VIDEO_INFO_COMP_PSTRIDE(&info, components[0]);
  if (pstride <= 0) return static_cast<size_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, plane));  // v210
  return static_cast<size_t>(GST_VIDEO_INFO_COMP_WIDTH(&info, components[0]) * pstride);
}

inline size_t visible_rows(const GstVideoInfo& info, guint plane) {
  gint components[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(info.finfo, plane, components);
  return static_cast<size_t>(GST_VIDEO_INFO_COMP_HEIGHT(&info, components[0]));
}

/// The visible bytes of `buffer` read as `info` (a GstVideoMeta on the buffer wins).
inline FrameBytes frame_bytes(GstBuffer* buffer, const GstVideoInfo& info) {
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ)) {
    throw std::runtime_error("buffer of " + std::to_string(gst_buffer_get_size(buffer)) +
                             " bytes does not map as " + GST_VIDEO_INFO_NAME(&info));
  }
  FrameBytes out;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    const size_t row = visible_row_bytes(info, p);
    const size_t rows = visible_rows(info, p);
    const auto* data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    const auto stride = static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));
    std::vector<uint8_t> plane(row * rows);
    for (size_t r = 0; r < rows; ++r) std::copy_n(data + r * stride, row, plane.data() + r * row);
    out.planes.push_back(std::move(plane));
    out.row_bytes.push_back(row);
  }
  gst_video_frame_unmap(&frame);
  return out;
}

/// Where `got` first differs from `want` ("frame 3 plane 1 row 7 byte 12: got 0x10, want
/// 0x80"), or nothing when they are equal.
inline std::optional<std::string> first_difference(const FrameBytes& got, const FrameBytes& want,
                                                   size_t frame_number) {
  const std::string frame = "frame " + std::to_string(frame_number);
  if (got.planes.size() != want.planes.size()) {
    return frame + ": " + std::to_string(got.planes.size()) + " planes, want " +
           std::to_string(want.planes.size());
  }
  for (size_t p = 0; p < got.planes.size(); ++p) {
    const auto& g = got.planes[p];
    const auto& w = want.planes[p];
    if (g.size() != w.size()) {
      return frame + " plane " + std::to_string(p) + ": " + std::to_string(g.size()) +
             " visible bytes, want " + std::to_string(w.size());
    }
    if (g == w) continue;  // memcmp; the element-wise search below is slow in the sanitizer build
    const auto [gi, wi] = std::mismatch(g.begin(), g.end(), w.begin());
    if (gi != g.end()) {
      const size_t at = static_cast<size_t>(gi - g.begin());
      char values[64];
      std::snprintf(values, sizeof values, ": got 0x%02x, want 0x%02x", *gi, *wi);
      return frame + " plane " + std::to_string(p) + " row " +
             std::to_string(at / got.row_bytes[p]) + " byte " +
             std::to_string(at % got.row_bytes[p]) + values;
    }
  }
  return std::nullopt;
}

/// The byte our seeded pattern has at this place of this frame: the frame number is
/// stamped into every byte, so a repeated, reordered or mixed-up frame shows.
inline uint8_t pattern_byte(uint32_t seed, size_t frame, size_t plane, size_t row, size_t col) {
  uint32_t x = seed ^ static_cast<uint32_t>(frame * 0x9E3779B1u) ^
               static_cast<uint32_t>(plane * 0x85EBCA77u) ^
               static_cast<uint32_t>(row * 0xC2B2AE3Du) ^ static_cast<uint32_t>(col * 0x27D4EB2Fu);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return static_cast<uint8_t>(x ^ (x >> 8) ^ frame);
}

/// Writes the pattern into the visible bytes of a mapped frame.
inline void fill_pattern(GstVideoFrame& frame, uint32_t seed, size_t frame_number) {
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    const size_t row = visible_row_bytes(frame.info, p);
    const size_t rows = visible_rows(frame.info, p);
    auto* data = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    const auto stride = static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < row; ++c)
        data[r * stride + c] = pattern_byte(seed, frame_number, p, r, c);
    }
  }
}

/// The pattern's visible bytes for `info`, for comparing against what arrived.
inline FrameBytes pattern_bytes(const GstVideoInfo& info, uint32_t seed, size_t frame_number) {
  FrameBytes out;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    const size_t row = visible_row_bytes(info, p);
    const size_t rows = visible_rows(info, p);
    std::vector<uint8_t> plane(row * rows);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < row; ++c)
        plane[r * row + c] = pattern_byte(seed, frame_number, p, r, c);
    }
    out.planes.push_back(std::move(plane));
    out.row_bytes.push_back(row);
  }
  return out;
}

/// The titles (GST_TAG_TITLE) of the tag events that reach a pad, in order.
struct TitlesSeen {
  std::mutex mu;
  std::vector<std::string> seen;
};

/// Records in `titles` every title that reaches the sink pad of `element` (an appsink).
inline void watch_titles(GstElement* element, TitlesSeen& titles) {
  GstPad* pad = gst_element_get_static_pad(element, "sink");
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      +[](GstPad*, GstPadProbeInfo* info, gpointer data) {
        GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info);
        GstTagList* tags = nullptr;
        gchar* title = nullptr;
        if (GST_EVENT_TYPE(e) == GST_EVENT_TAG) gst_event_parse_tag(e, &tags);
        if (tags && gst_tag_list_get_string(tags, GST_TAG_TITLE, &title)) {
          auto* t = static_cast<TitlesSeen*>(data);
          std::lock_guard lock(t->mu);
          t->seen.emplace_back(title);
          g_free(title);
        }
        return GST_PAD_PROBE_OK;
      },
      &titles, nullptr);
  gst_object_unref(pad);
}

/// gst-launch-1.0's argv for `pipeline` (which has no quoted spaces: it goes as separate
/// words), after `flags`.
inline std::vector<std::string> gst_launch_argv(const std::string& pipeline,
                                                const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv{RDMAVIDEO_GST_LAUNCH};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::istringstream words(pipeline);
  for (std::string word; words >> word;) argv.push_back(word);
  return argv;
}

/// Waits until gst-launch-1.0 (its stdout in `stdout_path`) has set its pipeline to PAUSED
/// (rdmasrc listens by then); false when it exited or the time ran out first.
inline bool wait_prerolling(const std::filesystem::path& stdout_path, Process& process,
                            std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(stdout_path).find("PREROLLING") != std::string::npos) return true;
    if (process.wait(std::chrono::milliseconds(0))) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace rdmavideo::testing
