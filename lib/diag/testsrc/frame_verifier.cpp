// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/frame_verifier.hpp"

namespace rdmavideo {

FrameVerifier::FrameVerifier(const proto::StreamStart& format) {
  if (format.flags & proto::kStreamTestPattern) pattern_.emplace(format);
}

std::optional<std::string> FrameVerifier::verify(const proto::FrameWritten& info,
                                                 std::span<const std::byte> data) const {
  if (info.flags & proto::kFrameHasChecksum) {
    const uint64_t actual = frame_checksum(data);
    if (actual != info.checksum) {
      return fmt::format(
          "frame {}: checksum 0x{:016x} does not match FrameWritten.checksum 0x{:016x}",
          info.sequence, actual, info.checksum);
    }
  }
  if (pattern_) {
    if (auto mismatch = pattern_->verify(info.sequence, data)) {
      return mismatch->describe(info.sequence);
    }
  }
  return std::nullopt;
}

}  // namespace rdmavideo
