// SPDX-License-Identifier: Apache-2.0
// The cryptographic primitives the shared-key handshake is built from, from the platform's
// own library: OpenSSL on Linux, CNG (bcrypt.dll) on Windows. HKDF is written once over
// HMAC, so both platforms derive the same keys; tests check every one against the RFCs'
// vectors.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>

#include "rdmavideo/result.hpp"

namespace rdmavideo::crypto {

using Bytes = std::span<const std::byte>;
using Digest = std::array<std::byte, 32>;

/// HMAC-SHA256 (RFC 2104, FIPS 180-4) under `key` over the concatenation of `parts`.
/// Throws std::runtime_error only where the platform has no SHA-256.
Digest hmac_sha256(Bytes key, std::initializer_list<Bytes> parts);
/// HKDF-SHA256 (RFC 5869): `out.size()` bytes (at most 255 * 32) from input keying material
/// `ikm`, `salt` and `info`.
void hkdf_sha256(Bytes salt, Bytes ikm, Bytes info, std::span<std::byte> out);
/// Fills `out` from the platform's cryptographic random generator.
Result<void> random_bytes(std::span<std::byte> out);
/// Whether `a` and `b` hold the same bytes, in a time that does not depend on where they
/// differ. Different sizes are simply unequal.
bool equal_in_constant_time(Bytes a, Bytes b);
/// Overwrites `bytes` with zeros in a way the compiler does not remove.
void wipe(std::span<std::byte> bytes);

}  // namespace rdmavideo::crypto
