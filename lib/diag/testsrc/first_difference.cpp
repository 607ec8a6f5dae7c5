// SPDX-License-Identifier: Apache-2.0
#include "testsrc/first_difference.hpp"

#include <algorithm>

namespace rdmavideo::diag {
namespace {

constexpr const char* kFunctions[] = {"rdmavideo_first_difference"};
const cuda::KernelImage kKernels{kFirstDifferenceImage, kFunctions, "the frame verifier's kernel"};

}  // namespace

Result<std::unique_ptr<FirstDifference>> FirstDifference::load(cuda::Device& device) {
  auto module = cuda::Module::shared(device, kKernels);
  if (!module) return Unexpected(module.error());
  auto answer = device.allocate(sizeof(uint64_t));
  if (!answer) return Unexpected(answer.error());
  return std::unique_ptr<FirstDifference>(
      new FirstDifference(std::move(*module), std::move(*answer)));
}

Result<std::optional<uint64_t>> FirstDifference::find(cuda::Stream& stream, cuda::DevicePtr a,
                                                      cuda::DevicePtr b, uint64_t from,
                                                      uint64_t bytes) const {
  if ((a | b) % 16 != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "first_difference: 0x{:x} and 0x{:x} must be 16-byte aligned", a, b);
  }
  uint64_t answer = UINT64_MAX;
  if (auto ok = stream.upload_async(*answer_, std::as_bytes(std::span(&answer, 1))); !ok)
    return Unexpected(ok.error());
  // A grid of up to 1024 blocks of 256 threads strides over the 16-byte words.
  constexpr unsigned kThreads = 256;
  const uint64_t words = bytes / 16;
  const auto grid =
      static_cast<unsigned>(std::clamp<uint64_t>((words + kThreads - 1) / kThreads, 1, 1024));
  cuda::DevicePtr pa = a, pb = b, pfirst = *answer_;
  unsigned long long from_arg = from,
                     bytes_arg = bytes;  // NOLINT(google-runtime-int): the kernel's
  void* params[] = {&pa, &pb, &from_arg, &bytes_arg, &pfirst};
  if (auto ok = module_->launch(stream, 0, {grid, 1}, {kThreads, 1}, params); !ok)
    return Unexpected(ok.error());
  if (auto ok = stream.download_async(std::as_writable_bytes(std::span(&answer, 1)), *answer_); !ok)
    return Unexpected(ok.error());
  if (auto ok = stream.synchronize(); !ok) return Unexpected(ok.error());
  if (answer == UINT64_MAX) return std::optional<uint64_t>{};
  return std::optional<uint64_t>{answer};
}

}  // namespace rdmavideo::diag
