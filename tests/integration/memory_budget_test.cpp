// SPDX-License-Identifier: Apache-2.0
// --max-memory covers what the receiver holds for a stream beside its ring: a recording's
// encoder (its frames, planes, coefficients and threads), the converted copy it is given, the
// packets the muxer keeps for a fragment, and a composite tile's scaler (its scratch picture,
// the copy of a source libswscale would read past, its own lines). A stream whose encoder
// would not fit is refused at its StreamStart, naming the memory; an encoder that fits with
// fewer threads gets fewer; and the receiver's peak resident memory stays within the budget
// plus the allowance docs/operations.md states for the program itself. Peak memory is a
// measurement: these run alone, in the optimised build (label timing).
#include <gtest/gtest.h>

#include <thread>

#include "output_checks.hpp"
#include "proc_watch.hpp"
#include "process.hpp"
#include "raw_peer.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

// What docs/operations.md allows beyond --max-memory: the program, its libraries (FFmpeg's
// among them), heap and threads' stacks.
constexpr long kAllowanceMiB = 96;

// The receiver's peak resident memory in MiB so far; then it is stopped, its log whole.
long peak_then_stop(Receiver& recv) {
  const long peak = status_field(recv.process().pid(), "VmHWM") / 1024;
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  return peak;
}

// Once the sender ended its stream.
bool stream_ended(Receiver& recv) {
  return recv.process().wait_for_stderr("stream 1 the sender ended it", 60s).has_value();
}

// The case, smaller: 16000x16000 NV12 into the project's ProRes encoder held 3.7 GB
// under --max-memory 1G, as only the ring was counted. At 3840x2160 a ring of eight 12 MiB
// slots fits 200 MiB; the encoder's 10-bit planes, coefficients and a second of packets
// (about 300 MiB) do not: the stream is refused before anything is encoded.
TEST(MemoryBudget, ARecordingWhoseEncoderDoesNotFitIsRefusedNamingTheMemory) {
  TempDir dir;
  const auto out = dir / "testsrc.mov";
  Receiver recv(dir, {"--serve", "--max-memory", "200M", "--output", (dir / "{name}.mov").string(),
                      "--encoder", "rdmavideo_prores"});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "-s", "3840x2160",
                "--pix-fmt", "nv12", "--frames", "30"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 1) << send.stderr_text();
  const std::string why = send.stderr_text();
  EXPECT_NE(why.find("stream 1's recording of 3840x2160 nv12 (1 encoder thread) needs"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("beyond the receiver's memory budget of 200 MiB"), std::string::npos) << why;
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing was recorded";
  const long peak = peak_then_stop(recv);
  std::cerr << "peak resident " << peak << " MiB under --max-memory 200M\n";
  EXPECT_LE(peak, 200 + kAllowanceMiB);
}

// prores_aw holds about 26 bytes a pixel for each of its frame threads: at 3840x2160, 216 MB
// a thread beside 200 MB whatever their number (the frame copied and converted, a second of
// packets). 560 MiB holds the ring (eight slots of 12 MiB) and one thread, not two: the
// encoder gets one, says so, and every frame is recorded within the budget.
TEST(MemoryBudget, AnEncoderGetsTheThreadsTheBudgetHolds) {
  TempDir dir;
  const auto out = dir / "testsrc.mov";
  Receiver recv(dir, {"--serve", "--max-memory", "560M", "--output", (dir / "{name}.mov").string(),
                      "--codec", "prores_hq", "--encoder", "prores_aw"});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "-s", "3840x2160",
                "--pix-fmt", "nv12", "-r", "30", "--frames", "45"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_TRUE(stream_ended(recv)) << recv.process().stderr_text();
  const long peak = peak_then_stop(recv);
  const std::string log = recv.process().stderr_text();
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_NE(log.find("the recording's encoder gets 1 of "), std::string::npos) << log;
  }
  EXPECT_EQ(decoded_frames(out), 45);
  std::cerr << "peak resident " << peak << " MiB under --max-memory 560M\n";
  EXPECT_LE(peak, 560 + kAllowanceMiB);
}

// A tile whose stream changed to 8192x8192 RGBA held 889 MiB under --max-memory 600M while the
// budget counted 537 MB: the scaler's scratch and the copy made for libswscale's over-read
// were not counted. Now they are: the change is refused (its frames are not shown, and the
// tile says why once), and the receiver stays within the budget.
TEST(MemoryBudget, ATileCountsItsScalerAndStaysWithinTheBudget) {
  TempDir dir;
  Receiver recv(dir, {"--serve", "--composite", "grid", "--canvas", "640x360@30", "--ring", "2",
                      "--max-memory", "600M"});
  auto huge = *proto::make_stream_start(PixelFormat::rgba, 8192, 8192, {30, 1});
  huge.stream_id = small_format().stream_id;
  {
    MediaPeer peer(recv.port());
    peer.play(0, 0.5, 0);
    peer.restart(huge);    // a ring of two 256 MiB slots fits 600 MiB
    peer.play(0, 0.2, 0);  // six frames of 256 MiB
    peer.end();
  }
  ASSERT_TRUE(stream_ended(recv)) << recv.process().stderr_text();
  const long peak = peak_then_stop(recv);
  const std::string log = recv.process().stderr_text();
  EXPECT_NE(log.find("stream 1's tile of the composite (its format changed) needs"),
            std::string::npos)
      << log;
  std::cerr << "peak resident " << peak << " MiB under --max-memory 600M\n";
  EXPECT_LE(peak, 600 + kAllowanceMiB);
}

}  // namespace
}  // namespace rdmavideo::testing
