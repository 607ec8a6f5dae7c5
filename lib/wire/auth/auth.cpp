// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <string_view>

#include "auth/handshake.hpp"
#include "rdmavideo/platform/crypto.hpp"
#include "rdmavideo/platform/files.hpp"

namespace rdmavideo::auth {
namespace {

using Bytes = std::span<const std::byte>;

Bytes as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
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
  std::array<std::byte, 2 * proto::kNonceBytes> salt;
  std::memcpy(salt.data(), sender_nonce.data(), sender_nonce.size());
  std::memcpy(salt.data() + sender_nonce.size(), receiver_nonce.data(), receiver_nonce.size());
  std::array<std::byte, 32> out{};
  crypto::hkdf_sha256(salt, key.bytes(), as_bytes(direction(from)), out);
  return out;
}

}  // namespace

std::string key_id(const SharedKey& key) {
  static constexpr std::string_view kLabel = "rdmavideo key id v1";
  const auto digest = crypto::hmac_sha256(key.bytes(), {std::as_bytes(std::span(kLabel))});
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < 8; ++i) {
    const auto b = std::to_integer<unsigned>(digest[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

SharedKey::~SharedKey() { crypto::wipe(bytes_); }

Result<std::shared_ptr<const SharedKey>> load_key(const std::filesystem::path& path) {
  const std::string what = fmt::format("key file {}", path.string());
  auto size = platform::check_private_file(path, what);
  if (!size) return Unexpected(size.error());
  if (*size < kMinKeyBytes || *size > kMaxKeyBytes) {
    return make_error(ErrorCode::invalid_argument,
                      "{} holds {} bytes; a key is {}..{} bytes (make one with "
                      "rdmavideo-doctor --new-key FILE)",
                      what, *size, kMinKeyBytes, kMaxKeyBytes);
  }
  auto bytes = platform::read_private_file(path, *size, what);
  if (!bytes) return Unexpected(bytes.error());
  return std::shared_ptr<const SharedKey>(std::make_shared<SharedKey>(std::move(*bytes)));
}

Result<void> create_key_file(const std::filesystem::path& path) {
  std::array<std::byte, 32> raw{};
  if (auto ok = crypto::random_bytes(raw); !ok) return Unexpected(ok.error().context("new key"));
  std::string text;
  for (std::byte b : raw) text += fmt::format("{:02x}", static_cast<unsigned>(b));
  text += '\n';
  crypto::wipe(raw);
  auto written = platform::write_private_file(path, std::as_bytes(std::span(text)),
                                              fmt::format("new key file {}", path.string()));
  crypto::wipe(std::as_writable_bytes(std::span(text)));
  return written;
}

Result<Nonce> make_nonce() {
  Nonce nonce{};
  if (auto ok = crypto::random_bytes(nonce); !ok) return Unexpected(ok.error());
  return nonce;
}

Result<Proof> prove(const SharedKey& key, Role role, const Nonce& sender_nonce,
                    const Nonce& receiver_nonce, const proto::Hello& hello,
                    const proto::HelloAck& ack) {
  const auto hello_bytes = proto::encode(hello);
  const auto ack_bytes = proto::encode(ack);
  try {
    return crypto::hmac_sha256(
        key.bytes(), {as_bytes(label(role)), sender_nonce, receiver_nonce, hello_bytes, ack_bytes});
  } catch (const std::exception& e) {
    // The first HMAC a connection computes: where the crypto library has none (a provider
    // missing from its configuration), the handshake fails here saying so. The control
    // messages' tags use the same primitive only after this one worked.
    return make_error(ErrorCode::system, "cannot prove the shared key: {}", e.what());
  }
}

Result<bool> verify(const SharedKey& key, Role role, const Nonce& sender_nonce,
                    const Nonce& receiver_nonce, const proto::Hello& hello,
                    const proto::HelloAck& ack, const Proof& proof) {
  const auto expected = prove(key, role, sender_nonce, receiver_nonce, hello, ack);
  if (!expected) return Unexpected(expected.error());
  return crypto::equal_in_constant_time(*expected, proof);
}

ControlMac::ControlMac(const SharedKey& key, Role role, const Nonce& sender_nonce,
                       const Nonce& receiver_nonce)
    : send_key_(derive(key, role, sender_nonce, receiver_nonce)),
      receive_key_(derive(key, role == Role::sender ? Role::receiver : Role::sender, sender_nonce,
                          receiver_nonce)) {}

ControlMac::~ControlMac() {
  crypto::wipe(send_key_);
  crypto::wipe(receive_key_);
}

std::array<std::byte, ControlMac::kTagBytes> ControlMac::tag(const Key& key, uint64_t counter,
                                                             Bytes message) const {
  std::array<std::byte, 8> count{};
  for (size_t i = 0; i < count.size(); ++i) count[i] = std::byte(counter >> (8 * i));
  const auto full = crypto::hmac_sha256(key, {count, message});
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
  if (!crypto::equal_in_constant_time(expected, tag_bytes)) {
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
