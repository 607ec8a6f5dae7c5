// SPDX-License-Identifier: Apache-2.0
// The one end-to-end body the TCP and verbs suites share: rdmavideo-send's test pattern, with
// checksums, into an rdmavideo-recv that verifies every frame; both summaries read back and
// held to the same account (every frame arrived and verified, nothing dropped, the bytes the
// frames make, the transport asked for). Each suite adds what is its own (the TCP summary's
// rates, the rxe devices each end went through).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "process.hpp"

namespace rdmavideo::testing {

struct PatternRun {
  nlohmann::json received;  // rdmavideo-recv --stats-json
  nlohmann::json sent;      // rdmavideo-send --stats-json
  std::string send_log, recv_log;
};

/// Starts a verifying receiver over `transport` (its extra flags and where it listens), sends
/// `frames` uyvy422 test pattern frames of `width`x`height` to it with the sender's `extra`
/// flags, and checks the account. Fatal failures end the calling test (ASSERT_NO_FATAL_FAILURE).
inline void run_test_pattern(const TempDir& dir, const std::string& transport, uint32_t width,
                             uint32_t height, int frames, std::chrono::seconds wait,
                             PatternRun& run, const std::string& host = "127.0.0.1") {
  Receiver recv(dir,
                {"--verify", "--quiet", "--transport", transport, "--stats-json",
                 (dir / "recv.json").string()},
                {}, "recv", host);
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--transport", transport,
                "--quiet", "--testsrc", "-s", std::to_string(width) + "x" + std::to_string(height),
                "--pix-fmt", "uyvy422", "--frames", std::to_string(frames), "--checksum",
                "--stats-json", (dir / "send.json").string()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(wait), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(std::chrono::seconds(60)), 0) << recv.process().stderr_text();
  run.received = read_json(dir / "recv.json");
  run.sent = read_json(dir / "send.json");
  run.send_log = send.stderr_text();
  run.recv_log = recv.process().stderr_text();
  const auto& r = run.received;
  const auto& s = run.sent;
  EXPECT_EQ(r["frames"], frames);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["transport"], transport);
  EXPECT_EQ(r["pix_fmt"], "uyvy422");
  EXPECT_EQ(r["width"], width);
  EXPECT_EQ(r["bytes"], uint64_t(frames) * width * height * 2);
  EXPECT_EQ(s["frames"], frames);
  EXPECT_EQ(s["dropped"], 0);
  EXPECT_EQ(s["transport"], transport);
}

}  // namespace rdmavideo::testing
