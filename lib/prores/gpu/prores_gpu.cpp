// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder on a GPU: the slices' coefficients made once a frame; the rate control's
// search coded and moved on by kernels, one after another on one stream, the host waiting for
// none of it; the chosen quantisers coded, the slices placed by a prefix sum and gathered
// behind their table; then where they end read back, and the table and slices downloaded
// once, behind the headers written here. The choices are the CPU twin's (the same arithmetic,
// slices/prores_slices.hpp), so the frames are byte for byte the same.
#include <chrono>
#include <cstring>
#include <optional>

#include "encoder/frame_writer.hpp"
#include "gpu/gpu_passes.hpp"
#include "rdmavideo/prores.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {

struct GpuEncoder::Impl {
  std::shared_ptr<cuda::Device> device;
  std::optional<GpuPasses> passes;
  std::unique_ptr<cuda::Stream> stream;
  FrameFormat format;
  std::vector<SliceSpan> slices;
  uint64_t slot_bytes = 0;
  // Device memory: the slices (3 x 32 bits each), the matrix, the coefficients, the slots,
  // each slice's size (and at the next finer quantiser), offset and quantiser, the rate
  // control's state, and the table and slices.
  std::shared_ptr<cuda::DevicePtr> slices_at, matrix_at, coefficients_at, slots_at, sizes_at,
      finer_at, offsets_at, quantisers_at, rate_at, frame_at;
  RateState rate{};  // what is uploaded
  // Where the rate control's state and then the frame are read back into: page-locked, so
  // that each copy is queued behind the kernels and the host sleeps on an event until it
  // lands. (A copy into pageable memory makes the driver wait for the stream itself,
  // spinning: a whole core a stream for the length of an encode.)
  std::shared_ptr<std::byte> rate_back, frame_back;
  double last_ms = 0;

  // Every slice coded at the quantiser `quantiser` says (QuantiserFrom, or 0: each its own),
  // the sizes into `sizes`; into its slot only at its own (the rate control's passes count).
  Result<void> code(int quantiser, cuda::DevicePtr sizes) {
    return passes->code(*stream, *coefficients_at, *slices_at, static_cast<unsigned>(slices.size()),
                        *matrix_at, *quantisers_at, quantiser, quantiser == 0 ? *slots_at : 0,
                        slot_bytes, sizes, *rate_at);
  }
};

GpuEncoder::GpuEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuEncoder::~GpuEncoder() = default;

Result<std::unique_ptr<GpuEncoder>> GpuEncoder::create(std::shared_ptr<cuda::Device> device,
                                                       const FrameFormat& format) {
  if (auto ok = check_format(format); !ok) return Unexpected(ok.error());
  auto passes = GpuPasses::load(*device);
  if (!passes) return Unexpected(passes.error());
  auto stream = device->create_stream();
  if (!stream) return Unexpected(stream.error());
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->passes = std::move(*passes);
  impl->stream = std::move(*stream);
  impl->format = format;
  impl->slices = slice_layout(format.width, format.height);
  impl->slot_bytes = slice_cap(kMaxSliceMacroblocks);
  auto rate_back = device->allocate_pinned(sizeof(RateState));
  if (!rate_back) return Unexpected(rate_back.error());
  impl->rate_back = std::move(*rate_back);
  auto frame_back = device->allocate_pinned(prores::max_frame_bytes(format) - detail::kTableOffset);
  if (!frame_back) return Unexpected(frame_back.error());
  impl->frame_back = std::move(*frame_back);
  const size_t count = impl->slices.size();
  auto allocate = [&](std::shared_ptr<cuda::DevicePtr>& to, size_t bytes) -> Result<void> {
    auto at = device->allocate(bytes);
    if (!at) return Unexpected(at.error());
    to = std::move(*at);
    return {};
  };
  for (auto [to, bytes] :
       {std::pair{&impl->slices_at, count * sizeof(SliceAt)},
        std::pair{&impl->matrix_at, size_t{64}},
        std::pair{&impl->coefficients_at, count * kSliceCoefficients * sizeof(int32_t)},
        std::pair{&impl->slots_at, count * impl->slot_bytes},
        std::pair{&impl->sizes_at, count * sizeof(uint64_t)},
        std::pair{&impl->finer_at, count * sizeof(uint64_t)},
        std::pair{&impl->rate_at, sizeof(RateState)},
        std::pair{&impl->offsets_at, count * sizeof(uint64_t)},
        std::pair{&impl->quantisers_at, count * sizeof(int32_t)},
        std::pair{&impl->frame_at, prores::max_frame_bytes(format) - detail::kTableOffset}}) {
    if (auto ok = allocate(*to, bytes); !ok) return Unexpected(ok.error());
  }
  std::vector<SliceAt> spans;
  for (const auto& s : impl->slices) spans.push_back({s.mb_x, s.mb_y, s.mb_count});
  if (auto ok = device->upload(*impl->slices_at, std::as_bytes(std::span(spans))); !ok)
    return Unexpected(ok.error());
  if (auto ok = device->upload(
          *impl->matrix_at, std::as_bytes(std::span(detail::matrix(format.profile), size_t{64})));
      !ok) {
    return Unexpected(ok.error());
  }
  return std::unique_ptr<GpuEncoder>(new GpuEncoder(std::move(impl)));
}

const FrameFormat& GpuEncoder::format() const { return impl_->format; }

size_t GpuEncoder::max_frame_bytes() const { return prores::max_frame_bytes(impl_->format); }

Result<void> GpuEncoder::make_picture(cuda::Stream& stream, GpuInput input,
                                      const DevicePlanes& from, const DevicePicture& to) const {
  return impl_->passes->make_picture(stream, input, from, to);
}

double GpuEncoder::last_encode_ms() const { return impl_->last_ms; }

Result<size_t> GpuEncoder::encode(const DevicePicture& picture, std::span<uint8_t> out) {
  Impl& m = *impl_;
  if (auto ok = detail::check_output(m.format, out.size()); !ok) return Unexpected(ok.error());
  if (picture.width != m.format.width || picture.height != m.format.height) {
    return make_error(ErrorCode::invalid_argument, "ProRes: a {}x{} picture for a {}x{} encoder",
                      picture.width, picture.height, m.format.width, m.format.height);
  }
  const auto start = std::chrono::steady_clock::now();
  const size_t count = m.slices.size();
  const auto slices = static_cast<unsigned>(count);
  if (auto ok = m.passes->dct(*m.stream, picture, *m.slices_at, slices, *m.coefficients_at); !ok) {
    return Unexpected(ok.error());
  }
  m.rate = rate_start(detail::slices_budget(m.format, count));
  if (auto ok = m.stream->upload_async(*m.rate_at, std::as_bytes(std::span(&m.rate, 1))); !ok)
    return Unexpected(ok.error());
  // The search (detail::choose_quantisers' on the CPU), a fixed number of steps: those after
  // it has ended code nothing and move nothing.
  for (int step = 0; step < kRateSteps; ++step) {
    auto ok = m.code(kSearchQuantiser, *m.sizes_at);
    if (ok) ok = m.passes->search(*m.stream, *m.sizes_at, slices, *m.rate_at);
    if (!ok) return Unexpected(ok.error());
  }
  // The next finer quantiser for the first slices the bytes left pay for; all coded at theirs.
  auto done = m.code(kFoundQuantiser, *m.sizes_at);
  if (done) done = m.code(kFinerQuantiser, *m.finer_at);
  if (done) {
    done =
        m.passes->finer(*m.stream, *m.sizes_at, *m.finer_at, slices, *m.rate_at, *m.quantisers_at);
  }
  if (done) done = m.code(0, *m.sizes_at);
  if (done) done = m.passes->offsets(*m.stream, *m.sizes_at, slices, *m.rate_at, *m.offsets_at);
  if (done) {
    done = m.passes->gather(*m.stream, *m.slots_at, m.slot_bytes, *m.sizes_at, *m.offsets_at,
                            slices, *m.frame_at, *m.frame_at);
  }
  if (done) {
    done = m.stream->download_async(std::span(m.rate_back.get(), sizeof(RateState)), *m.rate_at);
  }
  if (done) done = m.stream->synchronize();
  if (!done) return Unexpected(done.error());
  std::memcpy(&m.rate, m.rate_back.get(), sizeof(RateState));
  if (m.rate.bad != kNoSlice) {
    return make_error(ErrorCode::resource, "ProRes: slice {} over its {} bytes", m.rate.bad,
                      slice_cap(m.slices[m.rate.bad].mb_count));
  }
  const uint64_t end = m.rate.end;
  if (end + detail::kTableOffset > out.size()) {
    return make_error(ErrorCode::resource, "ProRes: a frame of {} bytes, over its {}",
                      end + detail::kTableOffset, out.size());
  }
  uint8_t* frame = out.data();
  if (auto ok = m.stream->download_async(std::span(m.frame_back.get(), end), *m.frame_at); !ok)
    return Unexpected(ok.error());
  if (auto ok = m.stream->synchronize(); !ok) return Unexpected(ok.error());
  std::memcpy(frame + detail::kTableOffset, m.frame_back.get(), end);
  detail::write_headers(m.format, frame);
  const size_t size = detail::kTableOffset + end;
  detail::finish(frame, count, size);
  m.last_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return size;
}

}  // namespace rdmavideo::prores
