// SPDX-License-Identifier: Apache-2.0
// The handshake's primitives against the RFCs' own test vectors: HMAC-SHA256 (RFC 4231) and
// HKDF-SHA256 (RFC 5869). The same file runs on Linux (OpenSSL) and, cross-built, on Windows
// (CNG), so both platforms prove the same keys.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rdmavideo/platform/crypto.hpp"

namespace rdmavideo::crypto {
namespace {

std::vector<std::byte> repeat(unsigned char value, size_t n) {
  return std::vector<std::byte>(n, std::byte{value});
}
std::vector<std::byte> counting(unsigned first, unsigned end) {  // first, first + 1, ..., end - 1
  std::vector<std::byte> out;
  for (unsigned v = first; v < end; ++v) out.push_back(std::byte(v));
  return out;
}
std::vector<std::byte> text(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}
std::string hex(std::span<const std::byte> bytes) {
  std::string out;
  for (std::byte b : bytes) out += fmt::format("{:02x}", static_cast<unsigned>(b));
  return out;
}

struct HmacCase {
  std::vector<std::byte> key, data;
  const char* expected;
};

TEST(Crypto, HmacSha256MatchesRfc4231) {
  const std::vector<HmacCase> cases = {
      {repeat(0x0b, 20), text("Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {text("Jefe"), text("what do ya want for nothing?"),
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {repeat(0xaa, 20), repeat(0xdd, 50),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {counting(1, 26), repeat(0xcd, 50),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {repeat(0xaa, 131), text("Test Using Larger Than Block-Size Key - Hash Key First"),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {repeat(0xaa, 131),
       text("This is a test using a larger than block-size key and a larger than block-size "
            "data. The key needs to be hashed before being used by the HMAC algorithm."),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(hex(hmac_sha256(c.key, {c.data})), c.expected) << "RFC 4231 case " << i + 1;
    // The message given in parts is the same message.
    const auto half = std::span(c.data).first(c.data.size() / 2);
    const auto rest = std::span(c.data).subspan(c.data.size() / 2);
    EXPECT_EQ(hex(hmac_sha256(c.key, {half, {}, rest})), c.expected) << "in parts, case " << i + 1;
  }
}

struct HkdfCase {
  std::vector<std::byte> ikm, salt, info;
  size_t length;
  const char* expected;
};

TEST(Crypto, HkdfSha256MatchesRfc5869) {
  const std::vector<HkdfCase> cases = {
      {repeat(0x0b, 22), counting(0x00, 0x0d), counting(0xf0, 0xfa), 42,
       "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
      {counting(0x00, 0x50), counting(0x60, 0xb0), counting(0xb0, 0x100), 82,
       "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c6"
       "5e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"},
      {repeat(0x0b, 22),
       {},
       {},
       42,
       "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    std::vector<std::byte> out(c.length);
    hkdf_sha256(c.salt, c.ikm, c.info, out);
    EXPECT_EQ(hex(out), c.expected) << "RFC 5869 case " << i + 1;
  }
}

TEST(Crypto, RandomBytesAreNotTheSameTwice) {
  std::vector<std::byte> a(32), b(32);
  ASSERT_TRUE(random_bytes(a));
  ASSERT_TRUE(random_bytes(b));
  EXPECT_NE(hex(a), hex(b));
  EXPECT_NE(hex(a), hex(std::vector<std::byte>(32)));
}

TEST(Crypto, EqualInConstantTimeComparesEveryByteAndTheSize) {
  const auto a = counting(0, 32);
  auto b = a;
  EXPECT_TRUE(equal_in_constant_time(a, b));
  b.back() ^= std::byte{1};
  EXPECT_FALSE(equal_in_constant_time(a, b));
  b = a;
  b.front() ^= std::byte{0x80};
  EXPECT_FALSE(equal_in_constant_time(a, b));
  EXPECT_FALSE(equal_in_constant_time(a, std::span(a).first(31)));
  EXPECT_TRUE(equal_in_constant_time({}, {}));
}

TEST(Crypto, WipeLeavesZeros) {
  auto bytes = repeat(0x5a, 40);
  wipe(bytes);
  EXPECT_EQ(bytes, repeat(0, 40));
}

}  // namespace
}  // namespace rdmavideo::crypto
