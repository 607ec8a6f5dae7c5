// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder on a GPU: the slices' coefficients made once a frame; the rate control's
// three passes counted and ended by kernels, the slices given their quantisers and places, and
// coded at their final places behind their table, all queued on one stream, the host waiting
// for none of it; then the rate control's state and the frame read back into page-locked
// memory behind them, one wait for both, and the headers written here. The choices are the
// CPU twin's (the same arithmetic, slices/prores_slices.hpp and slices/prores_rate.hpp), so the
// frames are byte for byte the same.
#include <algorithm>
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
  // Device memory: the slices (3 x 32 bits each), the matrix, the coefficients, each slice's
  // size at every quantiser the search counts at (kSizeRows rows), its quantiser, size and
  // offset once chosen, the rate control's state, and the table and slices.
  std::shared_ptr<cuda::DevicePtr> slices_at, matrix_at, coefficients_at, sizes_at, chosen_at,
      offsets_at, quantisers_at, rate_at, frame_at;
  RateState rate{};  // what is uploaded
  // Where the rate control's state and the frame are read back into: page-locked, so that each
  // copy is queued behind the kernels and the host sleeps on an event until it lands. (A copy
  // into pageable memory makes the driver wait for the stream itself, spinning: a whole core a
  // stream for the length of an encode.)
  std::shared_ptr<std::byte> rate_back, frame_back;
  // The frame's bytes after the headers: at most `frame_bytes`, and read back at once up to
  // `first_read` (its target: only a frame that even the coarsest quantiser cannot bring to
  // its target needs a second read).
  size_t frame_bytes = 0, first_read = 0;
  double last_ms = 0;
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
  impl->frame_bytes = prores::max_frame_bytes(format) - detail::kTableOffset;
  const size_t target = prores::target_frame_bytes(format);
  impl->first_read = std::min(impl->frame_bytes,
                              target > detail::kTableOffset ? target - detail::kTableOffset : 0);
  auto rate_back = device->allocate_pinned(sizeof(RateState));
  if (!rate_back) return Unexpected(rate_back.error());
  impl->rate_back = std::move(*rate_back);
  auto frame_back = device->allocate_pinned(impl->frame_bytes);
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
        std::pair{&impl->coefficients_at, count * kSliceCoefficients * sizeof(Coefficient)},
        std::pair{&impl->sizes_at, kSizeRows * count * sizeof(uint64_t)},
        std::pair{&impl->chosen_at, count * sizeof(uint64_t)},
        std::pair{&impl->rate_at, sizeof(RateState)},
        std::pair{&impl->offsets_at, count * sizeof(uint64_t)},
        std::pair{&impl->quantisers_at, count * sizeof(int32_t)},
        std::pair{&impl->frame_at, impl->frame_bytes}}) {
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
  // The search (detail::choose_quantisers' on the CPU): each pass counted at all of its
  // quantisers at once, then ended.
  for (int pass = 0; pass < kSearchPasses; ++pass) {
    auto ok = m.passes->count(*m.stream, *m.coefficients_at, *m.slices_at, slices, *m.matrix_at,
                              *m.rate_at, pass_row(pass), pass_row(pass + 1) - pass_row(pass),
                              *m.sizes_at);
    if (ok) ok = m.passes->search(*m.stream, *m.sizes_at, slices, *m.rate_at);
    if (!ok) return Unexpected(ok.error());
  }
  // Each slice's quantiser and place, then every slice coded there, and both read back.
  auto done = m.passes->place(*m.stream, *m.sizes_at, slices, *m.rate_at, *m.quantisers_at,
                              *m.chosen_at, *m.offsets_at);
  if (done) {
    done = m.passes->write(*m.stream, *m.coefficients_at, *m.slices_at, slices, *m.matrix_at,
                           *m.quantisers_at, *m.chosen_at, *m.offsets_at, *m.frame_at, *m.frame_at);
  }
  if (done) {
    done = m.stream->download_async(std::span(m.rate_back.get(), sizeof(RateState)), *m.rate_at);
  }
  if (done) {
    done = m.stream->download_async(std::span(m.frame_back.get(), m.first_read), *m.frame_at);
  }
  if (done) done = m.stream->synchronize();
  if (!done) return Unexpected(done.error());
  std::memcpy(&m.rate, m.rate_back.get(), sizeof(RateState));
  if (m.rate.bad != kNoSlice) {
    return make_error(ErrorCode::resource, "ProRes: slice {} over its {} bytes", m.rate.bad,
                      slice_cap(m.slices[m.rate.bad].mb_count));
  }
  const uint64_t end = m.rate.end;
  if (end + detail::kTableOffset > out.size() || end > m.frame_bytes) {
    return make_error(ErrorCode::resource, "ProRes: a frame of {} bytes, over its {}",
                      end + detail::kTableOffset, out.size());
  }
  if (end > m.first_read) {  // over its target: the rest
    auto ok =
        m.stream->download_async(std::span(m.frame_back.get() + m.first_read, end - m.first_read),
                                 *m.frame_at + m.first_read);
    if (ok) ok = m.stream->synchronize();
    if (!ok) return Unexpected(ok.error());
  }
  uint8_t* frame = out.data();
  std::memcpy(frame + detail::kTableOffset, m.frame_back.get(), end);
  detail::write_headers(m.format, frame);
  const size_t size = detail::kTableOffset + end;
  detail::finish(frame, count, size);
  m.last_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return size;
}

}  // namespace rdmavideo::prores
