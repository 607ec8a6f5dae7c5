// SPDX-License-Identifier: Apache-2.0
// What the CPU encoder and the GPU one share around the slices: the frame and picture headers,
// the profile's matrix and target, and the rate control's choice of quantisers from the
// slices' sizes, however those were found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "rdmavideo/prores.hpp"

namespace rdmavideo::prores::detail {

inline constexpr size_t kFrameHeaderBytes = 148;  // from its size field to the end of the matrices
inline constexpr size_t kPictureHeaderBytes = 8;

/// Where the slice table starts in a frame: after the frame's size and "icpf", its header
/// and the picture's.
inline constexpr size_t kTableOffset = 8 + kFrameHeaderBytes + kPictureHeaderBytes;

/// The profile's quantisation matrix (luma and chroma alike), in raster order.
const uint8_t* matrix(Profile profile);

/// The frame's first kTableOffset bytes but for the sizes, which finish() writes.
void write_headers(const FrameFormat& format, uint8_t* frame);
/// The frame's size and the picture's, once its `slices` slices end at `end`.
void finish(uint8_t* frame, size_t slices, size_t end);

/// `invalid_argument` where `out` bytes cannot hold every frame of `format`.
Result<void> check_output(const FrameFormat& format, size_t out);
/// What the slices of a frame of `format` in `count` slices may take: its target less the
/// headers and the slice table.
size_t slices_budget(const FrameFormat& format, size_t count);

/// Each slice's quantiser, and its size coded at it (0: over its cap).
struct SliceQuantisers {
  std::vector<int> quantisers;
  std::vector<uint64_t> sizes;
};

/// Each slice's quantiser: the finest for all whose slices fit `budget` bytes, then the next
/// finer for as many slices, in order, as the bytes left pay for. `sizes_at(q, sizes)` gives
/// every slice's size at quantiser q (0: over its cap).
Result<SliceQuantisers> choose_quantisers(
    size_t count, size_t budget,
    const std::function<Result<void>(int q, std::vector<uint64_t>& sizes)>& sizes_at);

}  // namespace rdmavideo::prores::detail
