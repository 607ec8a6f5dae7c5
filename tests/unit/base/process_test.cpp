// SPDX-License-Identifier: Apache-2.0
// rdmavideo/platform/process.hpp on both systems (the Windows build runs this under wine): a
// stop request sets the flag the program watches (SIGINT on Linux; the console's CTRL_C_EVENT
// on Windows, where a console is attached), and the pacing timer never wakes early.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "rdmavideo/platform/process.hpp"

#ifdef _WIN32
#include <windows.h>
#endif

namespace rdmavideo::platform {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};

TEST(StopRequest, SetsTheFlagTheProgramWatches) {
  on_stop_request(&g_stop);
#ifdef _WIN32
  if (!GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)) {
    GTEST_SKIP() << "no console to send CTRL_C_EVENT to (GenerateConsoleCtrlEvent: "
                 << GetLastError() << ")";
  }
#else
  std::raise(SIGINT);
#endif
  // Windows calls the handler on a thread of its own.
  const auto give_up = Clock::now() + 5s;
  while (!g_stop && Clock::now() < give_up) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(g_stop);
}

TEST(SleepUntil, NeverWakesBeforeTheDeadline) {
  for (std::chrono::microseconds span : {0us, 100us, 1000us, 3000us, 17000us}) {
    const auto deadline = Clock::now() + span;
    sleep_until(deadline);
    EXPECT_GE(Clock::now(), deadline) << span.count() << " us";
  }
  sleep_until(Clock::now() - 1s);  // a deadline passed returns at once
}

TEST(DescriptorLimit, IsAtLeastWhatAServerNeeds) { EXPECT_GE(raise_descriptor_limit(), 1024u); }

}  // namespace
}  // namespace rdmavideo::platform
