// SPDX-License-Identifier: Apache-2.0
// TCP sockets behind the platform seam, over loopback: the same assertions on Linux and,
// cross-built, under wine (Winsock). A megabyte in gathered pieces arrives whole and in
// order, a wait with nothing to read ends within its tick, a half-close reads as closed, and a
// refused connect names the address and the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "rdmavideo/platform/net.hpp"

namespace rdmavideo::platform::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Pair {
  UniqueSocket client, server;
};

Pair connected_pair() {
  auto listening = listen("127.0.0.1", 0, 4, "test listener");
  EXPECT_TRUE(listening) << listening.error().message();
  const auto colon = listening->local.rfind(':');
  const auto port = static_cast<uint16_t>(std::stoi(listening->local.substr(colon + 1)));
  EXPECT_EQ(listening->local.substr(0, colon), "127.0.0.1");
  auto client = connect("127.0.0.1", port, 2s, "test peer");
  EXPECT_TRUE(client) << client.error().message();
  EXPECT_EQ(wait(listening->socket.get(), false, 2s), 1);
  auto accepted = accept(listening->socket.get(), "test listener");
  EXPECT_TRUE(accepted) << accepted.error().message();
  EXPECT_EQ(accepted->peer.rfind("127.0.0.1:", 0), 0u) << accepted->peer;
  EXPECT_TRUE(configure(client->get(), 50ms));
  EXPECT_TRUE(configure(accepted->socket.get(), 50ms));
  return {std::move(*client), std::move(accepted->socket)};
}

TEST(Net, AMegabyteInGatheredPiecesArrivesWholeAndInOrder) {
  Pair p = connected_pair();
  std::vector<std::byte> header(24), payload(size_t{1} << 20);
  for (size_t i = 0; i < header.size(); ++i) header[i] = std::byte(0xa0 + i);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 7 + i / 4096);
  std::thread sender([&] {
    std::vector<Piece> pieces{{header.data(), header.size()}, {payload.data(), payload.size()}};
    size_t first = 0;
    while (first < pieces.size()) {
      const Transfer t = send(p.client.get(), std::span(pieces).subspan(first), 50ms);
      ASSERT_EQ(t.error, 0);
      size_t left = t.bytes;
      while (first < pieces.size() && left >= pieces[first].size) left -= pieces[first++].size;
      if (first < pieces.size()) {
        pieces[first].data = static_cast<const std::byte*>(pieces[first].data) + left;
        pieces[first].size -= left;
      }
    }
  });
  std::vector<std::byte> got(header.size() + payload.size());
  size_t done = 0;
  const auto deadline = Clock::now() + 10s;
  while (done < got.size() && Clock::now() < deadline) {
    const Transfer t = receive(p.server.get(), std::span(got).subspan(done), 50ms);
    ASSERT_FALSE(t.closed);
    ASSERT_EQ(t.error, 0);
    done += t.bytes;
  }
  sender.join();
  ASSERT_EQ(done, got.size());
  EXPECT_TRUE(std::equal(header.begin(), header.end(), got.begin()));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), got.begin() + 24));
}

TEST(Net, AReceiveWithNothingToReadEndsWithinItsTick) {
  Pair p = connected_pair();
  std::vector<std::byte> buffer(64);
  const auto start = Clock::now();
  const Transfer t = receive(p.server.get(), buffer, 50ms);
  const auto took = Clock::now() - start;
  EXPECT_TRUE(t.waited);
  EXPECT_EQ(t.bytes, 0u);
  EXPECT_LT(took, 1s);
  EXPECT_TRUE(receive_now(p.server.get(), buffer).waited);
}

TEST(Net, AHalfCloseReadsAsClosedAfterTheLastBytes) {
  Pair p = connected_pair();
  const std::byte last[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  const Piece piece{last, sizeof last};
  ASSERT_EQ(send(p.client.get(), std::span(&piece, 1), 1s).bytes, 3u);
  shutdown(p.client.get(), false);
  std::vector<std::byte> buffer(3);
  Transfer t{};
  for (int i = 0; i < 40 && t.bytes == 0; ++i) t = receive(p.server.get(), buffer, 50ms);
  EXPECT_EQ(t.bytes, 3u);
  for (int i = 0; i < 40 && !t.closed; ++i) t = receive(p.server.get(), buffer, 50ms);
  EXPECT_TRUE(t.closed);
}

TEST(Net, ARefusedConnectNamesTheAddressAndWhy) {
  // A port just given back by a listener is one nothing listens on.
  uint16_t port = 0;
  {
    auto listening = listen("127.0.0.1", 0, 1, "probe");
    ASSERT_TRUE(listening);
    port =
        static_cast<uint16_t>(std::stoi(listening->local.substr(listening->local.rfind(':') + 1)));
  }
  auto refused = connect("127.0.0.1", port, 2s, "127.0.0.1:" + std::to_string(port));
  ASSERT_FALSE(refused);
  const std::string& said = refused.error().message();
  EXPECT_EQ(said.rfind("connect to 127.0.0.1:" + std::to_string(port) + " failed: 127.0.0.1:", 0),
            0u)
      << said;
}

}  // namespace
}  // namespace rdmavideo::platform::net
