// SPDX-License-Identifier: Apache-2.0
// What DNS-SD carries that is the project's own: TXT records both ways, a receiver's record,
// the key's id, and host_or_name's rule. The daemon itself is tests/discovery's.
#include <gtest/gtest.h>

#include "dnssd/names.hpp"
#include "rdmavideo/auth.hpp"
#include "rdmavideo/discovery.hpp"

namespace rdmavideo::discovery {
namespace {

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(Txt, GoesOutAsKeyValueStringsAndComesBack) {
  const Txt txt{{"txtvers", "1"}, {"flag", ""}, {"k", "a=b"}};
  auto strings = txt_strings(txt);
  ASSERT_TRUE(strings) << strings.error().message();
  EXPECT_EQ(*strings, (std::vector<std::string>{"txtvers=1", "flag", "k=a=b"}));
  EXPECT_EQ(parse_txt(*strings), txt);
  // The first of a repeated key counts; an empty key is skipped (RFC 6763 6.4).
  auto parsed = parse_txt({"a=1", "=x", "a=2", "b"});
  EXPECT_EQ(parsed, (Txt{{"a", "1"}, {"b", ""}}));
  EXPECT_EQ(txt_value(parsed, "a"), "1");
  EXPECT_EQ(txt_value(parsed, "c"), std::nullopt);
}

TEST(Txt, RefusesWhatDnsSdCannotCarry) {
  auto long_one = txt_strings({{"k", std::string(254, 'v')}});
  ASSERT_FALSE(long_one);
  EXPECT_TRUE(contains(long_one.error().message(), "256 bytes, more than 255"))
      << long_one.error().message();
  for (const char* key : {"", "a=b", "a\nb"}) {
    SCOPED_TRACE(key);
    auto bad = txt_strings({{key, "v"}});
    ASSERT_FALSE(bad);
    EXPECT_TRUE(contains(bad.error().message(), "printable ASCII without '='"))
        << bad.error().message();
  }
}

TEST(ReceiverRecord, RoundTripsAndNamesWhatIsWrong) {
  ReceiverRecord r;
  r.protocol = 3;
  r.transports = {"tcp", "verbs"};
  r.key_required = true;
  r.key_id = "0123456789abcdef";
  r.streams_free = 3;
  r.max_streams = 4;
  r.version = "0.5.0";
  const Txt txt = receiver_txt(r);
  EXPECT_EQ(txt.front(), (std::pair<std::string, std::string>{"txtvers", "1"}));
  auto back = parse_receiver_txt(txt);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->protocol, 3);
  EXPECT_EQ(back->transports, r.transports);
  EXPECT_TRUE(back->key_required);
  EXPECT_EQ(back->key_id, r.key_id);
  EXPECT_EQ(back->streams_free, 3u);
  EXPECT_EQ(back->max_streams, 4u);
  EXPECT_EQ(back->version, "0.5.0");

  ReceiverRecord open;
  open.protocol = 3;
  open.key_id = "ignored";  // no key: no id
  EXPECT_EQ(txt_value(receiver_txt(open), "key"), "none");
  EXPECT_EQ(txt_value(receiver_txt(open), "key_id"), std::nullopt);

  struct Bad {
    Txt txt;
    const char* says;
  };
  for (const Bad& b :
       {Bad{{{"streams_free", "1"}, {"max_streams", "1"}}, "TXT has no \"proto\""},
        Bad{{{"proto", "x3"}, {"streams_free", "1"}, {"max_streams", "1"}},
            "\"proto=x3\" is not a number"},
        Bad{{{"proto", "3"}, {"key", "maybe"}, {"streams_free", "1"}}, "\"key=maybe\" is neither"},
        Bad{{{"proto", "3"}, {"streams_free", "-1"}, {"max_streams", "1"}},
            "\"streams_free=-1\""}}) {
    SCOPED_TRACE(b.says);
    auto bad = parse_receiver_txt(b.txt);
    ASSERT_FALSE(bad);
    EXPECT_TRUE(contains(bad.error().message(), b.says)) << bad.error().message();
  }
}

// A key's id names the key without showing it: the same key, the same id; another key, another.
TEST(KeyId, IsStableAndTellsKeysApart) {
  auto bytes = [](char c) { return std::vector<std::byte>(32, std::byte(c)); };
  const auth::SharedKey a(bytes('a')), a2(bytes('a')), b(bytes('b'));
  const std::string id = auth::key_id(a);
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(auth::key_id(a2), id);
  EXPECT_NE(auth::key_id(b), id);
}

TEST(HostOrName, AnAddressOrAKnownHostStaysOneElseItIsAName) {
  auto address = host_or_name("127.0.0.1", 5000);
  EXPECT_FALSE(address.named);
  EXPECT_EQ(address.port, 5000);
  EXPECT_FALSE(host_or_name("localhost", 5000).named);
  if (available()) {
    auto name = host_or_name("studio recorder", 5000);
    EXPECT_TRUE(name.named);
    EXPECT_EQ(name.port, 0);
    EXPECT_EQ(name.host, "studio recorder");
  }
}

// A full name as DNS writes it (unicast answers, Windows' API) read back as people name it.
TEST(InstanceLabel, IsTheFirstLabelWithItsEscapesUndone) {
  EXPECT_EQ(instance_label("studio\\032recorder._rdmavideo._tcp.local"), "studio recorder");
  EXPECT_EQ(instance_label("studio recorder._rdmavideo._tcp.local"), "studio recorder");
  EXPECT_EQ(instance_label("rack\\.2\\\\b._nmos-register._tcp.studio.example"), "rack.2\\b");
  EXPECT_EQ(instance_label("caf\\195\\169._rdmavideo._tcp.local"), "caf\xc3\xa9");
  EXPECT_EQ(instance_label("plain"), "plain");
}

}  // namespace
}  // namespace rdmavideo::discovery
