// SPDX-License-Identifier: Apache-2.0
// Test support for the message codec's tests: decode a whole message, or expect it refused.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto::testing {

/// Decodes one message: its header, then its body.
inline Result<Message> decode_message(std::span<const std::byte> bytes) {
  auto header = decode_header(bytes);
  if (!header) return Unexpected(header.error());
  return decode(*header, bytes.subspan(kHeaderBytes));
}

/// Decodes `bytes`, expecting an error of `code`, and returns its message.
inline std::string rejection(const std::vector<std::byte>& bytes,
                             ErrorCode code = ErrorCode::protocol) {
  auto decoded = decode_message(bytes);
  if (decoded) {
    ADD_FAILURE() << "decoded a message that should have been rejected";
    return {};
  }
  EXPECT_EQ(decoded.error().code(), code) << decoded.error().message();
  return decoded.error().message();
}

}  // namespace rdmavideo::proto::testing
