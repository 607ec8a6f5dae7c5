// SPDX-License-Identifier: Apache-2.0
// The CPU twin of the GPU ProRes encoder: the frame and picture headers, the slice table, and
// each slice through the shared arithmetic (slices/prores_slices.hpp), its quantiser found by
// a search for the finest that fits the slice's share of the frame's nominal size.
#include "rdmavideo/prores.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>
#include <vector>

#include "encoder/frame_writer.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

// The profiles' quantisation matrices (RDD 36's defaults), luma and chroma alike, in raster
// order: proxy, LT, standard, HQ.
constexpr std::array<std::array<uint8_t, 64>, 4> kMatrices = {{
    {4,  7,  9,  11, 13, 14, 15, 63, 7,  7,  11, 12, 14, 15, 63, 63, 9,  11, 13, 14, 15, 63,
     63, 63, 11, 11, 13, 14, 63, 63, 63, 63, 11, 13, 14, 63, 63, 63, 63, 63, 13, 14, 63, 63,
     63, 63, 63, 63, 13, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63},
    {4,  5,  6,  7,  9, 11, 13, 15, 5,  5,  7,  8,  11, 13, 15, 17, 6,  7,  9,  11, 13, 15,
     15, 17, 7,  7,  9, 11, 13, 15, 17, 19, 7,  9,  11, 13, 14, 16, 19, 23, 9,  11, 13, 14,
     16, 19, 23, 29, 9, 11, 13, 15, 17, 21, 28, 35, 11, 13, 16, 17, 21, 28, 35, 41},
    {4, 4,  5,  5,  6, 7, 7, 9, 4,  4,  5,  6,  7, 7, 9, 9,  5,  5,  6,  7, 7, 9,
     9, 10, 5,  5,  6, 7, 7, 9, 9,  10, 5,  6,  7, 7, 8, 9,  10, 12, 6,  7, 7, 8,
     9, 10, 12, 15, 6, 7, 7, 9, 10, 11, 14, 17, 7, 7, 9, 10, 11, 14, 17, 21},
    {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
     4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 5, 5, 4, 4, 4, 4,
     4, 5, 5, 6, 4, 4, 4, 4, 5, 5, 6, 7, 4, 4, 4, 4, 5, 6, 7, 7},
}};

// Apple's nominal data rates (1920x1080 at 29.97 fps: 45, 102, 147 and 220 Mb/s) as bits a
// macroblock a frame, which holds at any size and rate.
constexpr std::array<uint32_t, 4> kBitsPerMacroblock = {184, 417, 601, 900};

size_t index(Profile p) { return static_cast<size_t>(p); }

void put32(uint8_t* at, uint32_t v) {
  put16(at, v >> 16);
  put16(at + 2, v & 0xffff);
}

// Runs `code(i)` for every slice i below `count` on `threads` threads, the caller's among them:
// each takes the next run of slices as it finishes one (slices differ in cost with what they
// show). Where the system refuses a thread, fewer do it.
template <typename Code>
void for_each_slice(size_t count, unsigned threads, const Code& code) {
  constexpr size_t kRun = 8;
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t from; (from = next.fetch_add(kRun)) < count;) {
      for (size_t i = from; i < std::min(count, from + kRun); ++i) code(i);
    }
  };
  const size_t runs = (count + kRun - 1) / kRun;
  const size_t helpers = std::min<size_t>(threads, std::max<size_t>(runs, 1)) - 1;
  std::vector<std::jthread> running;
  running.reserve(helpers);
  for (size_t h = 0; h < helpers; ++h) {
    try {
      running.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
}

}  // namespace

namespace detail {

const uint8_t* matrix(Profile profile) { return kMatrices[index(profile)].data(); }

void write_headers(const FrameFormat& format, uint8_t* frame) {
  constexpr std::array<uint8_t, 4> kFrameId = {'i', 'c', 'p', 'f'};
  constexpr std::array<uint8_t, 4> kCreator = {'r', 'd', 'm', 'v'};  // the encoder that made it
  std::copy(kFrameId.begin(), kFrameId.end(), frame + 4);
  uint8_t* h = frame + 8;
  std::memset(h, 0, kFrameHeaderBytes);
  put16(h, kFrameHeaderBytes);
  put16(h + 2, 0);  // version 0: 4:2:2, no alpha
  std::copy(kCreator.begin(), kCreator.end(), h + 4);
  put16(h + 8, format.width);
  put16(h + 10, format.height);
  h[12] = 2 << 6;  // 4:2:2, progressive
  h[13] = 0;       // aspect ratio and frame rate: unknown
  h[14] = format.primaries;
  h[15] = format.transfer;
  h[16] = format.matrix;
  h[17] = 0;  // no alpha
  h[19] = 3;  // both matrices follow
  std::memcpy(h + 20, matrix(format.profile), 64);
  std::memcpy(h + 84, matrix(format.profile), 64);
  uint8_t* picture = h + kFrameHeaderBytes;
  picture[0] = kPictureHeaderBytes << 3;
  picture[7] = 3 << 4;  // slices of up to 2^3 macroblocks
}

void finish(uint8_t* frame, size_t slices, size_t end) {
  uint8_t* picture = frame + 8 + kFrameHeaderBytes;
  put32(picture + 1, static_cast<uint32_t>(end - (8 + kFrameHeaderBytes)));
  put16(picture + 5, static_cast<uint32_t>(slices));
  put32(frame, static_cast<uint32_t>(end));
}

Result<void> check_output(const FrameFormat& format, size_t out) {
  if (const size_t most = max_frame_bytes(format); out < most) {
    return make_error(ErrorCode::invalid_argument, "ProRes: {} bytes for a frame of up to {}", out,
                      most);
  }
  return {};
}

size_t slices_budget(const FrameFormat& format, size_t count) {
  const size_t overhead = kTableOffset + 2 * count;
  const size_t target = target_frame_bytes(format);
  return target > overhead ? target - overhead : 0;
}

Result<SliceQuantisers> choose_quantisers(
    size_t count, size_t budget,
    const std::function<Result<void>(int q, std::vector<uint64_t>& sizes)>& sizes_at) {
  const auto n = static_cast<uint32_t>(count);
  auto total = [n](const std::vector<uint64_t>& sizes) {
    uint64_t sum = 0;
    for (uint64_t b : sizes) sum += rate_bytes(b, n);
    return sum;
  };
  // The sizes at each quantiser counted: the ones the search ends at, and the next finer, were
  // counted by it, and are not counted again.
  std::map<int, std::vector<uint64_t>> counted;
  const auto sizes_of = [&](int q) -> Result<const std::vector<uint64_t>*> {
    auto [at, fresh] = counted.try_emplace(q, count);
    if (fresh) {
      if (auto ok = sizes_at(q, at->second); !ok) return Unexpected(ok.error());
    }
    return &at->second;
  };
  RateState s = rate_start(budget);
  while (s.pass < kSearchPasses) {
    // A GPU counts all of a pass's candidates at once; the first that fits ends the pass, so
    // one after another, the finer first, those after it need not be counted.
    uint64_t totals[kMostCandidates];
    std::fill(std::begin(totals), std::end(totals), ~uint64_t{0});
    for (int r = pass_row(s.pass); r < pass_row(s.pass + 1); ++r) {
      if (s.q[r] == 0) continue;
      auto sizes = sizes_of(s.q[r]);
      if (!sizes) return Unexpected(sizes.error());
      totals[r - pass_row(s.pass)] = total(**sizes);
      if (totals[r - pass_row(s.pass)] <= budget) break;
    }
    rate_pass(s, totals);
  }
  auto found = sizes_of(s.hi);
  if (!found) return Unexpected(found.error());
  SliceQuantisers chosen{std::vector<int>(count, s.hi), **found};
  if (s.hi > 1) {
    auto finer = sizes_of(s.hi - 1);
    if (!finer) return Unexpected(finer.error());
    uint64_t spent = total(chosen.sizes);
    for (size_t i = 0; i < count && (**finer)[i] != 0; ++i) {
      const uint64_t more = finer_extra(chosen.sizes[i], (**finer)[i]);
      if (spent + more > budget) break;
      spent += more;
      chosen.quantisers[i] = s.hi - 1;
      chosen.sizes[i] = (**finer)[i];
    }
  }
  return chosen;
}

}  // namespace detail

std::string_view fourcc(Profile profile) {
  constexpr std::array<std::string_view, 4> kCodes = {"apco", "apcs", "apcn", "apch"};
  return kCodes[index(profile)];
}

std::string_view to_string(Profile profile) {
  constexpr std::array<std::string_view, 4> kNames = {"proxy", "lt", "standard", "hq"};
  return kNames[index(profile)];
}

std::vector<SliceSpan> slice_layout(uint32_t width, uint32_t height) {
  const uint32_t mb_width = (width + 15) / 16, mb_height = (height + 15) / 16;
  std::vector<SliceSpan> slices;
  for (uint32_t y = 0; y < mb_height; ++y) {
    uint32_t x = 0;
    for (uint32_t size = kMaxSliceMacroblocks; size > 0; size /= 2) {
      for (; mb_width - x >= size; x += size) slices.push_back({x, y, size});
    }
  }
  return slices;
}

Result<void> check_format(const FrameFormat& format) {
  if (format.width == 0 || format.height == 0 || format.width > 0xffff || format.height > 0xffff) {
    return make_error(ErrorCode::invalid_argument,
                      "ProRes: a picture of {}x{} (1x1 to 65535x65535)", format.width,
                      format.height);
  }
  return {};
}

size_t max_frame_bytes(const FrameFormat& format) {
  size_t bytes = detail::kTableOffset;
  for (const auto& s : slice_layout(format.width, format.height)) {
    bytes += 2 + slice_cap(s.mb_count);
  }
  return bytes;
}

size_t target_frame_bytes(const FrameFormat& format) {
  const size_t macroblocks = size_t{(format.width + 15) / 16} * ((format.height + 15) / 16);
  const uint32_t bits =
      format.bits_per_mb ? format.bits_per_mb : kBitsPerMacroblock[index(format.profile)];
  return macroblocks * bits / 8;
}

Encoder::Encoder(const FrameFormat& format, unsigned threads)
    : format_(format), slices_(slice_layout(format.width, format.height)), threads_(threads) {}

Result<Encoder> Encoder::create(const FrameFormat& format, unsigned threads) {
  if (auto ok = check_format(format); !ok) return Unexpected(ok.error());
  return Encoder(format, std::max(1u, threads));
}

size_t Encoder::max_frame_bytes() const { return prores::max_frame_bytes(format_); }

size_t Encoder::target_frame_bytes() const { return prores::target_frame_bytes(format_); }

Result<size_t> Encoder::encode(const Planes422& picture, std::span<uint8_t> out) const {
  if (auto ok = detail::check_output(format_, out.size()); !ok) return Unexpected(ok.error());
  const uint8_t* matrix = detail::matrix(format_.profile);
  const PlanesRef planes{picture.y,       picture.cb,    picture.cr,    picture.y_pitch,
                         picture.c_pitch, format_.width, format_.height};
  // Every slice's coefficients, made once.
  const size_t count = slices_.size();
  std::vector<Coefficient> coefficients(count * kSliceCoefficients);
  for_each_slice(count, threads_, [&](size_t i) {
    const SliceSpan& s = slices_[i];
    slice_dct(planes, s.mb_x, s.mb_y, s.mb_count, &coefficients[i * kSliceCoefficients]);
  });
  const auto slice = [&](size_t i) { return &coefficients[i * kSliceCoefficients]; };
  // The search needs the slices' sizes only: counted, not written. It ends with each slice's
  // size at the quantiser it gives the slice, so every slice's place is known before any is
  // written.
  auto chosen = detail::choose_quantisers(count, detail::slices_budget(format_, count),
                                          [&](int q, std::vector<uint64_t>& sizes) -> Result<void> {
                                            for_each_slice(count, threads_, [&](size_t i) {
                                              SliceShared shared;
                                              sizes[i] = count_slice(slice(i), slices_[i].mb_count,
                                                                     matrix, q, shared);
                                            });
                                            return {};
                                          });
  if (!chosen) return Unexpected(chosen.error());
  const std::vector<int>& quantisers = chosen->quantisers;
  const std::vector<uint64_t>& sizes = chosen->sizes;
  uint8_t* frame = out.data();
  detail::write_headers(format_, frame);
  uint8_t* table = frame + detail::kTableOffset;
  std::vector<size_t> offsets(count);
  size_t end = 2 * count;
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0) {
      return make_error(ErrorCode::resource, "ProRes: slice {} over its {} bytes", i,
                        slice_cap(slices_[i].mb_count));
    }
    put16(table + 2 * i, static_cast<uint32_t>(sizes[i]));
    offsets[i] = end;
    end += sizes[i];
  }
  std::atomic<size_t> astray{count};  // a slice that wrote other than it counted (none)
  for_each_slice(count, threads_, [&](size_t i) {
    SliceShared shared;
    std::array<uint32_t, kSliceWords> words;
    if (write_slice(slice(i), slices_[i].mb_count, matrix, quantisers[i], table + offsets[i],
                    sizes[i], shared, words.data()) != sizes[i]) {
      astray = i;
    }
  });
  if (const size_t i = astray; i < count) {
    return make_error(ErrorCode::resource,
                      "ProRes: slice {} wrote other than the {} bytes it counted", i, sizes[i]);
  }
  const size_t size = detail::kTableOffset + end;
  detail::finish(frame, count, size);
  return size;
}

}  // namespace rdmavideo::prores
