// SPDX-License-Identifier: Apache-2.0
// memory:CUDAMemory caps for rdmasink and rdmasrc, through GStreamer's CUDA library
// (libgstcuda-1.0, GStreamer 1.22's unstable API): rdmasink takes buffers in GPU memory from
// nvh264dec or cudaupload without a download, rdmasrc pushes buffers in GPU memory.
//
// Sharing the GPU context: each element answers GStreamer's CUDA context query with a
// GstCudaContext that wraps the device's primary context, which librdmavideo's own copies
// and rings use, so CUDA neighbours that ask (decoders, uploaders, converters) work in the
// same context and frames move between them and the session with copies on the GPU. A
// neighbour that brought its own context still works: its frames go through host memory,
// with a warning.
//
// A build without GStreamer's CUDA headers (cuda_caps_none.cpp) has the same API: the caps
// are never offered and cuda_caps_unavailable() says why. A build with them offers the caps
// only where GStreamer's CUDA loader and the device are there; where they are not, the
// elements work as before and say once why no CUDA caps are offered.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/format.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::gst {

/// Whether this build has the memory:CUDAMemory caps at all (pad templates list them).
bool cuda_caps_built();
/// Empty where the caps are offered on device `ordinal` now; else why not ("this build has
/// no GStreamer CUDA headers ...", "GStreamer cannot load the CUDA driver", ...). Checked
/// once per device.
std::string cuda_caps_unavailable(int ordinal);
/// `caps` with a memory:CUDAMemory copy of each of its structures put first (preferred).
GstCaps* with_cuda_variants(GstCaps* caps);
/// `caps` without its memory:CUDAMemory structures (for a caps query where none are offered).
GstCaps* without_cuda_variants(GstCaps* caps);
/// An element's `memory` property as a memory spec; nullopt, with an element error posted
/// naming the value, where it is not host, cuda or cuda:N.
std::optional<memory::MemorySpec> memory_property(GstElement* element, const std::string& memory);
/// The GPU a `memory` property names ("cuda:N"), else 0: the one CUDA caps use.
int cuda_device_of(const std::string& memory);
/// What a caps query answers: `caps` without CUDA variants where they are not offered on
/// `ordinal` (logged once, at INFO, with why).
GstCaps* offered_caps(GstElement* element, GstCaps* caps, int ordinal);
/// The `cuda-caps` property: "offered on cuda:N", or why not.
std::string cuda_caps_status(int ordinal);
/// cuda_device_of() of an element's `memory` setting, read under the object lock.
int element_cuda_device(gpointer element, const std::string& memory);
/// Whether fixed caps are memory:CUDAMemory.
bool is_cuda_caps(const GstCaps* caps);

/// An element's GstCudaContext for one device, made on first use.
class CudaContextShare {
 public:
  CudaContextShare();
  ~CudaContextShare();
  CudaContextShare(const CudaContextShare&) = delete;
  CudaContextShare& operator=(const CudaContextShare&) = delete;
  /// Answers a CUDA context query from a neighbour; false for other queries.
  bool handle_query(GstElement* element, GstQuery* query, int ordinal);

 private:
  friend class CudaFrames;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Frames between GStreamer buffers (CUDA or system memory) and frames laid out as the
/// stream says (in GPU or host memory), copied plane by plane on the GPU where it can.
class CudaFrames {
 public:
  /// For frames of `info` on device `ordinal`; `caps` the negotiated caps (for a pool).
  static Result<std::unique_ptr<CudaFrames>> create(GstElement* element, CudaContextShare& share,
                                                    int ordinal, const GstVideoInfo& info,
                                                    const FrameLayout& layout);
  ~CudaFrames();
  CudaFrames(const CudaFrames&) = delete;
  CudaFrames& operator=(const CudaFrames&) = delete;

  /// rdmasink: copies `buffer` into `out`, which is GPU memory (on_device) or host memory.
  Result<void> copy_in(GstBuffer* buffer, uint64_t out, bool on_device);
  /// rdmasrc: a new buffer of CUDA memory holding the frame at `from` (GPU or host memory).
  Result<GstBuffer*> copy_out(uint64_t from, bool on_device, GstCaps* caps);
  /// Frames that went through host memory because a neighbour used its own context.
  uint64_t host_round_trips() const;

 private:
  struct Impl;
  explicit CudaFrames(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::gst
