// SPDX-License-Identifier: Apache-2.0
// Receiver-side integrity check: the frame's checksum when the sender sent one, and the
// built-in test pattern when the stream says it carries it. One verifier per stream format;
// verify() may be called from any single thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo {

namespace diag {
class FirstDifference;
}

class FrameVerifier {
 public:
  explicit FrameVerifier(const proto::StreamStart& format);

  /// nullopt when the frame is good, else what is wrong with it, naming frame, plane, byte.
  std::optional<std::string> verify(const proto::FrameWritten& info,
                                    std::span<const std::byte> data) const;

  bool checks_pattern() const { return pattern_.has_value(); }

 private:
  std::optional<TestPattern> pattern_;
};

/// The same checks for a frame in GPU memory, made where it lies. The pattern's frames are
/// uploaded once and a kernel finds the first byte of a frame that differs from its phase;
/// only the stamp (the frame's first bytes) is downloaded, and at a mismatch the byte found.
/// A frame that carries a checksum is still downloaded whole, since XXH3 runs on the CPU.
/// One thread calls it.
class GpuFrameVerifier {
 public:
  /// `unsupported`, naming why, where the GPU cannot verify (this build has no kernels, or
  /// none for this GPU): the caller downloads frames for a FrameVerifier instead.
  static Result<std::unique_ptr<GpuFrameVerifier>> create(const proto::StreamStart& format,
                                                          std::shared_ptr<cuda::Device> device);
  /// The memory the pattern's frames of `format` take, for a budget: on the GPU for create(),
  /// as much on the host for a FrameVerifier.
  static uint64_t device_bytes(const proto::StreamStart& format);

  /// Whether verify() checks this frame without downloading it (it carries no checksum).
  static bool in_place(const proto::FrameWritten& info) {
    return (info.flags & proto::kFrameHasChecksum) == 0;
  }
  /// nullopt when the frame at `frame` (device memory, frame_bytes long) is good, else what
  /// is wrong with it in FrameVerifier's words; an error when the GPU failed.
  Result<std::optional<std::string>> verify(const proto::FrameWritten& info, cuda::DevicePtr frame);

 private:
  GpuFrameVerifier() = default;
  proto::StreamStart format_;
  std::shared_ptr<cuda::Device> device_;
  std::shared_ptr<const diag::FirstDifference> first_difference_;  // the kernel
  std::unique_ptr<cuda::Stream> stream_;
  std::vector<std::shared_ptr<cuda::DevicePtr>> phases_;  // the pattern's frames on the GPU
  std::vector<std::vector<std::byte>> heads_;             // each phase's first bytes, on the host
  std::optional<FrameVerifier> checksums_;                // frames with a checksum: downloaded
  std::vector<std::byte> download_;
};

/// One stream's verify policy, the same wherever frames are received (rdmavideo-recv, rdmasrc):
/// a kernel checks each frame where it lies when the frame is in GPU memory and the GPU can;
/// else the CPU checks it, in GPU memory only after a download. prepare() chooses, once a
/// format (a ring epoch); the pattern's frames count against `budget` wherever they are.
class StreamVerifier {
 public:
  explicit StreamVerifier(std::shared_ptr<memory::Budget> budget = nullptr)
      : budget_(std::move(budget)) {}
  /// For frames of `format` (held by the caller while its frames last), in GPU memory on
  /// `device`, or in host memory (null). Does nothing for the format already prepared; fails
  /// where the budget refuses the pattern's frames, and then checks nothing of that format
  /// (where() stays empty). `said`, when set, tells how it checks.
  Result<void> prepare(const proto::StreamStart& format,
                       const std::shared_ptr<cuda::Device>& device, std::string* said = nullptr);
  /// Where frames are checked: "gpu" (a kernel, in place), "download" (a frame in GPU memory
  /// copied to the host first) or "host"; empty before prepare().
  const std::string& where() const { return where_; }
  /// Whether verify_on_gpu() takes the frames (else verify_on_host(), on a host copy).
  bool on_gpu() const { return gpu_ != nullptr; }
  /// A frame in GPU memory; `downloaded` is set when it had to be copied to the host (a
  /// checksum is computed by the CPU).
  Result<std::optional<std::string>> verify_on_gpu(const proto::FrameWritten& info,
                                                   cuda::DevicePtr frame, bool* downloaded);
  std::optional<std::string> verify_on_host(const proto::FrameWritten& info,
                                            std::span<const std::byte> data) const;

 private:
  std::shared_ptr<memory::Budget> budget_;
  const proto::StreamStart* format_ = nullptr;  // the format prepared for
  std::optional<FrameVerifier> cpu_;
  std::unique_ptr<GpuFrameVerifier> gpu_;
  std::shared_ptr<const void> reservation_;
  std::string where_;
};

}  // namespace rdmavideo
