// SPDX-License-Identifier: Apache-2.0
// Shared keys: what `--key-file` (and the GStreamer elements' `key-file`) loads, and how a
// new one is made. The handshake that proves a key (mutual HMAC-SHA256 challenge-response,
// then a MAC on every control message under keys derived with HKDF) is the library's own
// business; docs/security.md says what it protects and what it does not, and
// docs/protocol.md §4.1 gives it byte for byte.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/result.hpp"

namespace rdmavideo::auth {

/// The shortest key a file may hold: 32 bytes (256 bits of raw randomness, or text such as
/// 64 hexadecimal characters; text carries fewer bits a byte, so longer is better).
inline constexpr size_t kMinKeyBytes = 32;
/// The longest: a key file is small; anything bigger is the wrong file.
inline constexpr size_t kMaxKeyBytes = 4096;

/// A key's bytes, wiped from memory when the last owner lets go.
class SharedKey {
 public:
  explicit SharedKey(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  ~SharedKey();
  SharedKey(const SharedKey&) = delete;
  SharedKey& operator=(const SharedKey&) = delete;
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

/// A key's public name: 16 hexadecimal characters of an HMAC-SHA256 under the key of a fixed
/// label, so two ends (and a DNS-SD listing) can tell whether they hold the same key without
/// showing it. Stable: a key keeps its id.
std::string key_id(const SharedKey& key);

/// Reads a key file: its contents as they are (a trailing newline is part of the key), at
/// least kMinKeyBytes. Like ssh with a private key, a file that group or others may read or
/// write is refused, naming its mode and the chmod that fixes it; so is anything that is
/// not a regular file.
Result<std::shared_ptr<const SharedKey>> load_key(const std::filesystem::path& path);

/// Writes a new key to `path`: 32 random bytes from the system's generator as 64 lowercase
/// hexadecimal characters and a newline, created with mode 0600. An existing file is never
/// replaced.
Result<void> create_key_file(const std::filesystem::path& path);

}  // namespace rdmavideo::auth
