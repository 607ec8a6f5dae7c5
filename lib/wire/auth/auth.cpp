// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "auth/handshake.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo::auth {
namespace {

using Bytes = std::span<const std::byte>;

Bytes as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "no detail";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// HMAC-SHA256 under `key` over the concatenation of `parts`.
std::array<std::byte, 32> hmac(Bytes key, std::initializer_list<Bytes> parts) {
  std::vector<unsigned char> input;
  for (Bytes part : parts) {
    const auto* p = reinterpret_cast<const unsigned char*>(part.data());
    input.insert(input.end(), p, p + part.size());
  }
  std::array<std::byte, 32> out{};
  unsigned int length = 0;
  // One-shot HMAC() is not deprecated in OpenSSL 3; it fails only without SHA-256.
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), input.data(), input.size(),
            reinterpret_cast<unsigned char*>(out.data()), &length) ||
      length != out.size()) {
    throw std::runtime_error("HMAC-SHA256 unavailable: " + openssl_error());
  }
  OPENSSL_cleanse(input.data(), input.size());
  return out;
}

std::string_view label(Role role) {
  return role == Role::sender ? "rdmavideo v2 sender proof" : "rdmavideo v2 receiver proof";
}

std::string_view direction(Role from) {
  return from == Role::sender ? "rdmavideo v2 control sender to receiver"
                              : "rdmavideo v2 control receiver to sender";
}

// HKDF-SHA256 (RFC 5869) of the shared key, salted with both nonces, for one direction.
std::array<std::byte, 32> derive(const SharedKey& key, Role from, const Nonce& sender_nonce,
                                 const Nonce& receiver_nonce) {
  std::array<unsigned char, 2 * proto::kNonceBytes> salt;
  std::memcpy(salt.data(), sender_nonce.data(), sender_nonce.size());
  std::memcpy(salt.data() + sender_nonce.size(), receiver_nonce.data(), receiver_nonce.size());
  const auto info = direction(from);
  std::array<std::byte, 32> out{};
  size_t length = out.size();
  const std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> owned(
      EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr), &EVP_PKEY_CTX_free);
  EVP_PKEY_CTX* ctx = owned.get();
  const bool ok =
      ctx && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
      EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt.data(), static_cast<int>(salt.size())) > 0 &&
      EVP_PKEY_CTX_set1_hkdf_key(ctx, reinterpret_cast<const unsigned char*>(key.bytes().data()),
                                 static_cast<int>(key.bytes().size())) > 0 &&
      EVP_PKEY_CTX_add1_hkdf_info(ctx, reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) > 0 &&
      EVP_PKEY_derive(ctx, reinterpret_cast<unsigned char*>(out.data()), &length) > 0 &&
      length == out.size();
  if (!ok) throw std::runtime_error("HKDF-SHA256 unavailable: " + openssl_error());
  return out;
}

std::string mode_text(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

}  // namespace

SharedKey::~SharedKey() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

Result<std::shared_ptr<const SharedKey>> load_key(const std::filesystem::path& path) {
  const std::string name = path.string();
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) return Unexpected(system_error(fmt::format("key file {}", name), errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    return Unexpected(system_error(fmt::format("key file {}: fstat", name), errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::invalid_argument, "key file {} is not a regular file", name);
  }
  if ((st.st_mode & 077) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "key file {} is accessible by group or others (mode {}); the key must be "
                      "private: chmod 600 {}",
                      name, mode_text(st.st_mode), name);
  }
  if (st.st_size < static_cast<off_t>(kMinKeyBytes) ||
      st.st_size > static_cast<off_t>(kMaxKeyBytes)) {
    return make_error(ErrorCode::invalid_argument,
                      "key file {} holds {} bytes; a key is {}..{} bytes (make one with "
                      "rdmavideo-doctor --new-key FILE)",
                      name, st.st_size, kMinKeyBytes, kMaxKeyBytes);
  }
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unexpected(system_error(fmt::format("key file {}: read", name), errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != bytes.size()) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return make_error(ErrorCode::invalid_argument, "key file {} changed while it was read", name);
  }
  return std::shared_ptr<const SharedKey>(std::make_shared<SharedKey>(std::move(bytes)));
}

Result<void> create_key_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::array<unsigned char, 32> raw{};
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    return make_error(ErrorCode::system, "new key: the random generator failed: {}",
                      openssl_error());
  }
  std::string text;
  for (unsigned char b : raw) text += fmt::format("{:02x}", b);
  text += '\n';
  OPENSSL_cleanse(raw.data(), raw.size());
  UniqueFd fd(::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    auto error = system_error(fmt::format("new key file {}", name), errno);
    OPENSSL_cleanse(text.data(), text.size());
    return Unexpected(std::move(error));
  }
  // The mode given to open() passes through the umask, which may only take bits away.
  const bool ok =
      ::fchmod(fd.get(), 0600) == 0 &&
      ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
      ::fsync(fd.get()) == 0;
  const int err = errno;
  OPENSSL_cleanse(text.data(), text.size());
  if (!ok) {
    ::unlink(name.c_str());
    return Unexpected(system_error(fmt::format("new key file {}: write", name), err));
  }
  return {};
}

Result<Nonce> make_nonce() {
  Nonce nonce{};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) !=
      1) {
    return make_error(ErrorCode::system, "the random generator failed: {}", openssl_error());
  }
  return nonce;
}

Proof prove(const SharedKey& key, Role role, const Nonce& sender_nonce, const Nonce& receiver_nonce,
            const proto::Hello& hello, const proto::HelloAck& ack) {
  const auto hello_bytes = proto::encode(hello);
  const auto ack_bytes = proto::encode(ack);
  return hmac(key.bytes(),
              {as_bytes(label(role)), sender_nonce, receiver_nonce, hello_bytes, ack_bytes});
}

bool verify(const SharedKey& key, Role role, const Nonce& sender_nonce, const Nonce& receiver_nonce,
            const proto::Hello& hello, const proto::HelloAck& ack, const Proof& proof) {
  const Proof expected = prove(key, role, sender_nonce, receiver_nonce, hello, ack);
  return CRYPTO_memcmp(expected.data(), proof.data(), expected.size()) == 0;
}

ControlMac::ControlMac(const SharedKey& key, Role role, const Nonce& sender_nonce,
                       const Nonce& receiver_nonce)
    : send_key_(derive(key, role, sender_nonce, receiver_nonce)),
      receive_key_(derive(key, role == Role::sender ? Role::receiver : Role::sender, sender_nonce,
                          receiver_nonce)) {}

ControlMac::~ControlMac() {
  OPENSSL_cleanse(send_key_.data(), send_key_.size());
  OPENSSL_cleanse(receive_key_.data(), receive_key_.size());
}

std::array<std::byte, ControlMac::kTagBytes> ControlMac::tag(const Key& key, uint64_t counter,
                                                             Bytes message) const {
  std::array<std::byte, 8> count{};
  for (size_t i = 0; i < count.size(); ++i) count[i] = std::byte(counter >> (8 * i));
  const auto full = hmac(key, {count, message});
  std::array<std::byte, kTagBytes> out{};
  std::memcpy(out.data(), full.data(), out.size());
  return out;
}

void ControlMac::seal(std::vector<std::byte>& out, size_t start) {
  std::lock_guard lock(mu_);
  const auto t = tag(send_key_, sent_++, Bytes(out).subspan(start));
  out.insert(out.end(), t.begin(), t.end());
}

Result<void> ControlMac::open(Bytes message, Bytes tag_bytes) {
  std::lock_guard lock(mu_);
  const auto expected = tag(receive_key_, received_, message);
  if (tag_bytes.size() != expected.size() ||
      CRYPTO_memcmp(expected.data(), tag_bytes.data(), expected.size()) != 0) {
    return make_error(ErrorCode::auth_failed,
                      "authentication failed: a control message's tag does not verify");
  }
  ++received_;
  return {};
}

Result<proto::Message> decode_sealed(Bytes bytes, ControlMac* mac) {
  auto header = proto::decode_header(bytes);
  if (!header) return Unexpected(header.error());
  const size_t tag = tag_bytes(mac);
  const size_t whole = proto::kHeaderBytes + header->length;
  if (bytes.size() != whole + tag) {
    return make_error(ErrorCode::protocol, "{} of {} bytes does not match its length {}{}",
                      proto::to_string(header->type), bytes.size(), header->length,
                      tag ? " and tag" : "");
  }
  if (mac) {
    if (auto ok = mac->open(bytes.first(whole), bytes.subspan(whole)); !ok) {
      return Unexpected(ok.error());
    }
  }
  return proto::decode(*header, bytes.subspan(proto::kHeaderBytes, header->length));
}

void encode_sealed(const proto::Message& message, std::vector<std::byte>& out, ControlMac* mac,
                   uint16_t version) {
  const size_t start = out.size();
  proto::encode(message, out, version);
  if (mac) mac->seal(out, start);
}

}  // namespace rdmavideo::auth
