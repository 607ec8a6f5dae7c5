// SPDX-License-Identifier: Apache-2.0
// FFmpeg's CUDA device made on our context and stream (av_util.hpp: cuda_device_on).
extern "C" {
#include <libavutil/hwcontext.h>
}

// hwcontext_cuda.h includes cuda.h unless CUDA_VERSION is defined; the two handle types it
// uses are the driver ABI's opaque pointers, declared here as cuda.h declares them.
#define CUDA_VERSION 11030
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
extern "C" {
#include <libavutil/hwcontext_cuda.h>
}

#include "av_util.hpp"

namespace rdmavideo::av {

Result<UniqueBufferRef> cuda_device_on(cuda::Stream& stream, std::string_view who) {
  const cuda::Device& device = stream.device();
  UniqueBufferRef ref(av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA));
  if (!ref) {
    return make_error(ErrorCode::resource,
                      "{}: FFmpeg's CUDA device on {}: av_hwdevice_ctx_alloc failed", who,
                      device.describe());
  }
  auto* hw = reinterpret_cast<AVHWDeviceContext*>(ref->data);
  auto* cuda_hw = static_cast<AVCUDADeviceContext*>(hw->hwctx);
  // Our primary context, retained by `device` for the process's life; FFmpeg neither retains
  // nor releases a context it did not create.
  cuda_hw->cuda_ctx = static_cast<CUcontext>(device.native_context());
  cuda_hw->stream = static_cast<CUstream>(stream.native());
  LogCapture said;
  if (const int rc = av_hwdevice_ctx_init(ref.get()); rc < 0) {
    return Unexpected(said.error(
        who, fmt::format("FFmpeg's CUDA device on {} (av_hwdevice_ctx_init)", device.describe()),
        rc));
  }
  return ref;
}

}  // namespace rdmavideo::av
