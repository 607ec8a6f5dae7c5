// SPDX-License-Identifier: Apache-2.0
// What rdmasink and rdmasrc share: the mapping between GStreamer video caps and the
// protocol's StreamStart, the element enums, the stats and their structure, and the bridge that
// forwards librdmavideo's log lines into GStreamer's debug log.
//
// Pure translation: nothing here holds state beyond the registered GTypes and the log
// bridge installed once by plugin_init().
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::gst {

/// "{ NV12, I420, ... }": every format the protocol carries, in GStreamer's names.
const char* caps_format_list();
/// video/x-raw in every carried format, any size and rate: both elements' pad template.
GstCaps* template_caps();

std::optional<GstVideoFormat> video_format(PixelFormat format);
std::optional<PixelFormat> pixel_format(GstVideoFormat format);

/// The StreamStart for negotiated caps, with the layout GStreamer uses for them (its
/// strides and plane offsets, which the protocol carries as they are). No id, flags or name.
Result<proto::StreamStart> stream_start(const GstVideoInfo& info);
/// The video info for a received stream: GStreamer's description of the same frames, with
/// the sender's strides and offsets (which may differ from GStreamer's defaults).
Result<GstVideoInfo> video_info(const proto::StreamStart& format);
/// True when `info` has the strides and offsets GStreamer would pick for its caps, so a
/// buffer needs no GstVideoMeta to be read correctly.
bool has_default_layout(const GstVideoInfo& info);

/// GType of the `transport` property (auto, tcp, verbs).
GType transport_enum_type();

/// The properties both elements have, declared once here: port, transport, rdma-device,
/// key-file, memory, and the read-only stats and cuda-caps. Each element numbers its own
/// properties from kFirstOwnProperty, answers stats and cuda-caps itself (they read its
/// state), and passes every other shared id to set_common_property/get_common_property.
enum CommonProperty : guint {
  PROP_PORT = 1,
  PROP_TRANSPORT,
  PROP_RDMA_DEVICE,
  PROP_KEY_FILE,
  PROP_MEMORY,
  PROP_STATS,
  PROP_CUDA_CAPS,
  kFirstOwnProperty,
};
/// Their values.
struct CommonSettings {
  guint port = 5000;
  TransportKind transport = TransportKind::automatic;
  std::string rdma_device;      ///< empty: any
  std::string key_file;         ///< empty: no authentication
  std::string memory = "host";  ///< where frames are: host, cuda, cuda:N
};
/// Which end an element is: the descriptions say what each property means there.
enum class Side { sender, receiver };
void install_common_properties(GObjectClass* klass, Side side);
/// A string property's value; `otherwise` for a NULL string.
std::string string_of(const GValue* value, const char* otherwise = "");
/// Under the object lock. False for an id that is not one of the writable shared properties.
bool set_common_property(CommonSettings& settings, guint id, const GValue* value);
bool get_common_property(const CommonSettings& settings, guint id, GValue* value);
/// GType of rdmasink's `mode` property (live, no-drop).
GType mode_enum_type();
enum class SinkMode { live = 0, no_drop = 1 };

/// A copy of an element's counters, safe to hand to another thread.
struct StatsSnapshot {
  uint64_t frames = 0;
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  std::array<uint64_t, stats::kDropCauses> drops{};  ///< rdmasink: `dropped` by cause
  uint64_t copies = 0;  ///< frames that had to be copied (not zero-copy)
  uint64_t checksum_failures = 0;
  uint64_t jumps = 0;          ///< rdmasrc: sources moved back beside the others
  uint64_t silence_ms = 0;     ///< rdmasrc: silence put into holes in the sound
  uint64_t audio_dropped = 0;  ///< rdmasrc: samples a full audio pad queue dropped
  uint64_t latency_p50_ns = 0;
  uint64_t latency_p99_ns = 0;
  uint64_t latency_max_ns = 0;
  double seconds = 0;
  std::string transport;  ///< "tcp", "verbs", or "" before a connection
  std::string peer;
};
StatsSnapshot snapshot(const stats::TransferStats& stats);
/// The `stats` property's structure: frames, bytes, dropped, dropped-late,
/// dropped-no-credit, dropped-behind, dropped-not-up, dropped-no-buffer (rdmasink's drops by
/// cause), copies, checksum-failures, jumps, silence-ms, audio-dropped, latency-p50-ns,
/// latency-p99-ns, latency-max-ns, seconds, transport, peer.
GstStructure* stats_structure(const char* name, const StatsSnapshot& stats);

/// The `key-file` property: loads the key when a path is set (false, with an error message
/// posted naming the file and why, when it cannot be used); `key` stays empty otherwise.
bool load_key_file(GstElement* element, const std::string& path,
                   std::shared_ptr<const auth::SharedKey>& key);

/// An element's counters as its `stats` property shows them: published by the threads that
/// count, read by the property, and logged at INFO and posted as an element message (the
/// structure gst-launch-1.0 -m prints) at EOS and on stop. Thread-safe.
class ElementStats {
 public:
  explicit ElementStats(const char* name) : name_(name) {}
  void publish(StatsSnapshot stats);
  StatsSnapshot read() const;
  /// The property's value (a new structure named as the element's message).
  GstStructure* structure() const { return stats_structure(name_, read()); }
  void post(GstElement* element, GstDebugCategory* category) const;

 private:
  const char* name_;  // "rdmasink-stats"
  mutable std::mutex mu_;
  StatsSnapshot stats_;
};

/// get_property for the properties both elements have: stats (from `stats`) and cuda-caps
/// read the element's state, the rest its settings under the object lock. False for an id
/// of the element's own.
bool get_shared_property(GObject* object, const ElementStats& stats, const CommonSettings& settings,
                         guint id, GValue* value);

/// Copies a frame's planes between its wire layout (`wire`, the bytes at `wire_data`) and a
/// mapped GStreamer frame of the same format, row by row, each side with its own strides.
enum class CopyTo { wire, gst_frame };
void copy_planes(const FrameLayout& wire, std::byte* wire_data, const GstVideoFrame& frame,
                 CopyTo to);

/// Makes librdmavideo's log go to GStreamer's "rdmavideo" debug category, at the level
/// that category is set to. Called once from plugin_init().
void forward_library_log(GstDebugCategory* category);

/// Owner of a GStreamer mini-object or object reference.
struct CapsUnref {
  void operator()(GstCaps* caps) const noexcept { gst_caps_unref(caps); }
};
using UniqueCaps = std::unique_ptr<GstCaps, CapsUnref>;
struct ObjectUnref {
  void operator()(gpointer object) const noexcept { gst_object_unref(object); }
};
template <typename T>
using UniqueObject = std::unique_ptr<T, ObjectUnref>;

}  // namespace rdmavideo::gst
