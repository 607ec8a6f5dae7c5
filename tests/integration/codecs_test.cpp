// SPDX-License-Identifier: Apache-2.0
// FFmpeg sources and recordings end to end with the real binaries over 127.0.0.1: a clip made
// with ffmpeg (H.264 in MP4) sent with -i and recorded as ProRes 422 HQ in .mov (checked with
// ffprobe and PSNR) and as FFV1 in .mkv (bit-exact after decoding, 8-bit and 10-bit); a
// sender killed and a receiver interrupted mid-recording leave a finalised file holding every
// reported frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "output_checks.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

// ffprobe's facts about the first video stream, decoding every frame to count them.
std::map<std::string, std::string> probe(const std::filesystem::path& file) {
  return key_values(capture(
      "ffprobe -v error -count_frames -select_streams v:0 -show_entries "
      "stream=codec_name,profile,pix_fmt,width,height,r_frame_rate,avg_frame_rate,nb_read_frames "
      "-of default=noprint_wrappers=1 '" +
      file.string() + "'"));
}

// The md5 of every decoded frame, in order (framemd5 without the timestamps), after an
// optional filter; `input` goes before -i (-f rawvideo ... for raw frames).
std::vector<std::string> frame_md5s(const std::filesystem::path& file, const std::string& vf = "",
                                    const std::string& input = "") {
  const std::string text = capture("ffmpeg -nostdin -v error " + input + " -i '" + file.string() +
                                   "' -map 0:v:0 -fps_mode passthrough " +
                                   (vf.empty() ? "" : "-vf " + vf + " ") + "-f framemd5 -");
  std::vector<std::string> md5s;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    md5s.push_back(line.substr(line.rfind(',') + 1));
  }
  return md5s;
}

double psnr(const std::filesystem::path& got, const std::filesystem::path& reference) {
  const std::string text =
      capture("ffmpeg -nostdin -i '" + got.string() + "' -i '" + reference.string() +
              "' -lavfi '[0:v][1:v]scale2ref[a][b];[a][b]psnr' -f null - 2>&1");
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(PSNR .* average:([0-9.]+|inf))"))) return -1;
  return m[1].str() == "inf" ? 1000 : std::stod(m[1].str());
}

// H.264 in MP4 from testsrc2, yuv420p, every frame a real picture.
std::filesystem::path make_clip(const TempDir& dir, const std::string& size, int frames,
                                int rate = 30) {
  const auto clip = dir / ("clip_" + size + ".mp4");
  const std::string make =
      "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=" + size +
      ":rate=" + std::to_string(rate) + " -frames:v " + std::to_string(frames) +
      " -c:v libx264 -preset ultrafast -qp 10 -pix_fmt yuv420p -y '" + clip.string() + "'";
  EXPECT_EQ(shell(make), 0) << make;
  return clip;
}

std::vector<std::string> sender_args(const Receiver& recv, std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// "recorded N frames" from the receiver's summary.
std::optional<int> recorded_frames(const std::string& stderr_text) {
  std::smatch m;
  if (!std::regex_search(stderr_text, m, std::regex(R"(recorded (\d+) frames)")))
    return std::nullopt;
  return std::stoi(m[1].str());
}

class ProresFromMp4 : public ::testing::TestWithParam<const char*> {};

TEST_P(ProresFromMp4, HqYuv422p10SameFramesRateAndPsnrAbove40) {
  const std::string size = GetParam();
  TempDir dir;
  const auto clip = make_clip(dir, size, 120);
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--output", out.string(), "--quiet"});
  Process send(sender_args(recv, {"-i", clip.string()}), dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(recorded_frames(recv.process().stderr_text()), 120) << recv.process().stderr_text();

  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], "prores");
  EXPECT_EQ(facts["profile"], "HQ");
  EXPECT_EQ(facts["pix_fmt"], "yuv422p10le");
  EXPECT_EQ(facts["width"] + "x" + facts["height"], size);
  EXPECT_EQ(facts["nb_read_frames"], "120");
  EXPECT_EQ(facts["r_frame_rate"], "30/1");
  EXPECT_EQ(facts["avg_frame_rate"], "30/1");
  EXPECT_GT(psnr(out, clip), 40.0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ProresFromMp4, ::testing::Values("1280x720", "1918x1078"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), 'x', '_');
                           return "s" + name;
                         });

TEST(Codecs, Ffv1InMkvIsBitExact) {
  TempDir dir;
  const auto clip = make_clip(dir, "1280x720", 120);
  const auto out = dir / "out.mkv";
  Receiver recv(dir, {"--output", out.string(), "--quiet"});
  Process send(sender_args(recv, {"-i", clip.string()}), dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], "ffv1");
  EXPECT_EQ(facts["pix_fmt"], "yuv420p");
  const auto want = frame_md5s(clip);
  const auto got = frame_md5s(out);
  ASSERT_EQ(want.size(), 120u);
  EXPECT_EQ(got, want);
}

// The colour a sender says (H.273 code points in StreamStart) lands in the file as FFmpeg
// writes it: `colr` nclc in .mov (and in each ProRes frame header), Colour elements in
// Matroska. The input's own colour travels without --colour; --colour overrides it.
std::map<std::string, std::string> colour_facts(const std::filesystem::path& file) {
  return key_values(capture(
      "ffprobe -v error -select_streams v:0 -show_entries "
      "stream=codec_name,profile,pix_fmt,color_range,color_space,color_transfer,color_primaries "
      "-of default=noprint_wrappers=1 '" +
      file.string() + "'"));
}

TEST(Codecs, HdrColourOfA444InputLandsInProres4444AndFfv1) {
  TempDir dir;
  const auto clip = dir / "pq444.mkv";
  const std::string make =
      "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=640x360:rate=30000/1001 -frames:v "
      "12 "
      "-pix_fmt yuv444p10le -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc "
      "-color_range tv -c:v ffv1 -y '" +
      clip.string() + "'";
  ASSERT_EQ(shell(make), 0) << make;
  for (const std::string ext : {".mov", ".mkv"}) {
    SCOPED_TRACE(ext);
    const auto out = dir / ("out" + ext);
    Receiver recv(dir, {"--output", out.string(), "--quiet"});
    Process send(sender_args(recv, {"-i", clip.string()}), dir / "send.stderr");
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    auto facts = colour_facts(out);
    EXPECT_EQ(facts["color_primaries"], "bt2020");
    EXPECT_EQ(facts["color_transfer"], "smpte2084");
    EXPECT_EQ(facts["color_space"], "bt2020nc");
    EXPECT_EQ(facts["color_range"], "tv");
    if (ext == ".mov") {
      // 4:4:4 goes into ProRes 4444 by default, not HQ (which would halve the chroma).
      EXPECT_EQ(facts["codec_name"], "prores");
      EXPECT_EQ(facts["profile"], "4444");
    } else {
      EXPECT_EQ(facts["pix_fmt"], "yuv444p10le");
      EXPECT_EQ(frame_md5s(out), frame_md5s(clip));  // and every sample as sent
    }
  }
}

TEST(Codecs, ColourFlagOverridesAndHlgFullRangeTravels) {
  TempDir dir;
  const auto out = dir / "hlg.mkv";
  Receiver recv(dir, {"--output", out.string(), "--quiet"});
  Process send(sender_args(recv, {"--testsrc", "-s", "320x180", "--pix-fmt", "yuv444p12le",
                                  "--colour", "bt2100-hlg full", "--frames", "5"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  auto facts = colour_facts(out);
  EXPECT_EQ(facts["pix_fmt"], "yuv444p12le");
  EXPECT_EQ(facts["color_primaries"], "bt2020");
  EXPECT_EQ(facts["color_transfer"], "arib-std-b67");
  EXPECT_EQ(facts["color_space"], "bt2020nc");
  EXPECT_EQ(facts["color_range"], "pc");
}

// 10-bit 4:2:2 into FFV1 (the receiver's settings: version 3, slice CRCs, one slice context
// per thread) decodes to the very samples sent. The clip uses every 10-bit value (noise in
// Y), so a coder that kept only 8 bits, or lost step between slices, changes the md5s.
TEST(Codecs, Ffv1Yuv422p10InMkvIsBitExact) {
  TempDir dir;
  const auto clip = dir / "clip.nut";
  const std::string make =
      "ffmpeg -nostdin -loglevel error -f lavfi -i \"nullsrc=s=1280x720:r=30,format=yuv422p10le,"
      "geq=lum='random(1)*1024':cb='mod(X*3+N*7,1024)':cr='mod(Y*5+X+N*3,1024)'\" -frames:v 24 "
      "-c:v rawvideo -y '" +
      clip.string() + "'";
  ASSERT_EQ(shell(make), 0) << make;
  const auto out = dir / "out.mkv";
  Receiver recv(dir, {"--output", out.string(), "--quiet"});
  Process send(sender_args(recv, {"-i", clip.string()}), dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_EQ(log.find("masked"), std::string::npos) << log;  // every sample was a 10-bit value
  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], "ffv1");
  EXPECT_EQ(facts["pix_fmt"], "yuv422p10le");
  const auto want = frame_md5s(clip);
  ASSERT_EQ(want.size(), 24u);
  EXPECT_EQ(frame_md5s(out), want);
}

// A yuv422p10le word with bits above the 10th set holds no 10-bit value; FFV1 would garble
// the rest of its slice. Such words come from a broken or foreign sender (the built-in test
// pattern keeps its stamp within 10 bits), so the recorder masks them to 10 bits and says
// so: the recording then decodes to exactly the received frames with every sample masked.
TEST(Codecs, Ffv1MasksSamplesAbove10BitsAndKeepsTheRestExact) {
  TempDir dir;
  constexpr int kWidth = 640, kHeight = 360, kFrames = 8;
  const size_t frame_words = size_t{kWidth} * kHeight * 2;  // Y plus half-width Cb and Cr
  std::vector<uint16_t> words(frame_words * kFrames);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint16_t>((i * 7) % 1024);
  for (int f = 0; f < kFrames; ++f) {
    // Out-of-range words at the first Y sample and further in, in every frame.
    uint16_t* frame = words.data() + f * frame_words;
    frame[0] = 0x4452;
    frame[kWidth * 3 + 5] = 0xfc00 | static_cast<uint16_t>(f);
    frame[frame_words - 1] = 0x0400;
  }
  const auto input = dir / "input.yuv";
  std::ofstream(input, std::ios::binary)
      .write(reinterpret_cast<const char*>(words.data()),
             static_cast<std::streamsize>(words.size() * sizeof(uint16_t)));
  const std::vector<std::string> source{"-i", "-", "-s", "640x360", "--pix-fmt", "yuv422p10le"};
  const auto raw = dir / "received.yuv";
  const auto out = dir / "out.mkv";
  std::string log;
  for (const auto& path : {raw, out}) {
    Receiver recv(dir, {"--output", path.string(), "--quiet"}, {}, path.stem().string());
    Process send(sender_args(recv, source), dir / (path.stem().string() + "-send.stderr"),
                 Redirect{input.string(), "", false, false});
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    log = recv.process().stderr_text();
  }
  EXPECT_NE(log.find("frame 0: yuv422p10le Y sample at row 0 column 0 is"), std::string::npos)
      << log;
  EXPECT_NE(log.find("8 of 8 frames had yuv422p10le samples above 1023"), std::string::npos) << log;

  std::string frames = read_file(raw);
  ASSERT_EQ(frames.size(), 8u * 640 * 360 * 2 * 2);
  size_t above = 0;
  for (size_t i = 0; i + 1 < frames.size(); i += 2) {
    if (static_cast<uint8_t>(frames[i + 1]) & 0xfc) ++above;
    frames[i + 1] = static_cast<char>(frames[i + 1] & 0x03);
  }
  EXPECT_GT(above, 0u);  // else this test tests nothing
  const auto masked = dir / "masked.yuv";
  std::ofstream(masked, std::ios::binary) << frames;
  const auto want = frame_md5s(masked, "", "-f rawvideo -pix_fmt yuv422p10le -s 640x360");
  ASSERT_EQ(want.size(), 8u);
  EXPECT_EQ(frame_md5s(out), want);
}

TEST(Codecs, LoopRepeatsTheFileWithGrowingTimestamps) {
  TempDir dir;
  const auto clip = make_clip(dir, "320x240", 30);
  const auto out = dir / "out.nut";
  Receiver recv(dir, {"--output", out.string(), "--quiet"});
  Process send(sender_args(recv, {"-i", clip.string(), "--loop", "--frames", "75"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  auto facts = probe(out);
  EXPECT_EQ(facts["nb_read_frames"], "75");
  const auto md5s = frame_md5s(out);
  ASSERT_EQ(md5s.size(), 75u);
  EXPECT_EQ(md5s[0], md5s[30]);  // the loop starts again at the first frame
  const std::string duration =
      capture("ffprobe -v error -show_entries format=duration -of csv=p=0 '" + out.string() + "'");
  EXPECT_NEAR(std::stod(duration), 2.5, 0.05);
}

TEST(Codecs, LavfiInputIsLiveAndScaledOnRequest) {
  TempDir dir;
  const auto out = dir / "out.mkv";
  Receiver recv(
      dir, {"--output", out.string(), "--quiet", "--stats-json", (dir / "recv.json").string()});
  Process send(sender_args(recv, {"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-s",
                                  "320x180", "--pix-fmt", "uyvy422", "--frames", "30",
                                  "--stats-json", (dir / "send.json").string()}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto s = read_json(dir / "send.json");
  EXPECT_EQ(s["width"], 320);
  EXPECT_EQ(s["pix_fmt"], "uyvy422");
  EXPECT_EQ(s["frames"].get<int>() + s["dropped"].get<int>(), 30);
  EXPECT_NE(send.stderr_text().find("real time"), std::string::npos) << send.stderr_text();
  auto facts = probe(out);
  EXPECT_EQ(facts["width"], "320");
  EXPECT_EQ(facts["nb_read_frames"], std::to_string(s["frames"].get<int>()));
}

// A sender that dies mid-recording: the receiver finalises, and the file holds exactly the
// frames it reports.
TEST(Codecs, SenderKilledMidRecordingLeavesAFinalisedFile) {
  TempDir dir;
  const auto clip = make_clip(dir, "640x360", 60);
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--output", out.string()});
  Process send(sender_args(recv, {"-i", clip.string(), "--loop"}), dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(frames ([1-9]\d{2,}))", 30s))
      << recv.process().stderr_text();
  send.signal(SIGKILL);
  send.wait(10s);
  ASSERT_TRUE(recv.process().wait(60s)) << recv.process().stderr_text();
  const auto recorded = recorded_frames(recv.process().stderr_text());
  ASSERT_TRUE(recorded) << recv.process().stderr_text();
  EXPECT_GE(*recorded, 100);
  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], "prores");
  EXPECT_EQ(facts["nb_read_frames"], std::to_string(*recorded));
}

TEST(Codecs, SigintToTheReceiverFinalisesAPlayableFile) {
  TempDir dir;
  const auto clip = make_clip(dir, "640x360", 60);
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--output", out.string(), "--codec", "prores_hq", "--encoder", "prores_ks"});
  Process send(sender_args(recv, {"-i", clip.string(), "--loop"}), dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(frames ([1-9]\d{2,}))", 30s))
      << recv.process().stderr_text();
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  send.wait(20s);
  const auto recorded = recorded_frames(recv.process().stderr_text());
  ASSERT_TRUE(recorded) << recv.process().stderr_text();
  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], "prores");
  EXPECT_EQ(facts["nb_read_frames"], std::to_string(*recorded));
  // Playable: decodes to the end without an error.
  EXPECT_EQ(capture("ffmpeg -nostdin -v error -i '" + out.string() + "' -f null - 2>&1"), "");
}

// Screen capture through libavdevice: x11grab of a virtual screen arrives as that screen
// (its size, flagged live) and shows what is on it: white with a white root window (Xvfb
// -wr), black with a black one (-br), the mouse pointer aside.
TEST(Codecs, X11grabSendsTheScreen) {
  if (shell("command -v Xvfb >/dev/null 2>&1") != 0) GTEST_SKIP() << "no Xvfb";
  for (const auto& [option, value] : {std::pair{"-wr", '\xff'}, std::pair{"-br", '\x00'}}) {
    SCOPED_TRACE(option);
    TempDir dir;
    VirtualScreen screen(dir, "320x240", {option});
    const auto raw = dir / "screen.raw";
    const auto stats = dir / "recv.json";
    Receiver recv(dir, {"--output", raw.string(), "--stats-json", stats.string(), "--quiet"});
    Process send(sender_args(recv, {"-f", "x11grab", "-i", screen.name(), "--frames", "4",
                                    "--pix-fmt", "rgb24"}),
                 dir / "send.stderr");
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    EXPECT_NE(recv.process().stderr_text().find("live"), std::string::npos);
    const auto summary = read_json(stats);
    EXPECT_EQ(summary["frames"], 4);
    EXPECT_EQ(summary["width"], 320);
    EXPECT_EQ(summary["height"], 240);
    EXPECT_EQ(summary["pix_fmt"], "rgb24");
    const std::string frames = read_file(raw);
    ASSERT_EQ(frames.size(), 4u * 320 * 240 * 3);
    // Every byte has the root window's colour but those of the mouse pointer, which x11grab
    // draws in the middle of the screen (at most 32x32 pixels a frame).
    const size_t other = static_cast<size_t>(std::count_if(
        frames.begin(), frames.end(), [colour = value](char b) { return b != colour; }));
    EXPECT_LE(other, 4u * 32 * 32 * 3) << "first at byte " << frames.find_first_not_of(value);
  }
}

// v210 (the SDI capture format) is unpacked to yuv422p10le for the encoder. The test pattern
// sent as v210 and as yuv422p10le carries the same 10-bit samples (only the frame-number stamp
// in the first samples differs: 18 samples in v210, 16 in yuv422p10le), so the two ProRes
// recordings match closely (about 45 dB); a wrong unpack (swapped Cb/Cr, shifted samples)
// measured 16 dB.
TEST(Codecs, V210RecordsTheSameSamplesAsYuv422p10) {
  TempDir dir;
  std::vector<std::filesystem::path> outs;
  for (const char* pix_fmt : {"v210", "yuv422p10le"}) {
    const auto out = dir / (std::string(pix_fmt) + ".mov");
    Receiver recv(dir, {"--output", out.string(), "--quiet"}, {}, std::string("recv-") + pix_fmt);
    Process send(
        sender_args(recv, {"--testsrc", "-s", "384x216", "--pix-fmt", pix_fmt, "--frames", "6"}),
        dir / (std::string("send-") + pix_fmt + ".stderr"));
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    auto facts = probe(out);
    EXPECT_EQ(facts["codec_name"], "prores");
    EXPECT_EQ(facts["pix_fmt"], "yuv422p10le");
    EXPECT_EQ(facts["nb_read_frames"], "6");
    outs.push_back(out);
  }
  EXPECT_GT(psnr(outs[0], outs[1]), 40.0);
}

struct OwnProfile {
  const char* codec;      // --codec
  const char* ffprobe;    // ffprobe's profile
  const char* fourcc;     // the sample entry's
  const char* mediainfo;  // MediaInfo's Format_Profile
};

// Named by its codec in test names and messages.
void PrintTo(const OwnProfile& p, std::ostream* os) { *os << p.codec; }

class OwnProres : public ::testing::TestWithParam<OwnProfile> {};

// The project's own ProRes encoder (--encoder rdmavideo_prores; on this machine, without a
// GPU, its CPU twin, which says so once), in each profile the recorder offers: the profile's
// four-character code as FFmpeg and MediaInfo name it, the stream's HDR colour in the frame
// headers and the file, every frame decoded without a word, the picture as close to the source
// as the profile's size allows, and the tone and timecode beside it as with FFmpeg's encoders.
TEST_P(OwnProres, WritesTheProfileWithColourSoundAndTimecode) {
  const OwnProfile p = GetParam();
  TempDir dir;
  auto record = [&](const std::string& name, std::vector<std::string> args) {
    const auto out = dir / (name + ".mov");
    args.insert(args.begin(), {"--output", out.string()});
    Receiver recv(dir, args, {}, "recv-" + name);
    Process send(
        sender_args(recv, {"--testsrc", "-s", "640x360", "-r", "30", "--pix-fmt", "yuv422p10le",
                           "--colour", "bt2100-pq", "--tone", "1000", "--frames", "70"}),
        dir / ("send-" + name + ".stderr"));
    EXPECT_EQ(send.wait(120s), 0) << send.stderr_text();
    EXPECT_EQ(recv.process().wait(120s), 0) << recv.process().stderr_text();
    return std::pair{out, recv.process().stderr_text()};
  };
  const auto [reference, reference_log] = record("prores_aw", {"--codec", "prores_hq"});
  const auto [out, log] = record(p.codec, {"--codec", p.codec, "--encoder", "rdmavideo_prores"});
  // Where it ran, said once: on a GPU, or the CPU twin and why.
  const bool on_gpu = log.find(", on the GPU ") != std::string::npos;
  if (!on_gpu) {
    EXPECT_NE(log.find("on the CPU (the GPU encoder's twin: no GPU)"), std::string::npos) << log;
    EXPECT_EQ(log.find("its CPU twin encodes"), log.rfind("its CPU twin encodes")) << log;
    EXPECT_NE(log.find("its CPU twin encodes"), std::string::npos) << log;
  }
  auto facts = key_values(
      capture("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
              "stream=codec_name,profile,codec_tag_string,pix_fmt,nb_read_frames,color_primaries,"
              "color_transfer,color_space -of default=noprint_wrappers=1 '" +
              out.string() + "'"));
  EXPECT_EQ(facts["codec_name"], "prores");
  EXPECT_EQ(facts["profile"], p.ffprobe);
  EXPECT_EQ(facts["codec_tag_string"], p.fourcc);
  EXPECT_EQ(facts["pix_fmt"], "yuv422p10le");
  EXPECT_EQ(facts["nb_read_frames"], "70");
  EXPECT_EQ(facts["color_primaries"], "bt2020");
  EXPECT_EQ(facts["color_transfer"], "smpte2084");
  EXPECT_EQ(facts["color_space"], "bt2020nc");
  // The frame headers' colour, as the decoder reads it from the first frame.
  EXPECT_EQ(capture("ffprobe -v error -select_streams v:0 -read_intervals %+#1 -show_entries "
                    "frame=color_primaries,color_transfer -of csv=p=0 '" +
                    out.string() + "'"),
            "bt2020,smpte2084\n");
  EXPECT_EQ(capture("mediainfo --Inform='Video;%Format%|%Format_Profile%|%CodecID%' '" +
                    out.string() + "'"),
            std::string("ProRes|") + p.mediainfo + "|" + p.fourcc + "\n");
  // Decoded without a warning.
  EXPECT_EQ(capture("ffmpeg -nostdin -v warning -i '" + out.string() + "' -f null - 2>&1"), "");
  EXPECT_EQ(stream_codecs(out), "prores,video\npcm_s24le,audio\nunknown,data\n");
  expect_in_sync(av_sync(out), 2, 1000);
  // As close to the source as FFmpeg's HQ encoder at its own size: each profile well above
  // 40 dB on this picture (Proxy and LT spend about 30% and 70% of standard's bytes on a busy
  // one; the test pattern leaves them room).
  EXPECT_GT(psnr(out, reference), 40.0);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, OwnProres,
    ::testing::Values(OwnProfile{"prores_hq", "HQ", "apch", "422 HQ"},
                      OwnProfile{"prores", "Standard", "apcn", "422"},
                      OwnProfile{"prores_lt", "LT", "apcs", "422 LT"},
                      OwnProfile{"prores_proxy", "Proxy", "apco", "422 Proxy"}),
    [](const auto& param_info) { return std::string(param_info.param.codec); });

struct RecordCase {
  const char* ext;
  const char* codec;              // --codec, or "" for the container's default
  const char* expected;           // ffprobe's codec_name
  const char* pix_fmt;            // ffprobe's pix_fmt
  const char* profile = nullptr;  // ffprobe's profile, where the codec has profiles
};

void PrintTo(const RecordCase& c, std::ostream* os) {
  *os << c.ext << " " << (*c.codec ? c.codec : "default");
}

class RecordEveryCodec : public ::testing::TestWithParam<RecordCase> {};

// Every codec and container the receiver offers makes a file ffprobe reads with the right
// codec, pixel format and frame count, and that decodes without an error.
TEST_P(RecordEveryCodec, MakesAPlayableFile) {
  const RecordCase c = GetParam();
  TempDir dir;
  const auto out = dir / (std::string("out") + c.ext);
  std::vector<std::string> recv_args{"--output", out.string(), "--quiet"};
  if (*c.codec) recv_args.insert(recv_args.end(), {"--codec", c.codec});
  Receiver recv(dir, recv_args);
  Process send(
      sender_args(recv, {"--testsrc", "-s", "640x360", "--pix-fmt", "uyvy422", "--frames", "10"}),
      dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(120s), 0) << recv.process().stderr_text();
  auto facts = probe(out);
  EXPECT_EQ(facts["codec_name"], c.expected);
  EXPECT_EQ(facts["pix_fmt"], c.pix_fmt);
  if (c.profile) {
    EXPECT_EQ(facts["profile"], c.profile);
  }
  EXPECT_EQ(facts["nb_read_frames"], "10");
  EXPECT_EQ(capture("ffmpeg -nostdin -v error -i '" + out.string() + "' -f null - 2>&1"), "");
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, RecordEveryCodec,
    ::testing::Values(RecordCase{".mov", "prores", "prores", "yuv422p10le", "Standard"},
                      RecordCase{".mov", "prores_lt", "prores", "yuv422p10le", "LT"},
                      RecordCase{".mov", "prores_proxy", "prores", "yuv422p10le", "Proxy"},
                      RecordCase{".mov", "prores_hq", "prores", "yuv422p10le", "HQ"},
                      // FFmpeg's ProRes decoder reports every 4444 stream as 12-bit.
                      RecordCase{".mov", "prores_4444", "prores", "yuv444p12le", "4444"},
                      RecordCase{".mov", "dnxhr_hq", "dnxhd", "yuv422p"},
                      RecordCase{".mkv", "h264", "h264", "yuv422p"},
                      RecordCase{".mkv", "hevc", "hevc", "yuv422p"},
                      RecordCase{".mp4", "", "h264", "yuv422p"},
                      RecordCase{".nut", "rawvideo", "rawvideo", "uyvy422"},
                      RecordCase{".y4m", "", "rawvideo", "yuv422p"}),
    [](const auto& param_info) {
      std::string name = std::string(param_info.param.ext + 1) + "_" +
                         (*param_info.param.codec ? param_info.param.codec : "default");
      return name;
    });

}  // namespace
}  // namespace rdmavideo::testing
