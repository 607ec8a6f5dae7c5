// SPDX-License-Identifier: Apache-2.0
// The endpoint and transport-name parsers the command lines and GStreamer properties use.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "rdmavideo/transport.hpp"

namespace rdmavideo {
namespace {

::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

void expect_endpoint(std::string_view text, bool allow_port_zero, std::string_view host,
                     uint16_t port) {
  SCOPED_TRACE(text);
  auto endpoint = parse_endpoint(text, allow_port_zero);
  ASSERT_TRUE(endpoint) << endpoint.error().message();
  EXPECT_EQ(endpoint->host, host);
  EXPECT_EQ(endpoint->port, port);
}

std::string rejection(std::string_view text, bool allow_port_zero) {
  auto endpoint = parse_endpoint(text, allow_port_zero);
  if (endpoint) {
    ADD_FAILURE() << "\"" << text << "\" parsed as " << endpoint->to_string();
    return {};
  }
  EXPECT_EQ(endpoint.error().code(), ErrorCode::invalid_argument);
  return endpoint.error().message();
}

TEST(ParseEndpoint, AcceptsHostAndPort) {
  expect_endpoint("127.0.0.1:5000", false, "127.0.0.1", 5000);
  expect_endpoint("recorder.local:1", false, "recorder.local", 1);
  expect_endpoint("h:65535", false, "h", 65535);
  expect_endpoint("0.0.0.0:7000", true, "0.0.0.0", 7000);
}

TEST(ParseEndpoint, AcceptsBracketedIpv6) {
  expect_endpoint("[::1]:80", false, "::1", 80);
  expect_endpoint("[fe80::1%eth0]:5000", false, "fe80::1%eth0", 5000);
  expect_endpoint("[::]:0", true, "::", 0);
}

TEST(ParseEndpoint, PortZeroOnlyWhenAllowed) {
  expect_endpoint("host:0", true, "host", 0);
  const std::string error = rejection("host:0", false);
  EXPECT_TRUE(contains(error, "host:0"));
  EXPECT_TRUE(contains(error, "port \"0\""));
  EXPECT_TRUE(contains(error, "1..65535"));
}

TEST(ParseEndpoint, RejectsMissingPort) {
  EXPECT_TRUE(contains(rejection("nohost", false), "\"nohost\" is not HOST:PORT"));
  EXPECT_TRUE(contains(rejection("nohost", true), "nohost"));
  EXPECT_TRUE(contains(rejection("", false), "HOST:PORT"));
  EXPECT_TRUE(contains(rejection("host:", false), "port \"\""));
}

TEST(ParseEndpoint, RejectsEmptyHost) {
  EXPECT_TRUE(contains(rejection(":80", false), "host is empty"));
  EXPECT_TRUE(contains(rejection("[]:80", false), "host is empty"));
}

TEST(ParseEndpoint, RejectsPortOutOfRange) {
  EXPECT_TRUE(contains(rejection("h:99999", false), "port \"99999\""));
  EXPECT_TRUE(contains(rejection("h:65536", true), "port \"65536\""));
  EXPECT_TRUE(contains(rejection("h:4294967296", false), "port \"4294967296\""));
}

TEST(ParseEndpoint, RejectsPortNotANumber) {
  for (std::string_view text : {"h:abc", "h:-1", "h:80x", "h:+80", "h: 80", "h:0x50"}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(contains(rejection(text, true), "port"));
  }
}

TEST(ParseEndpoint, RejectsMalformedBrackets) {
  for (std::string_view text : {"[::1]", "[::1]80", "[::1", "[::1]:"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(rejection(text, false).empty());
  }
}

TEST(ParseEndpoint, ToStringRoundTrips) {
  for (std::string_view text : {"127.0.0.1:5000", "[::1]:80", "host.example:65535"}) {
    SCOPED_TRACE(text);
    auto endpoint = parse_endpoint(text, false);
    ASSERT_TRUE(endpoint) << endpoint.error().message();
    EXPECT_EQ(endpoint->to_string(), text);
  }
}

TEST(ParseTransport, KnowsEveryKind) {
  EXPECT_EQ(parse_transport("auto"), TransportKind::automatic);
  EXPECT_EQ(parse_transport("tcp"), TransportKind::tcp);
  EXPECT_EQ(parse_transport("verbs"), TransportKind::verbs);
  for (TransportKind kind : {TransportKind::automatic, TransportKind::tcp, TransportKind::verbs}) {
    EXPECT_EQ(parse_transport(to_string(kind)), kind);
  }
}

TEST(ParseTransport, RejectsUnknownNames) {
  for (std::string_view text : {"", "TCP", "rdma", "automatic", "tcp ", "ib"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_transport(text), std::nullopt);
  }
}

// A fan-out's receivers from one setting: commas, spaces around each, empty entries skipped;
// a bad entry is named with the whole list; none, and more than kMaxDestinations, refused.
TEST(ParseEndpoints, ReadsAListAndNamesTheBadEntry) {
  auto two = parse_endpoints(" rec1:5000 ,, [::1]:5001 ");
  ASSERT_TRUE(two) << two.error().message();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].host, "rec1");
  EXPECT_EQ((*two)[0].port, 5000);
  EXPECT_EQ((*two)[1].host, "::1");
  EXPECT_EQ((*two)[1].port, 5001);
  auto bad = parse_endpoints("rec1:5000,rec2:99999");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("destinations \"rec1:5000,rec2:99999\""), std::string::npos)
      << bad.error().message();
  auto named = parse_endpoints("rec1:5000, studio recorder");
  ASSERT_TRUE(named) << named.error().message();
  ASSERT_EQ(named->size(), 2u);
  EXPECT_FALSE((*named)[0].named);
  EXPECT_TRUE((*named)[1].named);
  EXPECT_EQ((*named)[1].host, "studio recorder");
  auto none = parse_endpoints(" , ");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("destinations is empty"), std::string::npos);
  std::string many;
  for (size_t i = 0; i <= kMaxDestinations; ++i) many += "r:" + std::to_string(1000 + i) + ",";
  auto too_many = parse_endpoints(many);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message().find("65 receivers; at most 64"), std::string::npos)
      << too_many.error().message();
}

// Where a sender connects: an address ends in ":PORT" (digits); anything else is a receiver's
// name, found by DNS-SD at connect, and shown as it was given.
TEST(ParseDestination, TakesAnAddressOrAReceiversName) {
  auto address = parse_destination("rec1:5000");
  ASSERT_TRUE(address) << address.error().message();
  EXPECT_FALSE(address->named);
  EXPECT_EQ(address->port, 5000);
  auto v6 = parse_destination("[::1]:7");
  ASSERT_TRUE(v6) << v6.error().message();
  EXPECT_EQ(v6->host, "::1");
  for (const char* name : {"studio-recorder", "Studio: A", "recorder #2", "rec:12a"}) {
    SCOPED_TRACE(name);
    auto named = parse_destination(name);
    ASSERT_TRUE(named) << named.error().message();
    EXPECT_TRUE(named->named);
    EXPECT_EQ(named->host, name);
    EXPECT_EQ(named->port, 0);
    EXPECT_EQ(named->to_string(), name);
  }
  auto port_zero = parse_destination("rec:0");
  ASSERT_FALSE(port_zero);
  EXPECT_NE(port_zero.error().message().find("port \"0\" out of range"), std::string::npos)
      << port_zero.error().message();
  auto no_port = parse_destination("10.0.0.2");  // an address, not a name
  ASSERT_FALSE(no_port);
  EXPECT_NE(no_port.error().message().find("is not HOST:PORT"), std::string::npos)
      << no_port.error().message();
  auto unclosed = parse_destination("[::1");
  ASSERT_FALSE(unclosed);
  EXPECT_NE(unclosed.error().message().find("is not [ADDRESS]:PORT"), std::string::npos);
  auto empty = parse_destination("");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("name is empty"), std::string::npos);
  auto too_long = parse_destination(std::string(64, 'n'));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message().find("at most 63"), std::string::npos)
      << too_long.error().message();
}

}  // namespace
}  // namespace rdmavideo
