// SPDX-License-Identifier: Apache-2.0
// Many streams into one receiver, with the real binaries over 127.0.0.1: four senders at
// once, each verified and written to its own file from an --output template, a fifth refused
// as busy; recordings that survive a garbage peer and a sender killed mid-stream, each file
// finalised and dated so the cameras line up; --serve taking streams one after another;
// --frames per stream; the status line and --stats-json with totals and every stream; the
// template's rules (safe names, no overwrite, usage errors).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <sstream>

#include "output_checks.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr uint64_t k1080Uyvy = 1920u * 1080u * 2u;

std::vector<std::string> send_args(const Receiver& recv, const std::string& name,
                                   std::vector<std::string> extra) {
  std::vector<std::string> a{
      RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "--quiet", "--name", name};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// ffprobe's key=value lines for `entries` of the first video stream (or the format).
std::map<std::string, std::string> probe(const fs::path& file, const std::string& entries,
                                         const std::string& extra = "-select_streams v:0") {
  return key_values(capture("ffprobe -v error " + extra + " -show_entries " + entries +
                            " -of default=noprint_wrappers=1 '" + file.string() + "'"));
}

bool have_ffprobe() { return shell("command -v ffprobe >/dev/null 2>&1") == 0; }

TEST(MultiStream, FourSendersVerifiedIntoTheirOwnFilesAndAFifthRefused) {
  TempDir dir;
  Receiver recv(dir, {"--max-streams", "4", "--verify", "--quiet", "--output",
                      (dir / "{name}.yuv").string(), "--stats-json", (dir / "recv.json").string()});
  std::vector<std::unique_ptr<Process>> senders;
  for (int i = 1; i <= 4; ++i) {
    const std::string name = "cam" + std::to_string(i);
    senders.push_back(std::make_unique<Process>(
        send_args(recv, name,
                  {"-s", "1920x1080", "--pix-fmt", "uyvy422", "--checksum", "--frames", "300"}),
        dir / (name + ".stderr")));
  }
  // All four streaming: each has its ring.
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(
        recv.process().wait_for_stderr("\"cam" + std::to_string(i) + "\"\\] stream 1 ring 1", 30s))
        << recv.process().stderr_text();
  }
  Process fifth(
      send_args(recv, "cam5",
                {"-s", "1920x1080", "--pix-fmt", "uyvy422", "--realtime", "--frames", "300"}),
      dir / "cam5.stderr");
  const auto refused = fifth.wait(5s);
  ASSERT_TRUE(refused) << "the fifth sender hung: " << fifth.stderr_text();
  EXPECT_EQ(*refused, 1);
  const std::string fifth_err = fifth.stderr_text();
  EXPECT_NE(fifth_err.find("error: send 127.0.0.1:"), std::string::npos) << fifth_err;
  EXPECT_NE(fifth_err.find("receiver busy: it serves at most 4 streams at once"), std::string::npos)
      << fifth_err;
  // One error line: why.
  std::istringstream lines(fifth_err);
  int error_lines = 0;
  for (std::string line; std::getline(lines, line);) error_lines += line.rfind("error:", 0) == 0;
  EXPECT_EQ(error_lines, 1) << fifth_err;

  for (auto& s : senders) ASSERT_EQ(s->wait(120s), 0) << s->stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();

  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(r["frames"], 1200);
  EXPECT_EQ(r["checksum_failures"], 0);
  EXPECT_EQ(r["bytes"], 1200 * k1080Uyvy);
  ASSERT_EQ(r["streams"].size(), 4u);
  for (int i = 1; i <= 4; ++i) {
    const std::string name = "cam" + std::to_string(i);
    SCOPED_TRACE(name);
    const auto& s = stream_named(r, name);
    EXPECT_EQ(s["frames"], 300);
    EXPECT_EQ(s["checksum_failures"], 0);
    EXPECT_EQ(s["state"], "ended");
    EXPECT_EQ(s["output"], (dir / (name + ".yuv")).string());
    EXPECT_EQ(s["width"], 1920);
    EXPECT_EQ(s["pix_fmt"], "uyvy422");
    EXPECT_EQ(fs::file_size(dir / (name + ".yuv")), 300 * k1080Uyvy);
  }
  // The format keys describe the first stream; the counters are totals.
  EXPECT_EQ(r["width"], 1920);
  EXPECT_EQ(r["transport"], "tcp");
  for (const char* key : {"frames", "bytes", "seconds", "fps", "gbytes_per_s", "dropped",
                          "checksum_failures", "latency_ms", "cpu_seconds", "transport", "width",
                          "height", "pix_fmt", "frame_rate", "peer"}) {
    EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_TRUE(r["streams"][0].contains(key)) << key;
  }
}

// Reads bytes until the peer closes (or 10 s pass).
void drain(int fd) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char sink[4096];
  while (recv(fd, sink, sizeof sink, 0) > 0) {
  }
}

TEST(MultiStream, RecordingsSurviveAGarbagePeerAndAKilledSender) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  if (!have_ffprobe()) GTEST_SKIP() << "no ffprobe";
  TempDir dir;
  Receiver recv(dir, {"--max-streams", "4", "--quiet", "--output", (dir / "{name}.mov").string(),
                      "--stats-json", (dir / "recv.json").string()});
  std::vector<std::unique_ptr<Process>> good;
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "cam" + std::to_string(i);
    good.push_back(std::make_unique<Process>(
        send_args(recv, name, {"-s", "640x360", "--pix-fmt", "yuv422p10le", "--frames", "90"}),
        dir / (name + ".stderr")));
  }
  // A paced sender, to be killed mid-stream.
  Process victim(send_args(recv, "victim",
                           {"-s", "640x360", "--pix-fmt", "yuv422p10le", "--realtime", "-r", "30",
                            "--frames", "100000"}),
                 dir / "victim.stderr");
  // A garbage peer: refused before it is a stream, costing nobody anything.
  {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(recv.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const char garbage[] = "GET / HTTP/1.0\r\n\r\n and some more bytes to fill a header";
    ASSERT_GT(send(fd, garbage, sizeof garbage, MSG_NOSIGNAL), 0);
    drain(fd);
    close(fd);
  }
  ASSERT_TRUE(recv.process().wait_for_stderr("Header.magic 0x20544547 is not RDVF", 10s))
      << recv.process().stderr_text();
  ASSERT_TRUE(recv.process().wait_for_stderr("victim\\.mov\\] prores", 30s))
      << recv.process().stderr_text();
  std::this_thread::sleep_for(1500ms);  // some frames recorded
  victim.signal(SIGKILL);
  for (auto& s : good) ASSERT_EQ(s->wait(180s), 0) << s->stderr_text();
  // The killed stream failed: exit 1, after the others finished.
  ASSERT_EQ(recv.process().wait(60s), 1) << recv.process().stderr_text();

  const auto r = read_json(dir / "recv.json");
  ASSERT_EQ(r["streams"].size(), 4u) << r.dump(2);
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "cam" + std::to_string(i);
    SCOPED_TRACE(name);
    EXPECT_EQ(stream_named(r, name)["state"], "ended");
    EXPECT_EQ(stream_named(r, name)["frames"], 90);
    EXPECT_EQ(decoded_frames(dir / (name + ".mov")), 90);
  }
  const auto& victim_summary = stream_named(r, "victim");
  EXPECT_EQ(victim_summary["state"], "failed");
  EXPECT_TRUE(victim_summary.contains("error"));
  const int reported = victim_summary["frames"].get<int>();
  EXPECT_GT(reported, 10);
  EXPECT_EQ(decoded_frames(dir / "victim.mov"), reported);

  // Every file is dated by its first frame and carries a timecode track, so an editor can
  // line the cameras up.
  for (const std::string name : {"cam1", "cam2", "cam3", "victim"}) {
    SCOPED_TRACE(name);
    const auto format = probe(dir / (name + ".mov"), "format_tags=creation_time", "");
    ASSERT_TRUE(format.count("TAG:creation_time"))
        << capture("ffprobe -v error -show_format '" + (dir / (name + ".mov")).string() + "'");
    EXPECT_EQ(format.at("TAG:creation_time").size(), 27u) << format.at("TAG:creation_time");
    EXPECT_EQ(format.at("TAG:creation_time").back(), 'Z');
    const std::string tracks = capture(
        "ffprobe -v error -show_entries stream=codec_tag_string "
        "-of csv=p=0 '" +
        (dir / (name + ".mov")).string() + "'");
    EXPECT_NE(tracks.find("tmcd"), std::string::npos) << tracks;
  }
}

// A recording machine whose disk fills: that stream ends alone, its sender is told why, its
// file keeps what reached the disk, and the other stream goes on to the end.
TEST(MultiStream, AFullDiskEndsOnlyItsOwnStream) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  if (!have_ffprobe()) GTEST_SKIP() << "no ffprobe";
  if (geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir dir;
  fs::create_directory(dir / "small");
  fs::create_directory(dir / "roomy");
  const std::string small = (dir / "small").string();
  if (shell("mount -t tmpfs -o size=6m tmpfs '" + small + "' 2>/dev/null") != 0) {
    GTEST_SKIP() << "could not mount a tmpfs";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { shell("umount '" + path + "'"); }
  } unmount{small};
  Receiver recv(
      dir, {"--max-streams", "2", "--quiet", "--output", (dir / "{name}" / "take.mov").string(),
            "--stats-json", (dir / "recv.json").string()});
  Process full(
      send_args(recv, "small", {"-s", "640x360", "--pix-fmt", "yuv422p10le", "--frames", "2000"}),
      dir / "small.stderr");
  Process fine(
      send_args(recv, "roomy", {"-s", "640x360", "--pix-fmt", "yuv422p10le", "--frames", "240"}),
      dir / "roomy.stderr");
  ASSERT_EQ(fine.wait(180s), 0) << fine.stderr_text();
  ASSERT_EQ(full.wait(180s), 1) << full.stderr_text();
  EXPECT_NE(full.stderr_text().find("No space left on device"), std::string::npos)
      << full.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 1) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(stream_named(r, "roomy")["state"], "ended");
  EXPECT_EQ(decoded_frames(dir / "roomy" / "take.mov"), 240);
  EXPECT_EQ(stream_named(r, "small")["state"], "failed");
  // What reached the disk before it filled is a playable recording.
  const int kept = decoded_frames(dir / "small" / "take.mov");
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 2000);
}

TEST(MultiStream, ServeTakesStreamsOneAfterAnotherUntilStopped) {
  TempDir dir;
  Receiver recv(dir, {"--serve", "--quiet", "--output", (dir / "take-{n}.yuv").string(),
                      "--stats-json", (dir / "recv.json").string()});
  for (int i = 1; i <= 3; ++i) {
    Process send(send_args(recv, "take", {"-s", "320x240", "--frames", std::to_string(10 * i)}),
                 dir / "send.stderr");
    ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
    ASSERT_TRUE(
        recv.process().wait_for_stderr("stream " + std::to_string(i) + " the sender ended it", 10s))
        << recv.process().stderr_text();
  }
  EXPECT_FALSE(recv.process().wait(500ms)) << "a serving receiver exited on its own";
  recv.process().signal(SIGTERM);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(fs::file_size(dir / ("take-" + std::to_string(i) + ".yuv")), 10u * i * 320 * 240 * 2);
  }
  EXPECT_EQ(read_json(dir / "recv.json")["streams"].size(), 3u);
}

TEST(MultiStream, FramesLimitIsPerStream) {
  TempDir dir;
  Receiver recv(dir, {"--max-streams", "2", "--frames", "30", "--quiet", "--stats-json",
                      (dir / "recv.json").string()});
  Process a(send_args(recv, "a", {"-s", "320x240", "--frames", "100000"}), dir / "a.stderr");
  Process b(send_args(recv, "b", {"-s", "320x240", "--frames", "100000"}), dir / "b.stderr");
  ASSERT_EQ(a.wait(30s), 0) << a.stderr_text();
  ASSERT_EQ(b.wait(30s), 0) << b.stderr_text();
  EXPECT_NE(a.stderr_text().find("the receiver ended the stream"), std::string::npos);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_EQ(stream_named(r, "a")["frames"], 30);
  EXPECT_EQ(stream_named(r, "b")["frames"], 30);
  EXPECT_EQ(r["frames"], 60);
}

TEST(MultiStream, StatusLineShowsTotalsAndEveryStream) {
  TempDir dir;
  Receiver recv(dir, {"--max-streams", "2"});
  Process a(send_args(recv, "left", {"-s", "320x240", "--realtime", "-r", "30", "--duration", "3"}),
            dir / "a.stderr");
  Process b(
      send_args(recv, "right", {"-s", "320x240", "--realtime", "-r", "30", "--duration", "3"}),
      dir / "b.stderr");
  // stderr is a file, so the status line is printed as a line each second. A loaded machine
  // may drop a live sender's first frames: a stream's part then says how many.
  EXPECT_TRUE(recv.process().wait_for_stderr(
      R"(\[recv\] 2 streams \(2 running\): frames [0-9]+ fps [0-9.]+ [0-9.]+ GB/s dropped [0-9]+ \| (left|right) [0-9.]+ fps( drop [0-9]+)? \| (left|right) [0-9.]+ fps)",
      10s))
      << recv.process().stderr_text();
  ASSERT_EQ(a.wait(30s), 0);
  ASSERT_EQ(b.wait(30s), 0);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

TEST(MultiStream, TemplateNeverOverwritesAndNamesAreMadeSafe) {
  TempDir dir;
  fs::create_directory(dir / "out");
  { std::ofstream(dir / "out" / "cam1.yuv") << "precious"; }
  Receiver recv(dir,
                {"--max-streams", "3", "--quiet", "--output", (dir / "out" / "{name}.yuv").string(),
                 "--stats-json", (dir / "recv.json").string()});
  Process a(send_args(recv, "cam1", {"-s", "64x36", "--frames", "5"}), dir / "a.stderr");
  Process b(send_args(recv, "../../evil/.name", {"-s", "64x36", "--frames", "5"}),
            dir / "b.stderr");
  // A name that a shell command would take for an option ("rm {name}.yuv").
  Process c({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "--quiet", "--name=-rf",
             "-s", "64x36", "--frames", "5"},
            dir / "c.stderr");
  ASSERT_EQ(a.wait(30s), 0) << a.stderr_text();
  ASSERT_EQ(b.wait(30s), 0) << b.stderr_text();
  ASSERT_EQ(c.wait(30s), 0) << c.stderr_text();
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  EXPECT_EQ(read_file(dir / "out" / "cam1.yuv"), "precious");
  EXPECT_EQ(fs::file_size(dir / "out" / "cam1-1.yuv"), 5u * 64 * 36 * 2);
  EXPECT_NE(
      recv.process().stderr_text().find("exists: writing " + (dir / "out" / "cam1-1.yuv").string()),
      std::string::npos);
  // The odd name stays inside out/, in one plain file name.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir / "out")) {
    ++files;
    const std::string file = entry.path().filename().string();
    EXPECT_NE(file.front(), '.') << file;
    EXPECT_NE(file.front(), '-') << file;
    EXPECT_EQ(file.find(".."), std::string::npos) << file;
  }
  EXPECT_EQ(files, 4);
  EXPECT_TRUE(fs::exists(dir / "out" / "_rf.yuv"));
  const auto r = read_json(dir / "recv.json");
  const std::string odd = stream_named(r, "../../evil/.name")["output"];
  EXPECT_EQ(fs::path(odd).parent_path(), dir / "out");
}

TEST(MultiStream, UsageErrorsForTemplatesThatCannotWork) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--max-streams", "2", "--output", (dir / "all.yuv").string()}, "needs {name} or {n}"},
      {{"--max-streams", "2", "--output", "-"}, "stdout carries one stream"},
      {{"--output", (dir / "{camera}.mov").string()}, "unknown placeholder {camera}"},
      {{"--serve", "--output", (dir / "one.mov").string()}, "every stream would replace the file"},
      {{"--max-streams", "0"}, "--max-streams"},
      // Said at start, not when the first frame arrives; a template makes its folders.
      {{"--output", (dir / "no-such" / "one.mov").string()},
       "the folder " + (dir / "no-such").string() + " does not exist"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Process p(argv, dir / "usage.stderr");
    ASSERT_EQ(p.wait(10s), 2) << c.says << ": " << p.stderr_text();
    const std::string err = p.stderr_text();
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

}  // namespace
}  // namespace rdmavideo::testing
