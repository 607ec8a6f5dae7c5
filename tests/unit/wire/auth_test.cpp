// SPDX-License-Identifier: Apache-2.0
// Authentication's pieces (auth/handshake.hpp, rdmavideo/auth.hpp): key files and their
// refusals, the proofs (a proof is valid for one role, one pair of nonces and one Hello
// exchange only), and the control-message tags (tampered, replayed, reordered or reflected
// messages fail to open).
// The same file runs on Windows (cross-built, under wine), where a file is private by its
// access list instead of its mode.
#include <gtest/gtest.h>
#ifndef _WIN32
#include <sys/stat.h>
#endif

#include <filesystem>
#include <fstream>

#include "auth/handshake.hpp"
#include "rdmavideo/platform/files.hpp"

namespace rdmavideo::auth {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

class KeyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance();
    dir_ = fs::temp_directory_path() / ("rdmavideo-auth-" + std::to_string(test->random_seed()) +
                                        "-" + test->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& bytes, fs::perms mode) {
    const fs::path p = dir_ / name;
#ifdef _WIN32
    // A mode means nothing to Windows: an owner-only file is made private by its access list.
    if ((mode & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none) {
      EXPECT_TRUE(platform::write_private_file(p, std::as_bytes(std::span(bytes)), "test key"));
      return p;
    }
#endif
    std::ofstream(p, std::ios::binary) << bytes;
    fs::permissions(p, mode);
    return p;
  }
  fs::path dir_;
};

TEST_F(KeyFiles, AKeyIsTheFilesBytesAsTheyAre) {
  const std::string text(64, 'a');
  auto key = load_key(write("k", text + "\n", fs::perms::owner_read | fs::perms::owner_write));
  ASSERT_TRUE(key) << key.error().message();
  ASSERT_EQ((*key)->bytes().size(), 65u);
  EXPECT_EQ(static_cast<char>((*key)->bytes()[64]), '\n');
}

TEST_F(KeyFiles, AFileOthersMayReadIsRefusedWithTheChmodThatFixesIt) {
  const auto p = write("k", std::string(40, 'x'),
                       fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                           fs::perms::others_read);
  auto key = load_key(p);
  ASSERT_FALSE(key);
#ifdef _WIN32
  EXPECT_NE(key.error().message().find("(its access list)"), std::string::npos)
      << key.error().message();
  EXPECT_NE(key.error().message().find("icacls \"" + p.string() + "\" /inheritance:r"),
            std::string::npos);
#else
  EXPECT_NE(key.error().message().find("mode 0644"), std::string::npos) << key.error().message();
  EXPECT_NE(key.error().message().find("chmod 600 " + p.string()), std::string::npos);
#endif
}

TEST_F(KeyFiles, ShortMissingAndSpecialFilesAreRefused) {
  auto short_key = load_key(write("short", std::string(31, 'x'), fs::perms::owner_read));
  ASSERT_FALSE(short_key);
  EXPECT_NE(short_key.error().message().find("holds 31 bytes"), std::string::npos);
  auto missing = load_key(dir_ / "none");
  ASSERT_FALSE(missing);
  // The system's own words: "No such file or directory"; Windows "The system cannot find
  // the file specified" (wine: "File not found").
  const std::string said = lower(missing.error().message());
  EXPECT_TRUE(said.find("no such file") != std::string::npos ||
              said.find("cannot find the file") != std::string::npos ||
              said.find("file not found") != std::string::npos)
      << said;
  auto directory = load_key(dir_);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message().find("not a regular file"), std::string::npos);
}

TEST_F(KeyFiles, ANewKeyIsPrivateRandomAndNeverReplacesAFile) {
  const fs::path p = dir_ / "new.key";
#ifndef _WIN32
  ::umask(022);
  ASSERT_TRUE(create_key_file(p));
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
#else
  ASSERT_TRUE(create_key_file(p));
#endif
  auto first = load_key(p);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ((*first)->bytes().size(), 65u);  // 64 hex digits and a newline
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>((*first)->bytes()[i]))) << i;
  }
  auto again = create_key_file(p);
  ASSERT_FALSE(again);
  EXPECT_NE(lower(again.error().message()).find("file exists"), std::string::npos)
      << again.error().message();
  ASSERT_TRUE(create_key_file(dir_ / "other.key"));
  auto second = load_key(dir_ / "other.key");
  ASSERT_TRUE(second);
  EXPECT_FALSE(
      std::equal((*first)->bytes().begin(), (*first)->bytes().end(), (*second)->bytes().begin()));
}

SharedKey key_of(char fill) { return SharedKey(std::vector<std::byte>(32, std::byte(fill))); }

struct Exchange {
  proto::Hello hello;
  proto::HelloAck ack;
  Nonce s{};
  Nonce r{};
  Exchange() {
    hello.max_frame_bytes = 1 << 20;
    hello.flags = proto::kCapAuth;
    hello.software = "rdmavideo test";
    ack.max_frame_bytes = 1 << 20;
    ack.credits = 8;
    ack.flags = proto::kCapAuth;
    s = *make_nonce();
    r = *make_nonce();
  }
};

TEST(Proofs, AProofHoldsForItsRoleNoncesAndHelloExchangeOnly) {
  const SharedKey key = key_of('k');
  Exchange x;
  const Proof sender = prove(key, Role::sender, x.s, x.r, x.hello, x.ack).value();
  EXPECT_TRUE(verify(key, Role::sender, x.s, x.r, x.hello, x.ack, sender).value());
  // Reflected: the sender's proof is not the receiver's.
  EXPECT_FALSE(verify(key, Role::receiver, x.s, x.r, x.hello, x.ack, sender).value());
  // Another key, other nonces, or a Hello changed on the way: no.
  EXPECT_FALSE(verify(key_of('j'), Role::sender, x.s, x.r, x.hello, x.ack, sender).value());
  EXPECT_FALSE(verify(key, Role::sender, x.r, x.s, x.hello, x.ack, sender).value());
  EXPECT_FALSE(verify(key, Role::sender, x.s, *make_nonce(), x.hello, x.ack, sender).value());
  proto::Hello downgraded = x.hello;
  downgraded.flags = 0;
  EXPECT_FALSE(verify(key, Role::sender, x.s, x.r, downgraded, x.ack, sender).value());
  proto::HelloAck smaller = x.ack;
  smaller.credits = 2;
  EXPECT_FALSE(verify(key, Role::sender, x.s, x.r, x.hello, smaller, sender).value());
  // Nonces are fresh.
  EXPECT_NE(*make_nonce(), *make_nonce());
}

TEST(ControlTags, MessagesOpenInOrderOnTheOtherEndOnly) {
  const SharedKey key = key_of('k');
  Exchange x;
  ControlMac sender(key, Role::sender, x.s, x.r);
  ControlMac receiver(key, Role::receiver, x.s, x.r);
  std::vector<std::vector<std::byte>> sealed;
  for (uint32_t epoch = 1; epoch <= 3; ++epoch) {
    std::vector<std::byte> m;
    encode_sealed(proto::CreditReturn{epoch, {0, 1}}, m, &receiver);
    ASSERT_EQ(m.size(),
              proto::encode(proto::CreditReturn{epoch, {0, 1}}).size() + ControlMac::kTagBytes);
    sealed.push_back(std::move(m));
  }
  // In order: each opens and decodes.
  auto first = decode_sealed(sealed[0], &sender);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(std::get<proto::CreditReturn>(*first).ring_epoch, 1u);
  // Replayed: the counter has moved on.
  auto replay = decode_sealed(sealed[0], &sender);
  ASSERT_FALSE(replay);
  EXPECT_EQ(replay.error().code(), ErrorCode::auth_failed);
  // Reordered (the third before the second) fails too; the second then still opens.
  EXPECT_FALSE(decode_sealed(sealed[2], &sender));
  EXPECT_TRUE(decode_sealed(sealed[1], &sender));
  // Reflected back to the end that sealed it: the directions have their own keys.
  std::vector<std::byte> own;
  encode_sealed(proto::Keepalive{7}, own, &sender);
  EXPECT_FALSE(decode_sealed(own, &sender));
  // Tampered: one bit of the body.
  ControlMac s2(key, Role::sender, x.s, x.r);
  ControlMac r2(key, Role::receiver, x.s, x.r);
  std::vector<std::byte> m;
  encode_sealed(proto::EndOfStream{10, 0}, m, &s2);
  m[proto::kHeaderBytes] ^= std::byte{1};
  auto tampered = decode_sealed(m, &r2);
  ASSERT_FALSE(tampered);
  EXPECT_EQ(tampered.error().message(),
            "authentication failed: a control message's tag does not verify");
  // A message without its tag is refused, naming the missing tag.
  auto bare = decode_sealed(proto::encode(proto::Keepalive{1}), &r2);
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message().find("and tag"), std::string::npos) << bare.error().message();
}

TEST(AuthMessage, RoundTripsAndBelongsToVersion2) {
  proto::Auth a;
  a.nonce = *make_nonce();
  a.proof[3] = std::byte{9};
  const auto bytes = proto::encode(a, 2);
  ASSERT_EQ(bytes.size(), proto::kHeaderBytes + 64);
  auto header = proto::decode_header(bytes);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->version, 2);  // on a version 2 connection; with the version negotiated
  auto back = proto::decode(*header, std::span(bytes).subspan(proto::kHeaderBytes));
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<proto::Auth>(*back).nonce, a.nonce);
  EXPECT_EQ(std::get<proto::Auth>(*back).proof, a.proof);
  // The appendix's example (docs/protocol.md §11), byte for byte.
  proto::Auth example;
  for (size_t i = 0; i < 32; ++i) {
    example.nonce[i] = std::byte(i);
    example.proof[i] = std::byte(0x20 + i);
  }
  const auto example_bytes = proto::encode(example, 2);
  const uint8_t header_bytes[16] = {0x52, 0x44, 0x56, 0x46, 0x02, 0x00, 0x0a, 0x00,
                                    0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  for (size_t i = 0; i < example_bytes.size(); ++i) {
    const uint8_t want = i < 16 ? header_bytes[i] : static_cast<uint8_t>(i - 16);
    EXPECT_EQ(static_cast<uint8_t>(example_bytes[i]), want) << "byte " << i;
  }
  // A version 1 header on Auth is refused: only Hello, HelloAck and Error keep version 1.
  auto v1 = bytes;
  v1[4] = std::byte{1};
  auto old = proto::decode_header(v1);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code(), ErrorCode::unsupported);
}

}  // namespace
}  // namespace rdmavideo::auth
