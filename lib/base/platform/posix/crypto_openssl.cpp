// SPDX-License-Identifier: Apache-2.0
// The handshake's primitives from OpenSSL 3.
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::crypto {
namespace {

// `what`, and OpenSSL's reason where its error queue has one.
std::string openssl_error(std::string what) {
  const unsigned long code = ERR_get_error();
  if (code == 0) return what;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return what + ": " + text;
}

}  // namespace

Digest hmac_sha256(Bytes key, std::initializer_list<Bytes> parts) {
  const std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac(
      EVP_MAC_fetch(nullptr, "HMAC", nullptr), &EVP_MAC_free);
  const std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(
      mac ? EVP_MAC_CTX_new(mac.get()) : nullptr, &EVP_MAC_CTX_free);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                               OSSL_PARAM_construct_end()};
  Digest out{};
  size_t length = 0;
  bool ok = ctx && EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key.data()),
                                key.size(), params) == 1;
  for (Bytes part : parts) {
    ok = ok && EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                              part.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &length,
                           out.size()) == 1;
  if (!mac) {
    throw std::runtime_error(openssl_error(
        "HMAC-SHA256 unavailable: OpenSSL offers no HMAC (is a provider missing from its "
        "configuration?)"));
  }
  if (!ok || length != out.size()) throw std::runtime_error(openssl_error("HMAC-SHA256 failed"));
  return out;
}

Result<void> random_bytes(std::span<std::byte> out) {
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size())) != 1) {
    return make_error(ErrorCode::system, "{}", openssl_error("the random generator failed"));
  }
  return {};
}

bool equal_in_constant_time(Bytes a, Bytes b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void wipe(std::span<std::byte> bytes) { OPENSSL_cleanse(bytes.data(), bytes.size()); }

}  // namespace rdmavideo::crypto
