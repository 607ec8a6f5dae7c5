// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder on a GPU: the slices' coefficients made once a frame; the rate control's
// three passes counted and ended by kernels, the slices given their quantisers and places, and
// coded at their final places behind their table, all queued on one stream, the host waiting
// for none of it; then the rate control's state and the frame read back into page-locked
// memory behind them, one event a frame, and the headers written here. Each frame in flight
// has its own stream and memory, so that one frame's passes run beside the next's. The choices
// are the CPU twin's (the same arithmetic, slices/prores_slices.hpp and slices/prores_rate.hpp),
// so the frames are byte for byte the same.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "encoder/frame_writer.hpp"
#include "gpu/gpu_passes.hpp"
#include "rdmavideo/prores.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

using Clock = std::chrono::steady_clock;

// A frame in flight: its stream, its device memory (the coefficients, each slice's size at
// every quantiser the search counts at (kSizeRows rows), its quantiser, size and offset once
// chosen, the rate control's state, and the table and slices), and where the rate control's
// state and the frame's first bytes come back into: page-locked, so that each copy is queued
// behind the kernels and the host sleeps on an event until it lands. (A copy into pageable
// memory makes the driver wait for the stream itself, spinning: a whole core a stream for the
// length of an encode.)
struct Slot {
  std::unique_ptr<cuda::Stream> stream;
  std::shared_ptr<cuda::DevicePtr> coefficients_at, sizes_at, chosen_at, offsets_at, quantisers_at,
      rate_at, frame_at;
  std::shared_ptr<std::byte> rate_back, frame_back;
  uint64_t read = 0, done = 0;  // tickets: the picture read; the frame back
  Clock::time_point began;
};

}  // namespace

struct GpuEncoder::Impl {
  std::shared_ptr<cuda::Device> device;
  std::optional<GpuPasses> passes;
  FrameFormat format;
  std::vector<SliceSpan> slices;
  std::shared_ptr<cuda::DevicePtr> slices_at, matrix_at;  // 3 x 32 bits a slice; the matrix
  std::vector<Slot> slots;
  unsigned oldest = 0, queued = 0;
  // The frame's bytes after the headers: at most `frame_bytes`, and read back with the
  // frame's end up to `first_read` (its target: only a frame that even the coarsest quantiser
  // cannot bring to its target needs a second read).
  size_t frame_bytes = 0, first_read = 0;
  double last_ms = 0;
  // With timing on, each pass waited for and timed from the host.
  bool timing = false;
  std::vector<GpuEncoder::PassTime> times;
  Clock::time_point lap_start;

  Result<void> lap(cuda::Stream& stream, std::string_view pass) {
    if (!timing) return {};
    if (auto ok = stream.synchronize(); !ok) return ok;
    const auto now = Clock::now();
    times.push_back({pass, std::chrono::duration<double, std::milli>(now - lap_start).count()});
    lap_start = now;
    return {};
  }

  Result<void> allocate(Slot& s) {
    const size_t count = slices.size();
    auto stream = device->create_stream();
    if (!stream) return Unexpected(stream.error());
    s.stream = std::move(*stream);
    for (auto [to, bytes] :
         {std::pair{&s.coefficients_at, count * kSliceCoefficients * sizeof(Coefficient)},
          std::pair{&s.sizes_at, kSizeRows * count * sizeof(uint64_t)},
          std::pair{&s.chosen_at, count * sizeof(uint64_t)},
          std::pair{&s.rate_at, sizeof(RateState)},
          std::pair{&s.offsets_at, count * sizeof(uint64_t)},
          std::pair{&s.quantisers_at, count * sizeof(int32_t)},
          std::pair{&s.frame_at, frame_bytes}}) {
      auto at = device->allocate(bytes);
      if (!at) return Unexpected(at.error());
      *to = std::move(*at);
    }
    for (auto [to, bytes] : {std::pair{&s.rate_back, sizeof(RateState)},
                             std::pair{&s.frame_back, std::max<size_t>(first_read, 1)}}) {
      auto at = device->allocate_pinned(bytes);
      if (!at) return Unexpected(at.error());
      *to = std::move(*at);
    }
    return {};
  }

  // Everything of a frame queued on its slot's stream: the picture read (ticket `read`), the
  // passes, and the state and first bytes read back (ticket `done`).
  Result<void> queue(Slot& s, const DevicePicture& picture) {
    const size_t count = slices.size();
    const auto n = static_cast<unsigned>(count);
    cuda::Stream& stream = *s.stream;
    times.clear();
    lap_start = Clock::now();
    if (auto ok = passes->dct(stream, picture, *slices_at, n, *s.coefficients_at); !ok) return ok;
    if (auto ok = lap(stream, "dct"); !ok) return ok;
    auto read = stream.mark();
    if (!read) return Unexpected(read.error());
    s.read = *read;
    // The rate control's start goes up from page-locked memory, queued too (a copy from
    // pageable memory would wait for the stream first); its end comes back there.
    const RateState start = rate_start(detail::slices_budget(format, count));
    std::memcpy(s.rate_back.get(), &start, sizeof(start));
    auto ok = stream.upload_async(*s.rate_at, std::span(s.rate_back.get(), sizeof(RateState)));
    // The search (detail::choose_quantisers' on the CPU): each pass counted at all of its
    // quantisers at once, then ended.
    constexpr std::string_view kCount[] = {"count: 8 quantisers", "count: 7 quantisers",
                                           "count: 1 quantiser"};
    for (int pass = 0; ok && pass < kSearchPasses; ++pass) {
      ok = passes->count(stream, *s.coefficients_at, *slices_at, n, *matrix_at, *s.rate_at,
                         pass_row(pass), pass_row(pass + 1) - pass_row(pass), *s.sizes_at);
      if (ok) ok = lap(stream, kCount[pass]);
      if (ok) ok = passes->search(stream, *s.sizes_at, n, *s.rate_at);
      if (ok) ok = lap(stream, "search");
    }
    // Each slice's quantiser and place, then every slice coded there, and both read back.
    if (ok) {
      ok = passes->place(stream, *s.sizes_at, n, *s.rate_at, *s.quantisers_at, *s.chosen_at,
                         *s.offsets_at);
    }
    if (ok) ok = lap(stream, "place");
    if (ok) {
      ok = passes->write(stream, *s.coefficients_at, *slices_at, n, *matrix_at, *s.quantisers_at,
                         *s.chosen_at, *s.offsets_at, *s.frame_at, *s.frame_at);
    }
    if (ok) ok = lap(stream, "write");
    if (ok) {
      ok = stream.download_async(std::span(s.rate_back.get(), sizeof(RateState)), *s.rate_at);
    }
    if (ok && first_read > 0) {
      ok = stream.download_async(std::span(s.frame_back.get(), first_read), *s.frame_at);
    }
    if (ok) ok = lap(stream, "read back");
    if (!ok) return ok;
    auto done = stream.mark();
    if (!done) return Unexpected(done.error());
    s.done = *done;
    return {};
  }

  // The slot's frame, back, into `out`: its size.
  Result<size_t> finish(Slot& s, std::span<uint8_t> out) {
    if (auto ok = s.stream->wait(s.done); !ok) return Unexpected(ok.error());
    RateState rate;
    std::memcpy(&rate, s.rate_back.get(), sizeof(RateState));
    if (rate.bad != kNoSlice) {
      return make_error(ErrorCode::resource, "ProRes: slice {} over its {} bytes", rate.bad,
                        slice_cap(slices[rate.bad].mb_count));
    }
    const uint64_t end = rate.end;
    if (end + detail::kTableOffset > out.size() || end > frame_bytes) {
      return make_error(ErrorCode::resource, "ProRes: a frame of {} bytes, over its {}",
                        end + detail::kTableOffset, out.size());
    }
    uint8_t* frame = out.data();
    std::memcpy(frame + detail::kTableOffset, s.frame_back.get(),
                std::min<uint64_t>(end, first_read));
    if (end > first_read) {  // over its target: the rest, straight into `out`
      auto ok = s.stream->download_async(
          std::as_writable_bytes(
              std::span(frame + detail::kTableOffset + first_read, end - first_read)),
          *s.frame_at + first_read);
      if (ok) ok = s.stream->synchronize();
      if (!ok) return Unexpected(ok.error());
    }
    detail::write_headers(format, frame);
    const size_t size = detail::kTableOffset + end;
    detail::finish(frame, slices.size(), size);
    last_ms = std::chrono::duration<double, std::milli>(Clock::now() - s.began).count();
    return size;
  }
};

GpuEncoder::GpuEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuEncoder::~GpuEncoder() = default;

Result<std::unique_ptr<GpuEncoder>> GpuEncoder::create(std::shared_ptr<cuda::Device> device,
                                                       const FrameFormat& format,
                                                       unsigned frames_in_flight) {
  if (auto ok = check_format(format); !ok) return Unexpected(ok.error());
  if (frames_in_flight < 1 || frames_in_flight > kMostFramesInFlight) {
    return make_error(ErrorCode::invalid_argument, "ProRes: {} frames in flight (1 to {})",
                      frames_in_flight, kMostFramesInFlight);
  }
  auto passes = GpuPasses::load(*device);
  if (!passes) return Unexpected(passes.error());
  auto impl = std::make_unique<Impl>();
  impl->device = std::move(device);
  cuda::Device& gpu = *impl->device;
  impl->passes = std::move(*passes);
  impl->format = format;
  impl->slices = slice_layout(format.width, format.height);
  impl->frame_bytes = prores::max_frame_bytes(format) - detail::kTableOffset;
  const size_t target = prores::target_frame_bytes(format);
  impl->first_read = std::min(impl->frame_bytes,
                              target > detail::kTableOffset ? target - detail::kTableOffset : 0);
  const size_t count = impl->slices.size();
  for (auto [to, bytes] : {std::pair{&impl->slices_at, count * sizeof(SliceAt)},
                           std::pair{&impl->matrix_at, size_t{64}}}) {
    auto at = gpu.allocate(bytes);
    if (!at) return Unexpected(at.error());
    *to = std::move(*at);
  }
  impl->slots.resize(frames_in_flight);
  for (Slot& s : impl->slots) {
    if (auto ok = impl->allocate(s); !ok) return Unexpected(ok.error());
  }
  std::vector<SliceAt> spans;
  for (const auto& s : impl->slices) spans.push_back({s.mb_x, s.mb_y, s.mb_count});
  if (auto ok = gpu.upload(*impl->slices_at, std::as_bytes(std::span(spans))); !ok)
    return Unexpected(ok.error());
  if (auto ok = gpu.upload(*impl->matrix_at,
                           std::as_bytes(std::span(detail::matrix(format.profile), size_t{64})));
      !ok) {
    return Unexpected(ok.error());
  }
  return std::unique_ptr<GpuEncoder>(new GpuEncoder(std::move(impl)));
}

const FrameFormat& GpuEncoder::format() const { return impl_->format; }

size_t GpuEncoder::max_frame_bytes() const { return prores::max_frame_bytes(impl_->format); }

unsigned GpuEncoder::frames_in_flight() const { return static_cast<unsigned>(impl_->slots.size()); }

unsigned GpuEncoder::queued() const { return impl_->queued; }

Result<void> GpuEncoder::make_picture(cuda::Stream& stream, GpuInput input,
                                      const DevicePlanes& from, const DevicePicture& to) const {
  return impl_->passes->make_picture(stream, input, from, to);
}

double GpuEncoder::last_encode_ms() const { return impl_->last_ms; }

void GpuEncoder::time_passes(bool on) { impl_->timing = on; }

std::vector<GpuEncoder::PassTime> GpuEncoder::last_pass_times() const { return impl_->times; }

Result<void> GpuEncoder::submit(const DevicePicture& picture) {
  Impl& m = *impl_;
  if (picture.width != m.format.width || picture.height != m.format.height) {
    return make_error(ErrorCode::invalid_argument, "ProRes: a {}x{} picture for a {}x{} encoder",
                      picture.width, picture.height, m.format.width, m.format.height);
  }
  if (m.queued == m.slots.size()) {
    return make_error(ErrorCode::invalid_argument,
                      "ProRes: {} frames in flight already: collect one first", m.queued);
  }
  Slot& s = m.slots[(m.oldest + m.queued) % m.slots.size()];
  s.began = Clock::now();
  if (auto ok = m.queue(s, picture); !ok) {
    // Nothing of it is collected: its stream is left with no work behind it.
    (void)s.stream->synchronize();
    return Unexpected(ok.error());
  }
  ++m.queued;
  // The picture read, the caller may make the next one in it; the passes go on.
  return s.stream->wait(s.read);
}

Result<size_t> GpuEncoder::collect(std::span<uint8_t> out) {
  Impl& m = *impl_;
  if (m.queued == 0) {
    return make_error(ErrorCode::invalid_argument, "ProRes: no frame in flight to collect");
  }
  if (auto ok = detail::check_output(m.format, out.size()); !ok) return Unexpected(ok.error());
  Slot& s = m.slots[m.oldest];
  m.oldest = static_cast<unsigned>((m.oldest + 1) % m.slots.size());
  --m.queued;
  return m.finish(s, out);
}

Result<size_t> GpuEncoder::encode(const DevicePicture& picture, std::span<uint8_t> out) {
  if (impl_->queued > 0) {
    return make_error(ErrorCode::invalid_argument,
                      "ProRes: {} frames in flight: collect them before encoding one alone",
                      impl_->queued);
  }
  if (auto ok = detail::check_output(impl_->format, out.size()); !ok) return Unexpected(ok.error());
  if (auto ok = submit(picture); !ok) return Unexpected(ok.error());
  return collect(out);
}

}  // namespace rdmavideo::prores
