// SPDX-License-Identifier: Apache-2.0
// Usage and start-up errors: one line on stderr that names what was wrong, and a non-zero
// exit. No sockets are left behind.
#include <gtest/gtest.h>

#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

struct Case {
  const char* name;
  std::vector<std::string> args;  // after the binary
  bool sender;
  int exit_code;
  const char* needle;  // must appear in the one line
};

class CliErrors : public ::testing::TestWithParam<Case> {};

TEST_P(CliErrors, OneLineAndNonZeroExit) {
  const Case& c = GetParam();
  TempDir dir;
  std::vector<std::string> argv{c.sender ? RDMAVIDEO_SEND_BIN : RDMAVIDEO_RECV_BIN};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  Process p(argv, dir / "stderr");
  const auto code = p.wait(20s);
  ASSERT_TRUE(code) << "did not exit";
  EXPECT_EQ(*code, c.exit_code);
  const std::string err = p.stderr_text();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(c.needle), std::string::npos) << err;
}

// A port nothing listens on: bind one, note it, close it.
std::string closed_port() {
  TempDir dir;
  Receiver r(dir, {"--quiet"});
  const std::string address = r.address();
  r.process().signal(SIGKILL);
  r.process().wait();
  return address;
}

std::vector<Case> cases() {
  std::vector<Case> c{
      Case{"ConnectRefused",
           {"--connect", closed_port(), "--testsrc"},
           true,
           1,
           "Connection refused"},
      Case{"UnknownFlag", {"--connect", "127.0.0.1:1", "--testsrc", "--bogus"}, true, 2, "--bogus"},
      Case{"LatenessNotADuration",
           {"--connect", "127.0.0.1:1", "--testsrc", "--realtime", "--max-lateness", "5s"},
           true,
           2,
           "\"5s\" is not MSms or Nf"},
      Case{"LatenessWithoutRealtime",
           {"--connect", "127.0.0.1:1", "--testsrc", "--max-lateness", "3f"},
           true,
           2,
           "--max-lateness requires --realtime"},
      Case{"TraceNotWritable",
           {"--connect", "127.0.0.1:1", "--testsrc", "--trace", "/nonexistent/dir/trace.jsonl"},
           true,
           1,
           "--trace /nonexistent/dir/trace.jsonl"},
      // Said in words, not as a range up to the largest double (308 digits).
      Case{"ZeroDuration",
           {"--connect", "127.0.0.1:1", "--testsrc", "--duration", "0"},
           true,
           2,
           "--duration: must be more than 0 seconds, not 0"},
      Case{"UnknownPixFmt",
           {"--connect", "127.0.0.1:1", "--testsrc", "--pix-fmt", "yuv9000"},
           true,
           2,
           "--pix-fmt \"yuv9000\" unknown"},
      Case{"ZeroSize",
           {"--connect", "127.0.0.1:1", "--testsrc", "-s", "0x1080"},
           true,
           2,
           "out of range"},
      Case{"HugeSize",
           {"--connect", "127.0.0.1:1", "--testsrc", "-s", "20000x20000"},
           true,
           2,
           "out of range"},
      Case{"BadRate", {"--connect", "127.0.0.1:1", "--testsrc", "-r", "0"}, true, 2, "-r \"0\""},
      Case{"NoSource", {"--connect", "127.0.0.1:1"}, true, 2, "no source"},
      Case{"RealtimeAndNoDrop",
           {"--connect", "127.0.0.1:1", "--testsrc", "--realtime", "--no-drop"},
           true,
           2,
           "excludes"},
      Case{"BadConnectAddress", {"--connect", "127.0.0.1", "--testsrc"}, true, 2, "HOST:PORT"},
      Case{"BadTransport",
           {"--connect", "127.0.0.1:1", "--testsrc", "--transport", "udp"},
           true,
           2,
           "--transport \"udp\" unknown"},
      Case{"RecvBadRing", {"--listen", "127.0.0.1:0", "--ring", "0"}, false, 2, "--ring"},
      Case{"RecvMissingListen", {"--verify"}, false, 2, "--listen"},
  };
#ifdef RDMAVIDEO_HAVE_FFMPEG
  c.insert(c.end(),
           {
               Case{"RecvUnknownContainer",
                    {"--listen", "127.0.0.1:0", "--output", "x.avi"},
                    false,
                    2,
                    "unknown container extension \".avi\""},
               Case{"RecvUnknownCodec",
                    {"--listen", "127.0.0.1:0", "--output", "x.mov", "--codec", "vp9"},
                    false,
                    2,
                    "--codec \"vp9\" unknown"},
               Case{"RecvEncoderForOtherCodec",
                    {"--listen", "127.0.0.1:0", "--output", "x.mkv", "--encoder", "prores_ks"},
                    false,
                    2,
                    "--encoder prores_ks encodes prores, not ffv1"},
               Case{"RecvOwnProresFor4444",
                    {"--listen", "127.0.0.1:0", "--output", "x.mov", "--codec", "prores_4444",
                     "--encoder", "rdmavideo_prores"},
                    false,
                    2,
                    "--encoder rdmavideo_prores encodes ProRes 422 (--codec prores_proxy, "
                    "prores_lt, prores or prores_hq), not prores_4444: use --encoder prores_aw "
                    "or prores_ks for it"},
               Case{"RecvOwnProresIntoMkv",
                    {"--listen", "127.0.0.1:0", "--output", "x.mkv", "--codec", "prores_hq",
                     "--encoder", "rdmavideo_prores"},
                    false,
                    2,
                    "--encoder rdmavideo_prores writes .mov files, not .mkv (--output x.mkv)"},
               Case{"SendMissingFile",
                    {"--connect", "127.0.0.1:1", "-i", "/nonexistent.mp4"},
                    true,
                    1,
                    "/nonexistent.mp4"},
           });
#else
  c.insert(c.end(), {
                        Case{"RecvEncodedOutput",
                             {"--listen", "127.0.0.1:0", "--output", "x.mov"},
                             false,
                             2,
                             "raw frames only"},
                        Case{"SendFileInput",
                             {"--connect", "127.0.0.1:1", "-i", "/nonexistent.mp4"},
                             true,
                             1,
                             "-i /nonexistent.mp4: this build has no FFmpeg"},
                    });
#endif
  c.push_back(
      Case{"RecvUnresolvableAddress", {"--listen", "256.1.1.1:5000"}, false, 1, "256.1.1.1"});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Cases, CliErrors, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace rdmavideo::testing

namespace rdmavideo::testing {
namespace {

bool host_has_rdma_devices() {
  std::error_code ec;
  return std::filesystem::exists("/sys/class/infiniband", ec) &&
         !std::filesystem::is_empty("/sys/class/infiniband", ec);
}

// Without an RDMA device, asking for verbs is a clear one-line error, on both ends.
TEST(CliErrorsVerbs, NoRdmaDeviceSaysSoPlainly) {
  if (host_has_rdma_devices()) GTEST_SKIP() << "this machine has RDMA devices";
  TempDir dir;
  Process recv({RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0", "--transport", "verbs"},
               dir / "recv.stderr");
  ASSERT_EQ(recv.wait(20s), 1);
  Process send(
      {RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:5000", "--transport", "verbs", "--testsrc"},
      dir / "send.stderr");
  ASSERT_EQ(send.wait(20s), 1);
  for (const auto& err : {recv.stderr_text(), send.stderr_text()}) {
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("no RDMA device on this machine"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace rdmavideo::testing
