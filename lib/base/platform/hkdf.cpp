// SPDX-License-Identifier: Apache-2.0
// HKDF (RFC 5869) over the platform's HMAC-SHA256: extract, then expand.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::crypto {

void hkdf_sha256(Bytes salt, Bytes ikm, Bytes info, std::span<std::byte> out) {
  if (out.size() > 255 * sizeof(Digest)) {
    throw std::invalid_argument("HKDF-SHA256: at most 8160 bytes of output");
  }
  // An absent salt is a string of HashLen zeros.
  const Digest zeros{};
  Digest prk = hmac_sha256(salt.empty() ? Bytes(zeros) : salt, {ikm});
  Digest t{};
  size_t t_size = 0;
  for (size_t done = 0, n = 1; done < out.size(); ++n) {
    const std::byte counter{static_cast<unsigned char>(n)};
    t = hmac_sha256(prk, {Bytes(t.data(), t_size), info, Bytes(&counter, 1)});
    t_size = t.size();
    const size_t take = std::min(t.size(), out.size() - done);
    std::memcpy(out.data() + done, t.data(), take);
    done += take;
  }
  wipe(prk);
  wipe(t);
}

}  // namespace rdmavideo::crypto
