// SPDX-License-Identifier: Apache-2.0
// Preloaded into a process, this makes OpenSSL find no HMAC, as on a machine whose OpenSSL
// configuration leaves out the provider that has it: EVP_MAC_fetch("HMAC") answers NULL,
// every other algorithm is OpenSSL's own. The handshake's first HMAC then throws inside the
// library, which is what the tests that preload it need.
#include <dlfcn.h>
#include <openssl/evp.h>

#include <cstring>

extern "C" EVP_MAC* EVP_MAC_fetch(OSSL_LIB_CTX* context, const char* algorithm,
                                  const char* properties) {
  if (algorithm != nullptr && std::strcmp(algorithm, "HMAC") == 0) return nullptr;
  using Fetch = EVP_MAC* (*)(OSSL_LIB_CTX*, const char*, const char*);
  static const auto next = reinterpret_cast<Fetch>(dlsym(RTLD_NEXT, "EVP_MAC_fetch"));
  return next != nullptr ? next(context, algorithm, properties) : nullptr;
}
