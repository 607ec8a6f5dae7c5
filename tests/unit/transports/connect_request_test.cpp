// SPDX-License-Identifier: Apache-2.0
// The rdma_cm private data a verbs sender connects with, checked before a receiver allocates
// anything for the peer. Pure encode/decode: no device needed.
#include <gtest/gtest.h>

#include "verbs/link.hpp"

namespace rdmavideo::verbs {
namespace {

TEST(ConnectRequest, RoundTrips) {
  ConnectRequest request;
  request.credits_requested = 12;
  const auto bytes = encode(request);
  ASSERT_EQ(bytes.size(), kConnectRequestBytes);
  auto decoded = decode_connect_request(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->magic, proto::kMagic);
  EXPECT_EQ(decoded->min_version, proto::kMinVersion);
  EXPECT_EQ(decoded->max_version, proto::kVersion);
  EXPECT_EQ(decoded->credits_requested, 12u);
}

TEST(ConnectRequest, AcceptsThePaddingIbAndRoceAdd) {
  auto bytes = encode(ConnectRequest{});
  bytes.resize(56);  // RC connect requests carry 56 bytes of private data
  EXPECT_TRUE(decode_connect_request(bytes));
}

TEST(ConnectRequest, RejectsTruncated) {
  auto bytes = encode(ConnectRequest{});
  bytes.resize(10);
  auto decoded = decode_connect_request(bytes);
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().message().find("ConnectRequest truncated: 10 bytes"),
            std::string::npos);
}

TEST(ConnectRequest, NamesAMissingRequest) {
  const std::vector<std::byte> zeros(56, std::byte{0});
  auto decoded = decode_connect_request(zeros);
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().message().find("ConnectRequest missing"), std::string::npos);
}

TEST(ConnectRequest, RejectsBadMagic) {
  auto bytes = encode(ConnectRequest{});
  bytes[0] = std::byte{0xef};
  auto decoded = decode_connect_request(bytes);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), ErrorCode::protocol);
  EXPECT_NE(decoded.error().message().find("ConnectRequest.magic 0x465644ef is not RDVF"),
            std::string::npos)
      << decoded.error().message();
}

TEST(ConnectRequest, RejectsVersionsThatDoNotOverlap) {
  for (auto [min, max] : {std::pair<uint16_t, uint16_t>{7, 9}, {0, 0}, {3, 2}}) {
    ConnectRequest request;
    request.min_version = min;
    request.max_version = max;
    auto decoded = decode_connect_request(encode(request));
    ASSERT_FALSE(decoded) << min << ".." << max;
    EXPECT_EQ(decoded.error().code(), ErrorCode::unsupported);
    EXPECT_NE(
        decoded.error().message().find(fmt::format("ConnectRequest versions {}..{}", min, max)),
        std::string::npos);
  }
}

}  // namespace
}  // namespace rdmavideo::verbs
