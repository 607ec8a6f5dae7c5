// SPDX-License-Identifier: Apache-2.0
// The checksum a FrameWritten carries (FrameWritten.checksum with kFrameHasChecksum,
// docs/protocol.md §8.1): XXH3-64 of the frame's payload. Every sender that checksums and
// every receiver that verifies computes it here. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmavideo {

/// XXH3-64 of a frame, the checksum FrameWritten carries.
uint64_t frame_checksum(std::span<const std::byte> data);

}  // namespace rdmavideo
