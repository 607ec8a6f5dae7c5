// SPDX-License-Identifier: Apache-2.0
// What rdmasrc holds while it runs: its settings as start() copied them, and the runtime
// start() builds and stop() drops: the receiving service, the hand-over of frames from the
// stream's connection thread to create() (the stream's sink, src_stream.hpp, fills it), the
// stream's time line, and what the streaming thread keeps between frames. Which thread
// touches what is said field by field.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "common.hpp"
#include "cuda_caps.hpp"
#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/stream_timeline.hpp"
#include "slot_memory.hpp"

namespace rdmavideo::gst {

// Property values, under the object lock; copied at start().
struct SrcSettings : CommonSettings {
  std::string address = "0.0.0.0";
  guint ring_size = 8;
  bool verify = false;
  bool is_live = false;
  std::string tracks = "all";
};

// What the service's connection thread hands to create(), in arrival order: a frame (in its
// ring slot, or copied out of it), or a gap in the pictures (sound runs on without them),
// stamped on the stream's time line. Sound goes to the audio pads' own threads instead.
struct PictureGap {
  GstClockTime until = 0;
};
struct Arrival {
  std::variant<FrameLease, PictureGap> what;
  GstClockTime pts = 0;  // the frame's stamp, or where the gap starts
};

// Built in start(), dropped in stop().
struct SrcRuntime {
  SrcSettings settings;
  std::unique_ptr<ReceiverService> service;

  std::mutex mutex;  // guards the hand-over below
  std::condition_variable cv;
  std::deque<Arrival> events;    // frames hold their slots (copies hold none)
  uint32_t queued_slots = 0;     // frames in `events` holding a ring slot
  uint32_t queued_copies = 0;    // frames in `events` copied out of the ring
  std::optional<StreamEnd> end;  // how the stream ended, queued after its last frame
  bool connected = false;
  TransportKind kind = TransportKind::tcp;
  std::string peer;
  std::shared_ptr<const proto::StreamStart> announced;  // the stream's first format

  // The stream's connection thread only.
  StreamTimeline timeline{false};  // pictures and sound on one time line
  std::set<int> said_jump;         // sources whose jump was said

  // Counted on the connection thread, read by the stats.
  std::atomic<uint64_t> jumps{0};   // sources moved back beside the others
  std::atomic<uint64_t> copies{0};  // frames copied: out of the ring, or into GStreamer's layout

  // Streaming thread only.
  std::shared_ptr<const proto::StreamStart> format;  // the format caps were made for
  GstVideoInfo info{};                               // the sender's layout
  GstVideoInfo default_info{};                       // GStreamer's layout for the same caps
  bool default_layout = true;
  bool downstream_meta = false;            // downstream reads GstVideoMeta
  std::optional<StreamVerifier> verifier;  // the receiver's policy: on the GPU where it can
  uint64_t next_sequence = 0;
  uint64_t pushed = 0;             // frames pushed downstream
  uint64_t checksum_failures = 0;  // frames that failed verify
  // Ring slots held downstream (buffers pushed and not yet dropped); shared with the buffers'
  // memories, which may outlive this runtime.
  HeldSlots held = std::make_shared<std::atomic<uint32_t>>(0);
  bool eos = false;
  int cuda_device = 0;                   // the GPU of memory:CUDAMemory buffers
  std::unique_ptr<CudaFrames> cuda_out;  // downstream takes memory:CUDAMemory
  GstCaps* cuda_caps = nullptr;          // the negotiated CUDA caps, for its pool

  ~SrcRuntime() {
    if (service) service->stop();  // its sink is done with this runtime before it goes
    gst_clear_caps(&cuda_caps);
  }
};

}  // namespace rdmavideo::gst
