// SPDX-License-Identifier: Apache-2.0
// The cryptography of authentication (docs/protocol.md §4.1), for the two handshakes
// (services/receiver/connection.cpp, transports/channel/sender_base.cpp) and the transports that
// seal and open control messages. OpenSSL does the work: HMAC-SHA256, HKDF-SHA256, RAND_bytes,
// CRYPTO_memcmp.
//
// The exchange, after Hello and HelloAck (both with kCapAuth):
//   receiver -> sender  Auth{nonce_r, proof 0}           the challenge
//   sender -> receiver  Auth{nonce_s, proof_s}           proof_s = HMAC(K, "rdmavideo sender" ...)
//   receiver -> sender  Auth{nonce_r, proof_r}           proof_r = HMAC(K, "rdmavideo receiver"
//   ...)
// Each proof covers its role label, both nonces and the Hello and HelloAck as encoded, so
// one side's proof is never valid as the other's, and neither replays into another
// handshake. Then each direction has its own key, HKDF(K, salt nonce_s || nonce_r, info
// naming the direction), and every later control message carries a tag: the first 16 bytes
// of HMAC-SHA256 over that direction's message counter (u64) and the message's header and
// body. The tag follows the body (§4.1); frame payloads are not covered.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::auth {

using proto::Nonce;
using proto::Proof;

enum class Role { sender, receiver };

/// A fresh random nonce (RAND_bytes).
Result<Nonce> make_nonce();

/// The proof `role` sends: HMAC-SHA256 under the shared key over the role's label, the
/// sender's nonce, the receiver's nonce and the Hello and HelloAck as encode() writes them.
/// An error (system) where the crypto library cannot compute HMAC-SHA256.
Result<Proof> prove(const SharedKey& key, Role role, const Nonce& sender_nonce,
                    const Nonce& receiver_nonce, const proto::Hello& hello,
                    const proto::HelloAck& ack);
/// Whether `proof` is `role`'s proof for this handshake (a constant-time comparison); an
/// error where the proof cannot be computed (as prove()).
Result<bool> verify(const SharedKey& key, Role role, const Nonce& sender_nonce,
                    const Nonce& receiver_nonce, const proto::Hello& hello,
                    const proto::HelloAck& ack, const Proof& proof);

/// Seals and opens the control messages of one authenticated connection, for `role`'s end:
/// messages it sends get a tag under its direction's key, messages it receives must carry
/// the peer's. Each direction counts its messages, so a message replayed, dropped,
/// reordered or reflected fails to open. Thread-safe (sends may come from two threads).
class ControlMac {
 public:
  static constexpr size_t kTagBytes = 16;

  ControlMac(const SharedKey& key, Role role, const Nonce& sender_nonce,
             const Nonce& receiver_nonce);
  ~ControlMac();
  ControlMac(const ControlMac&) = delete;
  ControlMac& operator=(const ControlMac&) = delete;

  /// Appends the tag of the message that out[start..] holds (its header and body).
  void seal(std::vector<std::byte>& out, size_t start = 0);
  /// Checks the tag of the next message received; the error says only that it failed.
  Result<void> open(std::span<const std::byte> message, std::span<const std::byte> tag);

 private:
  using Key = std::array<std::byte, 32>;
  std::array<std::byte, kTagBytes> tag(const Key& key, uint64_t counter,
                                       std::span<const std::byte> message) const;

  Key send_key_{};
  Key receive_key_{};
  std::mutex mu_;
  uint64_t sent_ = 0;      // messages sealed, under mu_
  uint64_t received_ = 0;  // messages opened, under mu_
};

/// Bytes of tag after a message's body: ControlMac::kTagBytes once `mac` is set, else none.
inline size_t tag_bytes(const ControlMac* mac) { return mac ? ControlMac::kTagBytes : 0; }

/// Decodes one message from `bytes` (header, body and, with `mac`, its tag: exactly that
/// many bytes) and opens its tag. What both transports that receive whole messages use.
Result<proto::Message> decode_sealed(std::span<const std::byte> bytes, ControlMac* mac);
/// encode() with the negotiated `version` and, with `mac`, seal().
void encode_sealed(const proto::Message& message, std::vector<std::byte>& out, ControlMac* mac,
                   uint16_t version = proto::kVersion);

}  // namespace rdmavideo::auth
