// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "rdmavideo/frame_verifier.hpp"
#include "testsrc/first_difference.hpp"

namespace rdmavideo {

uint64_t GpuFrameVerifier::device_bytes(const proto::StreamStart& format) {
  if ((format.flags & proto::kStreamTestPattern) == 0) return 0;
  return uint64_t{TestPattern::buffer_count(format)} * format.layout.frame_bytes;
}

Result<std::unique_ptr<GpuFrameVerifier>> GpuFrameVerifier::create(
    const proto::StreamStart& format, std::shared_ptr<cuda::Device> device) {
  auto kernel = diag::FirstDifference::load(*device);
  if (!kernel) return Unexpected(kernel.error());
  std::unique_ptr<GpuFrameVerifier> v(new GpuFrameVerifier());
  v->format_ = format;
  v->device_ = std::move(device);
  v->first_difference_ = std::move(*kernel);
  v->checksums_.emplace(format);
  auto stream = v->device_->create_stream();
  if (!stream) return Unexpected(stream.error());
  v->stream_ = std::move(*stream);
  if (format.flags & proto::kStreamTestPattern) {
    // Rendered on the CPU, as the sender renders it, and uploaded once.
    const uint32_t bytes = format.layout.frame_bytes;
    const size_t head = std::min<size_t>(bytes, size_t{format.layout.planes[0].offset} +
                                                    TestPattern::stamp_bytes(format.pixel_format));
    std::vector<std::byte> rendered(bytes);
    for (uint32_t index = 0; index < TestPattern::buffer_count(format); ++index) {
      TestPattern::render_buffer(format, index, rendered);
      auto memory = v->device_->allocate(bytes);
      if (!memory) return Unexpected(memory.error().context("the verifier's pattern frames"));
      if (auto ok = v->device_->upload(**memory, rendered); !ok) return Unexpected(ok.error());
      v->phases_.push_back(std::move(*memory));
      v->heads_.emplace_back(rendered.begin(), rendered.begin() + static_cast<ptrdiff_t>(head));
    }
  }
  return v;
}

Result<std::optional<std::string>> GpuFrameVerifier::verify(const proto::FrameWritten& info,
                                                            cuda::DevicePtr frame) {
  const uint32_t bytes = format_.layout.frame_bytes;
  if (!in_place(info)) {
    // XXH3 runs on the CPU: the whole frame comes down, and both checks are made there.
    download_.resize(bytes);
    if (auto ok = device_->download(download_, frame); !ok) return Unexpected(ok.error());
    return checksums_->verify(info, download_);
  }
  if (phases_.empty()) return std::optional<std::string>{};
  const size_t phase = TestPattern::buffer_index(format_, info.sequence);
  // The stamp: the phase's first bytes with the frame number written over them.
  std::vector<std::byte> expected = heads_[phase];
  TestPattern::stamp(format_, expected, info.sequence);
  download_.resize(expected.size());
  if (auto ok = device_->download(download_, frame); !ok) return Unexpected(ok.error());
  auto mismatch = [&](size_t at, std::byte got, std::byte want) {
    return std::optional<std::string>{TestPattern::Mismatch::at(format_, at,
                                                                static_cast<uint8_t>(got),
                                                                static_cast<uint8_t>(want))
                                          .describe(info.sequence)};
  };
  const auto head = std::mismatch(download_.begin(), download_.end(), expected.begin());
  if (head.first != download_.end()) {
    return mismatch(static_cast<size_t>(head.first - download_.begin()), *head.first, *head.second);
  }
  // The rest: a kernel compares it with the phase in GPU memory.
  auto first = first_difference_->find(*stream_, frame, *phases_[phase], expected.size(), bytes);
  if (!first) return Unexpected(first.error());
  if (!*first) return std::optional<std::string>{};
  std::byte got{}, want{};
  if (auto ok = device_->download({&got, 1}, frame + **first); !ok) return Unexpected(ok.error());
  if (auto ok = device_->download({&want, 1}, *phases_[phase] + **first); !ok)
    return Unexpected(ok.error());
  return mismatch(**first, got, want);
}

}  // namespace rdmavideo
