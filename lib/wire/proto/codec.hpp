// SPDX-License-Identifier: Apache-2.0
// What the message codec's parts share (protocol.cpp, decode.cpp, encode.cpp): the bodies'
// fixed sizes, the error every rejection is, UTF-8 cut at a character, and which messages
// travel with the handshake's header version. Layouts are in docs/protocol.md.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto::codec {

inline constexpr uint32_t kHelloBytes = 56;
inline constexpr uint32_t kHelloAckBytes = 56;
inline constexpr uint32_t kStreamStartBytes = 160;
inline constexpr uint32_t kRingInfoBytes = 40;
inline constexpr uint32_t kFrameWrittenBytes = 48;
inline constexpr uint32_t kKeepaliveBytes = 8;
inline constexpr uint32_t kEndOfStreamBytes = 16;
inline constexpr uint32_t kAuthBytes = kNonceBytes + kProofBytes;
inline constexpr uint32_t kAudioStartBytes = 96;
inline constexpr uint32_t kAudioEndBytes = 8;

template <typename... Args>
inline Unexpected bad(fmt::format_string<Args...> format, Args&&... args) {
  return Unexpected(Error(ErrorCode::protocol, fmt::format(format, std::forward<Args>(args)...)));
}

// `valid` (UTF-8) in at most `most` bytes: cut back to the start of the character the cut
// falls in (a UTF-8 continuation byte is 10xxxxxx).
inline std::string cut_utf8(std::string valid, size_t most) {
  if (valid.size() <= most) return valid;
  size_t end = most;
  while (end > 0 && (static_cast<unsigned char>(valid[end]) & 0xC0) == 0x80) --end;
  valid.resize(end);
  return valid;
}

// Hello, HelloAck and Error travel with Header.version 1 in every version (§4), so that ends
// of any two versions can decode each other's handshake and refusal.
inline bool handshake_message(MessageType type) {
  return type == MessageType::Hello || type == MessageType::HelloAck || type == MessageType::Error;
}

}  // namespace rdmavideo::proto::codec
