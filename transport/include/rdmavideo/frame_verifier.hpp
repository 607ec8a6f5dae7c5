// SPDX-License-Identifier: Apache-2.0
// Receiver-side integrity check: the frame's checksum when the sender sent one, and the
// built-in test pattern when the stream says it carries it. One verifier per stream format;
// verify() may be called from any single thread.
#pragma once

#include <optional>
#include <string>

#include "rdmavideo/test_pattern.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo {

class FrameVerifier {
 public:
  explicit FrameVerifier(const proto::StreamStart& format);

  /// nullopt when the frame is good, else what is wrong with it, naming frame, plane, byte.
  std::optional<std::string> verify(const proto::FrameWritten& info,
                                    std::span<const std::byte> data) const;

  bool checks_pattern() const { return pattern_.has_value(); }

 private:
  std::optional<TestPattern> pattern_;
};

}  // namespace rdmavideo
