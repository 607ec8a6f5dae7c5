// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include "rdmavideo/frame_verifier.hpp"

namespace rdmavideo {

Result<void> StreamVerifier::prepare(const proto::StreamStart& format,
                                     const std::shared_ptr<cuda::Device>& device,
                                     std::string* said) {
  if (format_ == &format) return {};
  cpu_.reset();
  gpu_.reset();
  reservation_.reset();
  where_.clear();
  format_ = &format;
  const uint64_t bytes = GpuFrameVerifier::device_bytes(format);
  auto reserved = budget_ ? budget_->reserve(bytes, "the verifier's pattern frames")
                          : Result<std::shared_ptr<const void>>(nullptr);
  if (!reserved) return Unexpected(reserved.error());  // no verifier for this format
  reservation_ = std::move(*reserved);
  where_ = "host";
  if (device) {
    auto gpu = GpuFrameVerifier::create(format, device);
    if (gpu) {
      gpu_ = std::move(*gpu);
      where_ = "gpu";
      if (said) {
        *said = fmt::format(
            "on {}, a kernel comparing each frame where it lies{}", device->describe(),
            format.flags & proto::kStreamTestPattern ? ""
                                                     : " (nothing to compare: no test pattern)");
      }
    } else {
      where_ = "download";
      if (said) {
        *said = fmt::format("each frame is downloaded from {} and checked by the CPU ({})",
                            device->describe(), gpu.error().message());
      }
    }
  }
  if (!gpu_) cpu_.emplace(format);
  return {};
}

Result<std::optional<std::string>> StreamVerifier::verify_on_gpu(const proto::FrameWritten& info,
                                                                 cuda::DevicePtr frame,
                                                                 bool* downloaded) {
  if (downloaded) *downloaded = !GpuFrameVerifier::in_place(info);
  return gpu_->verify(info, frame);
}

std::optional<std::string> StreamVerifier::verify_on_host(const proto::FrameWritten& info,
                                                          std::span<const std::byte> data) const {
  return cpu_ ? cpu_->verify(info, data) : std::nullopt;
}

}  // namespace rdmavideo
