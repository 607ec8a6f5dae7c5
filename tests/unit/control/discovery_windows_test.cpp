// SPDX-License-Identifier: Apache-2.0
// DNS-SD on Windows: what its API hands back, read into the project's types (records and an
// instance built here as the API builds them), and the calls themselves where this Windows
// has them (a round trip: advertised, browsed, found) or, where it has not (wine), the error
// that names the missing call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "dnssd/windows_records.hpp"
#include "rdmavideo/discovery.hpp"

namespace rdmavideo::discovery {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

DNS_RECORDW ptr(const wchar_t* owner, wchar_t* target) {
  DNS_RECORDW r{};
  r.pName = const_cast<wchar_t*>(owner);
  r.wType = DNS_TYPE_PTR;
  r.Data.PTR.pNameHost = target;
  return r;
}

TEST(WindowsRecords, ABrowseAnswerNamesEachInstanceOfItsTypeOnce) {
  wchar_t studio[] = L"studio recorder._rdmavideo._tcp.local",
          again[] = L"studio recorder._rdmavideo._tcp.local.",
          rack[] = L"rack 2._RDMAVIDEO._tcp.local", other[] = L"cam._rdmavideo-send._tcp.local";
  DNS_RECORDW records[5] = {ptr(L"_rdmavideo._tcp.local", studio),
                            ptr(L"_rdmavideo._tcp.local", again),
                            ptr(L"_rdmavideo-send._tcp.local", other),
                            {},
                            ptr(L"_rdmavideo._tcp.local", rack)};
  records[3].wType = DNS_TYPE_SRV;  // answers carry more than PTRs: only PTRs name instances
  records[3].pName = studio;
  for (int i = 0; i < 4; ++i) records[i].pNext = &records[i + 1];
  EXPECT_EQ(windows::instances_in(records, kReceiverType),
            (std::vector<std::string>{"studio recorder._rdmavideo._tcp.local",
                                      "rack 2._RDMAVIDEO._tcp.local"}));
  EXPECT_EQ(windows::instances_in(records, kSenderType),
            (std::vector<std::string>{"cam._rdmavideo-send._tcp.local"}));
  EXPECT_TRUE(windows::instances_in(nullptr, kReceiverType).empty());
}

TEST(WindowsRecords, AResolvedInstanceIsAServiceWithItsRecord) {
  ReceiverRecord r;
  r.protocol = 3;
  r.transports = {"tcp"};
  r.key_required = true;
  r.key_id = "0123456789abcdef";
  r.streams_free = 2;
  r.max_streams = 4;
  r.version = "0.5.0";
  std::vector<std::wstring> keys, values;
  for (const auto& [k, v] : receiver_txt(r)) {
    keys.push_back(windows::wide(k));
    values.push_back(windows::wide(v));
  }
  std::vector<PWSTR> key_ptrs, value_ptrs;
  for (size_t i = 0; i < keys.size(); ++i) {
    key_ptrs.push_back(keys[i].data());
    value_ptrs.push_back(values[i].data());
  }
  wchar_t name[] = L"studio\\032r\\195\\169corder._rdmavideo._tcp.local", host[] = L"rec-1.local";
  IP4_ADDRESS v4 = 0;
  const uint8_t bytes[4] = {10, 0, 0, 2};  // as on the wire: network order
  std::memcpy(&v4, bytes, 4);
  DNS_SERVICE_INSTANCE instance{};
  instance.pszInstanceName = name;
  instance.pszHostName = host;
  instance.ip4Address = &v4;
  instance.wPort = 5000;
  instance.dwPropertyCount = static_cast<DWORD>(keys.size());
  instance.keys = key_ptrs.data();
  instance.values = value_ptrs.data();
  const Service s = windows::service_of(instance, kReceiverType);
  EXPECT_EQ(s.name,
            "studio r\xc3\xa9"
            "corder");
  EXPECT_EQ(s.host, "rec-1.local");
  EXPECT_EQ(s.address, "10.0.0.2");
  EXPECT_EQ(s.port, 5000);
  EXPECT_EQ(s.endpoint().host, "10.0.0.2");
  auto back = parse_receiver_txt(s.txt);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->key_id, r.key_id);
  EXPECT_EQ(back->streams_free, 2u);
  EXPECT_EQ(back->transports, r.transports);

  // Only an IPv6 address: written out in full.
  IP6_ADDRESS v6{};
  const uint8_t six[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::memcpy(v6.IP6Byte, six, 16);
  instance.ip4Address = nullptr;
  instance.ip6Address = &v6;
  EXPECT_EQ(windows::service_of(instance, kReceiverType).address, "2001:db8:0:0:0:0:0:1");
}

TEST(WindowsDnsSd, RoundTripWhereTheApiIsElseTheMissingCallIsNamed) {
  if (!available()) {
    // Wine, or a Windows older than 10 1809: each call says what is missing, and nothing
    // else is refused.
    auto browsed = browse(kReceiverType, 200ms);
    ASSERT_FALSE(browsed);
    EXPECT_EQ(browsed.error().code(), ErrorCode::unsupported);
    EXPECT_TRUE(contains(browsed.error().message(), "dnsapi.dll has no DnsService"))
        << browsed.error().message();
    auto found = find("studio recorder", kReceiverType, 200ms);
    ASSERT_FALSE(found);
    EXPECT_TRUE(contains(found.error().message(), "find \"studio recorder\""))
        << found.error().message();
    auto advertised = Advertiser::start({"studio recorder", kReceiverType, 5000, {}});
    ASSERT_FALSE(advertised);
    EXPECT_TRUE(contains(advertised.error().message(), "Windows 10 1809"))
        << advertised.error().message();
    EXPECT_FALSE(host_or_name("127.0.0.1", 5000).named);
    return;
  }
  // A real Windows: advertised, then seen by a browse and found by name.
  const std::string name = "rdmavideo test " + std::to_string(GetCurrentProcessId());
  auto advertised = Advertiser::start({name, kReceiverType, 5123, {{"txtvers", "1"}}});
  ASSERT_TRUE(advertised) << advertised.error().message();
  auto found = find(name, kReceiverType, 5000ms);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->port, 5123);
  EXPECT_EQ(txt_value(found->txt, "txtvers"), "1");
  auto browsed = browse(kReceiverType, 3000ms);
  ASSERT_TRUE(browsed) << browsed.error().message();
  EXPECT_TRUE(std::any_of(browsed->begin(), browsed->end(),
                          [&](const Service& s) { return s.name == name; }));
}

}  // namespace
}  // namespace rdmavideo::discovery
