// SPDX-License-Identifier: Apache-2.0
// A build without GStreamer's CUDA headers: no memory:CUDAMemory caps, and why.
#include "cuda_caps.hpp"

namespace rdmavideo::gst {

bool cuda_caps_built() { return false; }

std::string cuda_caps_unavailable(int) {
  return "this build has no memory:CUDAMemory caps (GStreamer's CUDA headers, from "
         "libgstreamer-plugins-bad1.0-dev, or the CUDA toolkit were not found when it was "
         "configured; scripts/setup.sh unpacks the headers)";
}

GstCaps* with_cuda_variants(GstCaps* caps) { return caps; }
GstCaps* without_cuda_variants(GstCaps* caps) { return caps; }
bool is_cuda_caps(const GstCaps*) { return false; }

struct CudaContextShare::Impl {};
CudaContextShare::CudaContextShare() = default;
CudaContextShare::~CudaContextShare() = default;
bool CudaContextShare::handle_query(GstElement*, GstQuery*, int) { return false; }

struct CudaFrames::Impl {};
CudaFrames::CudaFrames(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaFrames::~CudaFrames() = default;
Result<std::unique_ptr<CudaFrames>> CudaFrames::create(GstElement*, CudaContextShare&, int ordinal,
                                                       const GstVideoInfo&, const FrameLayout&) {
  return make_error(ErrorCode::unsupported, "{}", cuda_caps_unavailable(ordinal));
}
Result<void> CudaFrames::copy_in(GstBuffer*, uint64_t, bool) {
  return make_error(ErrorCode::unsupported, "{}", cuda_caps_unavailable(0));
}
Result<GstBuffer*> CudaFrames::copy_out(uint64_t, bool, GstCaps*) {
  return make_error(ErrorCode::unsupported, "{}", cuda_caps_unavailable(0));
}
uint64_t CudaFrames::host_round_trips() const { return 0; }

}  // namespace rdmavideo::gst
