// SPDX-License-Identifier: Apache-2.0
// rdmasink and rdmasrc as users run them: gst-launch-1.0 processes over 127.0.0.1 TCP,
// against each other (frames written by filesink compared byte for byte with videotestsrc's
// own output) and against the command-line peers (rdmavideo-send into rdmasrc verify=true,
// rdmasink checksum=true into rdmavideo-recv --verify); and gst-inspect-1.0 on the plugin.
// Every child has a deadline, so a hang fails the test instead of stalling CI.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <regex>

#include "gst_test_support.hpp"
#include "process.hpp"
#include "rdmavideo/auth.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

class GstLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    init_gstreamer();  // also sets the environment the children inherit
    if (std::string(RDMAVIDEO_GST_LAUNCH).empty())
      GTEST_SKIP() << "gst-launch-1.0 is not installed";
    if (std::string(RDMAVIDEO_GST_INSPECT).empty())
      GTEST_SKIP() << "gst-inspect-1.0 is not installed";
    UniqueObject<GstElementFactory> factory(gst_element_factory_find("videotestsrc"));
    if (!factory) GTEST_SKIP() << "videotestsrc (gst-plugins-base) is not installed";
  }
  static std::vector<std::string> launch(const std::string& pipeline,
                                         const std::vector<std::string>& flags = {}) {
    return gst_launch_argv(pipeline, flags);
  }
};

std::string caps_string(const std::string& format, int width, int height, int fps) {
  return "video/x-raw,format=" + format + ",width=" + std::to_string(width) +
         ",height=" + std::to_string(height) + ",framerate=" + std::to_string(fps) + "/1";
}

/// Where two files of whole frames first differ ("frame 12 byte 3456"), or nothing.
std::optional<std::string> compare_frames(const std::filesystem::path& got_path,
                                          const std::filesystem::path& want_path,
                                          size_t frame_bytes) {
  const auto got_size = std::filesystem::file_size(got_path);
  const auto want_size = std::filesystem::file_size(want_path);
  if (got_size != want_size) {
    return "size " + std::to_string(got_size) + " bytes (" +
           std::to_string(got_size / frame_bytes) + " frames), want " + std::to_string(want_size) +
           " (" + std::to_string(want_size / frame_bytes) + " frames)";
  }
  std::ifstream got(got_path, std::ios::binary);
  std::ifstream want(want_path, std::ios::binary);
  std::vector<char> a(frame_bytes);
  std::vector<char> b(frame_bytes);
  for (size_t frame = 0; frame < want_size / frame_bytes; ++frame) {
    got.read(a.data(), static_cast<std::streamsize>(frame_bytes));
    want.read(b.data(), static_cast<std::streamsize>(frame_bytes));
    if (!got || !want) return "read failed at frame " + std::to_string(frame);
    // memcmp first: the element-wise search is slow in the sanitizer build, and only the
    // frame that differs needs it.
    if (std::memcmp(a.data(), b.data(), frame_bytes) == 0) continue;
    const auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin());
    if (ai != a.end()) {
      return "frame " + std::to_string(frame) + " byte " + std::to_string(ai - a.begin()) +
             " differs";
    }
  }
  return std::nullopt;
}

/// The last "rdmasrc-stats" element message that `gst-launch-1.0 -m` printed.
UniqueStructure stats_from_messages(const std::string& output, const std::string& name) {
  UniqueStructure found;
  std::istringstream lines(output);
  const std::string marker = "(element): " + name;
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(marker);
    if (at == std::string::npos) continue;
    GstStructure* s =
        gst_structure_from_string(line.c_str() + at + std::string("(element): ").size(), nullptr);
    if (s) found.reset(s);
  }
  return found;
}

struct LaunchCase {
  const char* format;
  size_t bytes_per_pixel_x2;  // frame bytes = width * height * this / 2
};

void PrintTo(const LaunchCase& c, std::ostream* os) { *os << c.format; }

class GstLaunchFormats : public GstLaunch, public ::testing::WithParamInterface<LaunchCase> {};

// videotestsrc ! rdmasink in one gst-launch-1.0, rdmasrc ! filesink in another: the file
// is byte for byte what the same videotestsrc writes straight to a file.
TEST_P(GstLaunchFormats, RdmasinkIntoRdmasrcIsByteEqualToVideotestsrc) {
  const LaunchCase c = GetParam();
  constexpr int kFrames = 120;  // two seconds at 60 fps: every frame of the pattern differs
  constexpr int kWidth = 1280;
  constexpr int kHeight = 720;
  const size_t frame_bytes = static_cast<size_t>(kWidth) * kHeight * c.bytes_per_pixel_x2 / 2;
  TempDir dir;
  // A moving pattern, so a repeated or missing frame shows in the bytes.
  const std::string source = "videotestsrc num-buffers=" + std::to_string(kFrames) +
                             " pattern=smpte horizontal-speed=4 ! " +
                             caps_string(c.format, kWidth, kHeight, 60);
  Process reference(
      launch(source + " ! filesink location=" + (dir / "reference.raw").string(), {"-q"}),
      dir / "reference.stderr");
  ASSERT_EQ(reference.wait(120s), 0) << reference.stderr_text();
  ASSERT_EQ(std::filesystem::file_size(dir / "reference.raw"), frame_bytes * kFrames);

  const uint16_t port = free_port();
  const auto recv_stdout = dir / "recv.stdout";
  Process recv(launch("rdmasrc address=127.0.0.1 port=" + std::to_string(port) +
                      " ! filesink location=" + (dir / "out.raw").string()),
               dir / "recv.stderr", Redirect{"", recv_stdout.string(), false, false});
  ASSERT_TRUE(wait_prerolling(recv_stdout, recv)) << read_file(recv_stdout) << recv.stderr_text();
  Process send(
      launch(source + " ! rdmasink host=127.0.0.1 transport=tcp port=" + std::to_string(port),
             {"-q"}),
      dir / "send.stderr");
  const auto sent = send.wait(120s);
  ASSERT_TRUE(sent) << "gst-launch-1.0 (rdmasink) still running after 120 s";
  EXPECT_EQ(*sent, 0) << send.stderr_text();
  const auto received = recv.wait(60s);
  ASSERT_TRUE(received) << "gst-launch-1.0 (rdmasrc) did not end after the sender's EOS";
  ASSERT_EQ(*received, 0) << read_file(recv_stdout) << recv.stderr_text();
  EXPECT_NE(read_file(recv_stdout).find("EOS"), std::string::npos) << read_file(recv_stdout);
  const auto diff = compare_frames(dir / "out.raw", dir / "reference.raw", frame_bytes);
  EXPECT_FALSE(diff) << *diff;
}

INSTANTIATE_TEST_SUITE_P(Formats, GstLaunchFormats,
                         ::testing::Values(LaunchCase{"NV12", 3}, LaunchCase{"UYVY", 4},
                                           LaunchCase{"RGBA", 8}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.format);
                         });

struct InteropCase {
  const char* pix_fmt;  // rdmavideo-send's name
  const char* format;   // GStreamer's
  size_t bytes_per_pixel_x2;
};

void PrintTo(const InteropCase& c, std::ostream* os) { *os << c.pix_fmt; }

class InteropFormats : public GstLaunch, public ::testing::WithParamInterface<InteropCase> {};

// rdmavideo-send --testsrc --checksum into `rdmasrc verify=true`: every frame checks out
// (checksum and test pattern), as the rdmasrc-stats message at EOS reports.
TEST_P(InteropFormats, RdmavideoSendIntoVerifyingRdmasrc) {
  const InteropCase c = GetParam();
  constexpr int kFrames = 120;
  TempDir dir;
  const uint16_t port = free_port();
  const auto recv_stdout = dir / "recv.stdout";
  Process recv(
      launch("rdmasrc address=127.0.0.1 port=" + std::to_string(port) + " verify=true ! fakesink",
             {"-m"}),
      dir / "recv.stderr", Redirect{"", recv_stdout.string(), false, false});
  ASSERT_TRUE(wait_prerolling(recv_stdout, recv)) << read_file(recv_stdout) << recv.stderr_text();
  Process send(
      {RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "--testsrc", "-s",
       "1280x720", "--pix-fmt", c.pix_fmt, "--frames", std::to_string(kFrames), "--checksum",
       "--transport", "tcp", "--quiet", "--stats-json", (dir / "send.json").string()},
      dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  const auto received = recv.wait(60s);
  ASSERT_TRUE(received) << "gst-launch-1.0 (rdmasrc) did not end after the sender's EOS";
  const std::string output = read_file(recv_stdout);
  ASSERT_EQ(*received, 0) << output << recv.stderr_text();

  const auto stats = stats_from_messages(output, "rdmasrc-stats");
  ASSERT_NE(stats, nullptr) << "no rdmasrc-stats message in:\n" << output;
  EXPECT_EQ(u64_field(stats.get(), "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(stats.get(), "bytes"), kFrames * 1280ull * 720 * c.bytes_per_pixel_x2 / 2);
  EXPECT_EQ(u64_field(stats.get(), "checksum-failures"), 0u);
  EXPECT_EQ(u64_field(stats.get(), "dropped"), 0u);
  EXPECT_EQ(string_field(stats.get(), "transport"), "tcp");
  EXPECT_EQ(output.find("failed verification"), std::string::npos) << output;
  EXPECT_EQ(read_json(dir / "send.json")["frames"], kFrames);
}

// `videotestsrc ! rdmasink checksum=true` into rdmavideo-recv --verify --output: the exact
// frame count, no checksum failure, and the written file is videotestsrc's own bytes.
TEST_P(InteropFormats, RdmasinkIntoVerifyingRdmavideoRecv) {
  const InteropCase c = GetParam();
  constexpr int kFrames = 120;
  constexpr int kWidth = 640;
  constexpr int kHeight = 360;
  const size_t frame_bytes = static_cast<size_t>(kWidth) * kHeight * c.bytes_per_pixel_x2 / 2;
  TempDir dir;
  const std::string source = "videotestsrc num-buffers=" + std::to_string(kFrames) +
                             " pattern=smpte horizontal-speed=2 ! " +
                             caps_string(c.format, kWidth, kHeight, 30);
  Process reference(
      launch(source + " ! filesink location=" + (dir / "reference.raw").string(), {"-q"}),
      dir / "reference.stderr");
  ASSERT_EQ(reference.wait(60s), 0) << reference.stderr_text();

  Receiver recv(dir, {"--verify", "--quiet", "--transport", "tcp", "--output",
                      (dir / "out.raw").string(), "--stats-json", (dir / "recv.json").string()});
  Process send(launch(source + " ! rdmasink host=127.0.0.1 port=" + std::to_string(recv.port()) +
                          " transport=tcp checksum=true sync=false stream-name=interop",
                      {"-q"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"], kFrames);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["dropped"], 0);
  EXPECT_EQ(r["transport"], "tcp");
  EXPECT_EQ(r["pix_fmt"], c.pix_fmt);
  EXPECT_EQ(r["width"], kWidth);
  EXPECT_EQ(r["height"], kHeight);
  const auto diff = compare_frames(dir / "out.raw", dir / "reference.raw", frame_bytes);
  EXPECT_FALSE(diff) << *diff;
  // stream-name reaches the receiver in StreamStart.
  EXPECT_NE(recv.process().stderr_text().find("\"interop\"] stream"), std::string::npos)
      << recv.process().stderr_text();
}

INSTANTIATE_TEST_SUITE_P(
    Formats, InteropFormats,
    ::testing::Values(InteropCase{"nv12", "NV12", 3}, InteropCase{"uyvy422", "UYVY", 4},
                      InteropCase{"rgba", "RGBA", 8}, InteropCase{"yuv444p", "Y444", 6},
                      InteropCase{"yuv444p10le", "Y444_10LE", 12}),
    [](const auto& param_info) { return std::string(param_info.param.pix_fmt); });

// Colour both ways: caps' colorimetry goes out in StreamStart (rdmasink) and lands in the
// recording; a sender's --colour comes out as rdmasrc's caps.
TEST_F(GstLaunch, ColorimetryTravelsBothWays) {
  TempDir dir;
  const auto out = dir / "pq.mkv";
  Receiver recv(dir, {"--quiet", "--output", out.string()});
  Process send(
      launch("videotestsrc num-buffers=10 ! video/x-raw,format=Y444_10LE,width=320,height=180,"
             "framerate=30/1,colorimetry=bt2100-pq ! rdmasink host=127.0.0.1 transport=tcp port=" +
                 std::to_string(recv.port()),
             {"-q"}),
      dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const std::string facts = capture(
      "ffprobe -v error -select_streams v:0 -show_entries stream=pix_fmt,color_range,"
      "color_space,color_transfer,color_primaries -of csv=p=0 '" +
      out.string() + "'");
  EXPECT_EQ(facts, "yuv444p10le,tv,bt2020nc,smpte2084,bt2020\n");

  const uint16_t port = free_port();
  const auto recv_stdout = dir / "src.stdout";
  Process src(
      launch("rdmasrc address=127.0.0.1 port=" + std::to_string(port) + " ! fakesink", {"-v"}),
      dir / "src.stderr", Redirect{"", recv_stdout.string(), false, false});
  ASSERT_TRUE(wait_prerolling(recv_stdout, src)) << read_file(recv_stdout) << src.stderr_text();
  Process sender({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "--testsrc",
                  "-s", "320x180", "--pix-fmt", "yuv444p10le", "--colour", "bt2100-hlg", "--frames",
                  "10", "--transport", "tcp", "--quiet"},
                 dir / "sender.stderr");
  ASSERT_EQ(sender.wait(60s), 0) << sender.stderr_text();
  ASSERT_TRUE(src.wait(60s));
  EXPECT_NE(read_file(recv_stdout).find("colorimetry=(string)bt2100-hlg"), std::string::npos)
      << read_file(recv_stdout);
}

// key-file on both elements, against the command-line peers with --key-file: the right key
// streams and verifies both ways; rdmasink without the key is refused by the receiver, and
// gst-launch-1.0 fails saying so.
// rdmasink destinations=A,B: every frame into two rdmavideo-recv --verify, each on its own
// connection, both writing videotestsrc's own bytes.
TEST_F(GstLaunch, RdmasinkDestinationsFanOutIntoTwoVerifyingReceivers) {
  constexpr int kFrames = 60;
  TempDir dir;
  const std::string source = "videotestsrc num-buffers=" + std::to_string(kFrames) +
                             " pattern=smpte ! " + caps_string("UYVY", 320, 240, 30);
  Process reference(
      launch(source + " ! filesink location=" + (dir / "reference.raw").string(), {"-q"}),
      dir / "reference.stderr");
  ASSERT_EQ(reference.wait(60s), 0) << reference.stderr_text();
  std::vector<std::unique_ptr<Receiver>> recv;
  for (const char* tag : {"a", "b"}) {
    recv.push_back(std::make_unique<Receiver>(
        dir,
        std::vector<std::string>{"--verify", "--quiet", "--transport", "tcp", "--output",
                                 (dir / (std::string(tag) + ".raw")).string(), "--stats-json",
                                 (dir / (std::string(tag) + ".json")).string()},
        Redirect{}, tag));
  }
  Process send(launch(source + " ! rdmasink destinations=" + recv[0]->address() + "," +
                          recv[1]->address() + " transport=tcp checksum=true sync=false",
                      {"-q"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  for (const char* tag : {"a", "b"}) {
    auto& r = *recv[tag[0] - 'a'];
    ASSERT_EQ(r.process().wait(30s), 0) << r.process().stderr_text();
    const auto j = read_json(dir / (std::string(tag) + ".json"));
    EXPECT_EQ(j["frames"], kFrames) << tag;
    EXPECT_EQ(j["checksum_failures"], 0) << tag;
    const auto diff =
        compare_frames(dir / (std::string(tag) + ".raw"), dir / "reference.raw", 320 * 240 * 2);
    EXPECT_FALSE(diff) << tag << ": " << *diff;
  }
}

TEST_F(GstLaunch, KeyFileAuthenticatesBothElements) {
  TempDir dir;
  const auto key = dir / "shared.key";
  ASSERT_TRUE(auth::create_key_file(key));
  const std::string source = "videotestsrc num-buffers=30 ! " + caps_string("UYVY", 320, 240, 30);
  {
    Receiver recv(dir, {"--verify", "--quiet", "--transport", "tcp", "--key-file", key.string(),
                        "--serve", "--stats-json", (dir / "recv.json").string()});
    const std::string sink = " ! rdmasink host=127.0.0.1 port=" + std::to_string(recv.port()) +
                             " transport=tcp checksum=true sync=false";
    Process keyed(launch(source + sink + " key-file=" + key.string(), {"-q"}),
                  dir / "keyed.stderr");
    ASSERT_EQ(keyed.wait(60s), 0) << keyed.stderr_text();
    Process keyless(launch(source + sink), dir / "keyless.stderr");
    const auto code = keyless.wait(60s);
    ASSERT_TRUE(code);
    EXPECT_NE(*code, 0);
    EXPECT_NE(keyless.stderr_text().find("authentication failed"), std::string::npos)
        << keyless.stderr_text();
    recv.process().signal(SIGTERM);
    ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
    const auto r = read_json(dir / "recv.json");
    EXPECT_EQ(r["frames"], 30);
    EXPECT_EQ(r["checksum_failures"], 0);
  }
  // rdmasrc key-file=... takes a keyed rdmavideo-send and verifies its frames.
  const uint16_t port = free_port();
  const auto out = dir / "src.stdout";
  Process src(launch("rdmasrc address=127.0.0.1 port=" + std::to_string(port) +
                         " transport=tcp verify=true key-file=" + key.string() + " ! fakesink",
                     {"-m"}),
              dir / "src.stderr", Redirect{"", out.string(), false, false});
  ASSERT_TRUE(wait_prerolling(out, src)) << read_file(out) << src.stderr_text();
  Process send({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "--testsrc",
                "-s", "320x240", "--frames", "30", "--checksum", "--transport", "tcp", "--quiet",
                "--key-file", key.string()},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(src.wait(60s), 0) << read_file(out) << src.stderr_text();
  const auto stats = stats_from_messages(read_file(out), "rdmasrc-stats");
  ASSERT_NE(stats, nullptr) << read_file(out);
  EXPECT_EQ(u64_field(stats.get(), "frames"), 30u);
  EXPECT_EQ(u64_field(stats.get(), "checksum-failures"), 0u);
}

// The handshake throws inside rdmasink's start where OpenSSL has no HMAC (a configuration
// without its provider: no_hmac preloaded). The pipeline gets an error naming why, and ends
// with gst-launch's failure, not std::terminate's abort; the receiver, which met the same
// handshake, refuses that one sender and takes the next.
TEST_F(GstLaunch, AHandshakeThatThrowsIsAnErrorOnTheBus) {
  TempDir dir;
  const auto key = dir / "shared.key";
  ASSERT_TRUE(auth::create_key_file(key));
  Receiver recv(dir, {"--verify", "--quiet", "--transport", "tcp", "--key-file", key.string(),
                      "--serve", "--stats-json", (dir / "recv.json").string()});
  const std::string pipeline = "videotestsrc num-buffers=10 ! " +
                               caps_string("UYVY", 320, 240, 30) +
                               " ! rdmasink host=127.0.0.1 port=" + std::to_string(recv.port()) +
                               " transport=tcp sync=false key-file=" + key.string();
  {
    const char* preload = std::getenv("LD_PRELOAD");
    const std::string before = preload ? preload : "";
    const std::string with = before.empty() ? RDMAVIDEO_NO_HMAC : before + ":" + RDMAVIDEO_NO_HMAC;
    setenv("LD_PRELOAD", with.c_str(), 1);
    Process failing(launch(pipeline), dir / "failing.stderr");
    if (before.empty()) {
      unsetenv("LD_PRELOAD");
    } else {
      setenv("LD_PRELOAD", before.c_str(), 1);
    }
    const auto code = failing.wait(60s);
    ASSERT_TRUE(code);
    // gst-launch-1.0's own failure (255 where the pipeline would not start), not a signal.
    EXPECT_EQ(*code, 255) << failing.stderr_text();
    const std::string said = failing.stderr_text();
    EXPECT_NE(said.find("ERROR: from element /GstPipeline:pipeline0/GstRdmaSink:rdmasink0"),
              std::string::npos)
        << said;
    EXPECT_NE(said.find("cannot prove the shared key: HMAC-SHA256 unavailable"), std::string::npos)
        << said;
    EXPECT_EQ(said.find("terminate called"), std::string::npos) << said;
  }
  Process keyed(launch(pipeline, {"-q"}), dir / "keyed.stderr");
  ASSERT_EQ(keyed.wait(60s), 0) << keyed.stderr_text();
  recv.process().signal(SIGTERM);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_json(dir / "recv.json")["frames"], 10);
}

// gst-inspect-1.0 finds both elements through GST_PLUGIN_PATH and shows their properties
// and pad templates.
// The native recipe for a composite in gst-launch (docs/gstreamer.md): four rdmasrc, each on
// its own port, into GStreamer's compositor, each sender a solid colour; a frame from the
// middle has each colour in its quadrant.
TEST_F(GstLaunch, FourRdmasrcIntoCompositorMakeAGrid) {
  {
    UniqueObject<GstElementFactory> factory(gst_element_factory_find("compositor"));
    if (!factory) GTEST_SKIP() << "compositor (gst-plugins-base) is not installed";
  }
  TempDir dir;
  const auto out = dir / "grid.rgb";
  std::array<uint16_t, 4> ports{};
  std::string pipeline =
      "compositor name=mix sink_1::xpos=320 sink_2::ypos=180 sink_3::xpos=320 sink_3::ypos=180 ! "
      "videoconvert ! video/x-raw,format=RGB,width=640,height=360 ! filesink location=" +
      out.string();
  for (size_t i = 0; i < 4; ++i) {
    ports[i] = free_port();
    pipeline += " rdmasrc address=127.0.0.1 port=" + std::to_string(ports[i]) + " ! mix.sink_" +
                std::to_string(i);
  }
  const auto recv_stdout = dir / "recv.stdout";
  Process recv(launch(pipeline), dir / "recv.stderr",
               Redirect{"", recv_stdout.string(), false, false});
  ASSERT_TRUE(wait_prerolling(recv_stdout, recv)) << read_file(recv_stdout) << recv.stderr_text();
  const std::array<const char*, 4> colours{"0xFF0000", "0x00FF00", "0x0000FF", "0xFFFF00"};
  std::vector<std::unique_ptr<Process>> senders;
  for (size_t i = 0; i < 4; ++i) {
    senders.push_back(std::unique_ptr<Process>(new Process(
        {RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(ports[i]), "--quiet", "-f",
         "lavfi", "-i", std::string("color=c=") + colours[i] + ":s=320x180:r=30", "--frames", "60",
         "--transport", "tcp"},
        dir / ("send" + std::to_string(i) + ".stderr"))));
  }
  for (auto& s : senders) EXPECT_EQ(s->wait(60s), 0) << s->stderr_text();
  const auto ended = recv.wait(60s);
  ASSERT_TRUE(ended) << "gst-launch-1.0 did not end after the senders' EOS";
  ASSERT_EQ(*ended, 0) << read_file(recv_stdout) << recv.stderr_text();
  constexpr size_t kFrame = 640 * 360 * 3;
  const std::string rgb = read_file(out);
  ASSERT_GE(rgb.size(), 30 * kFrame);
  const size_t middle = (rgb.size() / kFrame / 2) * kFrame;
  const std::array<std::array<int, 3>, 4> want{
      {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}}};
  const std::array<std::pair<int, int>, 4> centres{{{160, 90}, {480, 90}, {160, 270}, {480, 270}}};
  for (size_t i = 0; i < 4; ++i) {
    const size_t at =
        middle +
        (static_cast<size_t>(centres[i].second) * 640 + static_cast<size_t>(centres[i].first)) * 3;
    int d = 0;
    for (int c = 0; c < 3; ++c)
      d += std::abs(static_cast<uint8_t>(rgb[at + static_cast<size_t>(c)]) - want[i][c]);
    EXPECT_LE(d, 30) << "quadrant " << i + 1 << " (" << colours[i] << ")";
  }
}

TEST_F(GstLaunch, GstInspectShowsPropertiesAndPadTemplates) {
  struct Element {
    const char* name;
    std::vector<const char*> properties;
    const char* pad_template;
  };
  const std::vector<Element> elements = {
      {"rdmasink",
       {"host", "port", "transport", "rdma-device", "key-file", "mode", "checksum", "stream-name",
        "stats", "memory", "cuda-caps"},
       "SINK template: 'sink'"},
      {"rdmasrc",
       {"address", "port", "transport", "ring-size", "rdma-device", "key-file", "verify",
        "bound-port", "stats", "memory", "cuda-caps"},
       "SRC template: 'src'"},
  };
  TempDir dir;
  for (const auto& e : elements) {
    SCOPED_TRACE(e.name);
    const auto out = dir / (std::string(e.name) + ".txt");
    Process inspect({RDMAVIDEO_GST_INSPECT, e.name}, dir / "inspect.stderr",
                    Redirect{"", out.string(), false, false});
    ASSERT_EQ(inspect.wait(60s), 0) << inspect.stderr_text();
    const std::string text = read_file(out);
    for (const char* property : e.properties) {
      EXPECT_TRUE(std::regex_search(text, std::regex(std::string("\n  ") + property + " +: ")))
          << "property " << property << " missing from:\n"
          << text;
    }
    EXPECT_NE(text.find(e.pad_template), std::string::npos) << text;
    for (const char* format : {"NV12", "UYVY", "RGBA", "v210", "P010_10LE"}) {
      EXPECT_NE(text.find(format), std::string::npos) << format;
    }
    EXPECT_NE(text.find("libgstrdmavideo.so"), std::string::npos) << "not the build tree's plugin";
  }
  const auto plugin = dir / "plugin.txt";
  Process inspect({RDMAVIDEO_GST_INSPECT, "rdmavideo"}, dir / "plugin.stderr",
                  Redirect{"", plugin.string(), false, false});
  ASSERT_EQ(inspect.wait(60s), 0) << inspect.stderr_text();
  const std::string text = read_file(plugin);
  EXPECT_NE(text.find("rdmasink"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmasrc"), std::string::npos) << text;
  EXPECT_NE(text.find("2 features"), std::string::npos) << text;
}

// Where our loader finds a driver but GStreamer's CUDA library cannot use it (the stand-in
// driver has only what our loader asks for), the elements still inspect and work, and say
// why there are no CUDA caps. GStreamer's own registry cache is kept apart for the run.
TEST_F(GstLaunch, WhereGStreamerCannotLoadCudaTheElementsSayWhyAndStillWork) {
  if (!RDMAVIDEO_GST_CUDA_CAPS) GTEST_SKIP() << "this build has no memory:CUDAMemory caps";
  TempDir dir;
  WithFakeCuda fake;
  setenv("GST_REGISTRY_1_0", (dir / "registry.bin").c_str(), 1);
  const auto out = dir / "inspect.txt";
  Process inspect({RDMAVIDEO_GST_INSPECT, "rdmasrc"}, dir / "inspect.stderr",
                  Redirect{"", out.string(), false, false});
  const auto rc = inspect.wait(60s);
  setenv("GST_REGISTRY_1_0", RDMAVIDEO_GST_REGISTRY, 1);
  ASSERT_EQ(rc, 0) << inspect.stderr_text();
  EXPECT_NE(read_file(out).find(
                "no memory:CUDAMemory caps: GStreamer's CUDA library (libgstcuda-1.0) cannot "
                "load the CUDA driver it opens itself"),
            std::string::npos)
      << read_file(out);
}

// memory=cuda on both elements, against the command-line peers with --memory cuda, on the
// stand-in driver (whose device memory the CPU cannot touch): frames are uploaded into
// rdmasink's GPU buffers and downloaded from rdmasrc's GPU ring, and every one verifies.
TEST_F(GstLaunch, GpuMemoryOnBothElementsStreamsAndVerifies) {
  constexpr int kFrames = 30;
  TempDir dir;
  WithFakeCuda fake;
  setenv("GST_REGISTRY_1_0", (dir / "registry.bin").c_str(), 1);
  struct Restore {
    ~Restore() { setenv("GST_REGISTRY_1_0", RDMAVIDEO_GST_REGISTRY, 1); }
  } restore;

  // rdmavideo-send --memory cuda into rdmasrc memory=cuda verify=true.
  const uint16_t port = free_port();
  const auto recv_stdout = dir / "recv.stdout";
  Process recv(launch("rdmasrc address=127.0.0.1 port=" + std::to_string(port) +
                          " memory=cuda verify=true ! fakesink",
                      {"-m"}),
               dir / "recv.stderr", Redirect{"", recv_stdout.string(), false, false});
  ASSERT_TRUE(wait_prerolling(recv_stdout, recv)) << read_file(recv_stdout) << recv.stderr_text();
  Process send({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "--testsrc",
                "-s", "320x240", "--pix-fmt", "nv12", "--frames", std::to_string(kFrames),
                "--checksum", "--memory", "cuda", "--quiet"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.wait(60s).value_or(-1), 0) << read_file(recv_stdout) << recv.stderr_text();
  const auto stats = stats_from_messages(read_file(recv_stdout), "rdmasrc-stats");
  ASSERT_NE(stats, nullptr) << read_file(recv_stdout);
  EXPECT_EQ(u64_field(stats.get(), "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(stats.get(), "checksum-failures"), 0u);

  // videotestsrc ! rdmasink memory=cuda into rdmavideo-recv --memory cuda --output.
  const std::string source = "videotestsrc num-buffers=" + std::to_string(kFrames) +
                             " pattern=smpte horizontal-speed=2 ! " +
                             caps_string("NV12", 320, 240, 30);
  Process reference(
      launch(source + " ! filesink location=" + (dir / "reference.raw").string(), {"-q"}),
      dir / "reference.stderr");
  ASSERT_EQ(reference.wait(60s), 0) << reference.stderr_text();
  Receiver receiver(
      dir, {"--verify", "--quiet", "--memory", "cuda", "--output", (dir / "out.raw").string(),
            "--stats-json", (dir / "recv.json").string()});
  Process sink(launch(source + " ! rdmasink host=127.0.0.1 port=" +
                          std::to_string(receiver.port()) + " memory=cuda checksum=true sync=false",
                      {"-q"}),
               dir / "sink.stderr");
  ASSERT_EQ(sink.wait(60s), 0) << sink.stderr_text();
  ASSERT_EQ(receiver.process().wait(30s), 0) << receiver.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"], kFrames);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["memory"], "cuda:0");
  const auto diff = compare_frames(dir / "out.raw", dir / "reference.raw", 320 * 240 * 3 / 2);
  EXPECT_FALSE(diff) << *diff;
}

// An element the plugin does not have is an error, so the test above can fail.
TEST_F(GstLaunch, GstInspectFailsForAnUnknownElement) {
  TempDir dir;
  Process inspect({RDMAVIDEO_GST_INSPECT, "rdmanosuchelement"}, dir / "inspect.stderr");
  const auto rc = inspect.wait(60s);
  ASSERT_TRUE(rc);
  EXPECT_NE(*rc, 0);
}

}  // namespace
}  // namespace rdmavideo::testing
