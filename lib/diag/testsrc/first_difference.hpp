// SPDX-License-Identifier: Apache-2.0
// The frame verifier's kernel (first_difference.cu) on a device: where two spans of its memory
// first differ, found there, with one 64-bit word coming back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "rdmavideo/cuda.hpp"

namespace rdmavideo::diag {

extern const cuda::EmbeddedImage kFirstDifferenceImage;  // as this build embeds it

class FirstDifference {
 public:
  /// `unsupported`, naming why, where the device cannot run the kernel.
  static Result<std::unique_ptr<FirstDifference>> load(cuda::Device& device);

  /// The first byte at or after `from` where the `bytes` at `a` and at `b` differ; nullopt
  /// when they are the same. Both start 16-byte aligned. Runs on `stream` (work queued there
  /// before runs first) and waits for the answer.
  Result<std::optional<uint64_t>> find(cuda::Stream& stream, cuda::DevicePtr a, cuda::DevicePtr b,
                                       uint64_t from, uint64_t bytes) const;

 private:
  FirstDifference(std::shared_ptr<const cuda::Module> module,
                  std::shared_ptr<cuda::DevicePtr> answer)
      : module_(std::move(module)), answer_(std::move(answer)) {}
  std::shared_ptr<const cuda::Module> module_;
  std::shared_ptr<cuda::DevicePtr> answer_;  // where the kernel folds its answer
};

}  // namespace rdmavideo::diag
