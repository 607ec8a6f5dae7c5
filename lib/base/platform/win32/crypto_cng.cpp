// SPDX-License-Identifier: Apache-2.0
// The handshake's primitives from CNG (bcrypt.dll), which every Windows since Vista has.
#include <windows.h>
// windows.h first: bcrypt.h needs its types.
#include <bcrypt.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::crypto {
namespace {

bool succeeded(NTSTATUS status) { return status >= 0; }

std::string status_text(NTSTATUS status) {
  return fmt::format("NTSTATUS 0x{:08x}", static_cast<uint32_t>(status));
}

// The HMAC-SHA256 provider, opened once for the process (a provider handle is thread-safe).
BCRYPT_ALG_HANDLE hmac_provider() {
  static BCRYPT_ALG_HANDLE provider = [] {
    BCRYPT_ALG_HANDLE handle = nullptr;
    const NTSTATUS status = BCryptOpenAlgorithmProvider(&handle, BCRYPT_SHA256_ALGORITHM, nullptr,
                                                        BCRYPT_ALG_HANDLE_HMAC_FLAG);
    if (!succeeded(status)) {
      throw std::runtime_error("HMAC-SHA256 unavailable: BCryptOpenAlgorithmProvider: " +
                               status_text(status));
    }
    return handle;
  }();
  return provider;
}

}  // namespace

Digest hmac_sha256(Bytes key, std::initializer_list<Bytes> parts) {
  BCRYPT_HASH_HANDLE hash = nullptr;
  // CNG takes the key as non-const bytes but does not write them.
  auto* key_bytes = reinterpret_cast<PUCHAR>(const_cast<std::byte*>(key.data()));
  NTSTATUS status = BCryptCreateHash(hmac_provider(), &hash, nullptr, 0, key_bytes,
                                     static_cast<ULONG>(key.size()), 0);
  if (!succeeded(status)) {
    throw std::runtime_error("HMAC-SHA256: BCryptCreateHash: " + status_text(status));
  }
  for (Bytes part : parts) {
    if (!succeeded(status)) break;
    if (part.empty()) continue;
    status = BCryptHashData(hash, reinterpret_cast<PUCHAR>(const_cast<std::byte*>(part.data())),
                            static_cast<ULONG>(part.size()), 0);
  }
  Digest out{};
  if (succeeded(status)) {
    status = BCryptFinishHash(hash, reinterpret_cast<PUCHAR>(out.data()),
                              static_cast<ULONG>(out.size()), 0);
  }
  BCryptDestroyHash(hash);
  if (!succeeded(status)) {
    throw std::runtime_error("HMAC-SHA256: BCryptHashData: " + status_text(status));
  }
  return out;
}

Result<void> random_bytes(std::span<std::byte> out) {
  const NTSTATUS status =
      BCryptGenRandom(nullptr, reinterpret_cast<PUCHAR>(out.data()), static_cast<ULONG>(out.size()),
                      BCRYPT_USE_SYSTEM_PREFERRED_RNG);
  if (!succeeded(status)) {
    return make_error(ErrorCode::system, "the random generator failed: BCryptGenRandom: {}",
                      status_text(status));
  }
  return {};
}

bool equal_in_constant_time(Bytes a, Bytes b) {
  if (a.size() != b.size()) return false;
  // Every byte is read whatever the others hold; volatile keeps the loop whole.
  volatile unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ = differ | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

void wipe(std::span<std::byte> bytes) { SecureZeroMemory(bytes.data(), bytes.size()); }

}  // namespace rdmavideo::crypto
