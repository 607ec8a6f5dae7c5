// SPDX-License-Identifier: Apache-2.0
// The documented recordings (docs/gstreamer.md) downstream of rdmasrc, run as users run them
// (gst-launch-1.0 -e, one process), against senders whose timing or timestamps are odd
// (tests/gst/odd_sender.cpp): pictures whose pts jump, sound 3 s late, a flood of small
// chunks before the first picture, sound with no picture at all, a track that pauses, a
// sender that dies. Whichever, the pipeline never blocks, ends when the sender ends or on
// Ctrl+C, and leaves a file that plays to its end without a decoder's complaint.
//
// Before rdmasrc pushed each pad from a thread of its own, stamped every source on one time
// line that moves a straying source back, and filled holes in the sound with silence, each of
// these left qtmux waiting for good (jump, late, flood, no pictures: no moov, Ctrl+C could not
// get through) or failed it ("timestamps are drifting": pause; an ERROR: a dead sender).
#include <gtest/gtest.h>

#include <csignal>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "gst_test_support.hpp"
#include "output_checks.hpp"
#include "process.hpp"
#include "temp_dir.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

// What ffmpeg and ffprobe make of a recording.
struct Played {
  std::string streams;  // "codec,type" a line
  std::string errors;   // what ffmpeg said decoding every packet to the end
  double seconds = 0;   // the container's duration
};

Played play(const std::filesystem::path& file) {
  Played p;
  p.streams = stream_codecs(file);
  p.errors = capture("ffmpeg -nostdin -v error -i '" + file.string() + "' -f null - 2>&1");
  const std::string duration =
      capture("ffprobe -v error -show_entries format=duration -of csv=p=0 '" + file.string() + "'");
  p.seconds = std::atof(duration.c_str());
  return p;
}

// The recipes: rdmasrc's picture and audio_0 into a muxer, the picture raw (qtmux,
// matroskamux) or coded (mp4mux, which takes neither raw video nor PCM in GStreamer 1.22).
std::string recipe(const std::string& mux, uint16_t port, const std::filesystem::path& out) {
  const std::string src = "rdmasrc name=s address=127.0.0.1 port=" + std::to_string(port);
  const std::string sink = " ! filesink location=" + out.string();
  if (mux == "qtmux") {  // docs/gstreamer.md, as written (one track)
    return src + " ! queue ! videoconvert ! video/x-raw,format=UYVY ! queue ! qtmux name=m" + sink +
           " s.audio_0 ! queue ! audioconvert ! m.";
  }
  if (mux == "matroskamux") {
    return src + " ! queue ! videoconvert ! queue ! matroskamux name=m" + sink +
           " s.audio_0 ! queue ! audioconvert ! m.";
  }
  // vp9parse gives mp4mux the chroma format and depth vp9enc's caps leave out, and the caps
  // name a chroma siting: GStreamer 1.22's mp4mux crashes on VP9 caps without one.
  return src +
         " ! queue ! videoconvert ! video/x-raw,format=I420,chroma-site=mpeg2 ! vp9enc deadline=1 "
         "! vp9parse ! queue ! mp4mux name=m" +
         sink + " s.audio_0 ! queue ! audioconvert ! opusenc ! m.";
}

struct Case {
  std::string odd;  // odd_sender --case
  std::string mux;  // the recipe's muxer
  bool interrupt;   // Ctrl+C before the sender ends, instead of the sender ending
};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  std::string name =
      info.param.odd + "_" + info.param.mux + (info.param.interrupt ? "_CtrlC" : "_SenderEnds");
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class OddSender : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    init_gstreamer();
    if (std::string(RDMAVIDEO_GST_LAUNCH).empty())
      GTEST_SKIP() << "gst-launch-1.0 is not installed";
  }
};

TEST_P(OddSender, TheRecipeEndsAndItsFilePlays) {
  const Case c = GetParam();
  TempDir dir;
  const auto out = dir / (c.mux == "matroskamux" ? "take.mkv" : "take.mov");
  const uint16_t port = free_port();
  Redirect out_file;
  out_file.stdout_path = (dir / "gst.stdout").string();
  Process gst(gst_launch_argv(recipe(c.mux, port, out), {"-e"}), dir / "gst.stderr", out_file);
  ASSERT_TRUE(wait_prerolling(dir / "gst.stdout", gst)) << read_file(dir / "gst.stderr");
  const double seconds = 6;
  Process send({RDMAVIDEO_ODD_SENDER, "--connect", "127.0.0.1:" + std::to_string(port), "--case",
                c.odd, "--seconds", std::to_string(seconds)},
               dir / "send.stderr");
  if (c.interrupt) {
    std::this_thread::sleep_for(4s);
    gst.signal(SIGINT);  // what Ctrl+C does: gst-launch-1.0 -e sends EOS into the pipeline
  }
  const auto gst_exit = gst.wait(60s);
  if (!gst_exit) gst.signal(SIGKILL);
  ASSERT_TRUE(gst_exit) << "the pipeline never ended: something blocked\n"
                        << read_file(dir / "gst.stdout") << read_file(dir / "gst.stderr");
  EXPECT_EQ(*gst_exit, 0) << read_file(dir / "gst.stdout") << read_file(dir / "gst.stderr");
  const std::string said = read_file(dir / "gst.stdout") + read_file(dir / "gst.stderr");
  EXPECT_EQ(said.find("ERROR"), std::string::npos) << said;
  EXPECT_EQ(said.find("CRITICAL"), std::string::npos) << said;
  send.signal(SIGTERM);
  send.wait(10s);

  const Played p = play(out);
  EXPECT_TRUE(p.errors.empty()) << "decoding " << out.filename() << ":\n" << p.errors;
  EXPECT_NE(p.streams.find(",audio"), std::string::npos) << p.streams;
  if (c.odd != "no-pictures") {
    EXPECT_NE(p.streams.find(",video"), std::string::npos) << p.streams;
  }
  // As long as what was sent (the dead sender: the 2 s before it died; Ctrl+C at about 4 s).
  const double sent = c.odd == "die" ? 2.0 : c.interrupt ? 3.0 : seconds - 0.5;
  EXPECT_GE(p.seconds, sent - 1.0) << p.streams;
  EXPECT_LE(p.seconds, seconds + 1.0) << p.streams;
  std::printf("%s into %s%s: %.2f s, %s", c.odd.c_str(), c.mux.c_str(),
              c.interrupt ? " (Ctrl+C)" : "", p.seconds, p.streams.c_str());
}

// Every odd sender into the documented qtmux recipe, ending both ways.
INSTANTIATE_TEST_SUITE_P(
    Qtmux, OddSender,
    ::testing::Values(Case{"jump", "qtmux", false}, Case{"jump", "qtmux", true},
                      Case{"late", "qtmux", false}, Case{"late", "qtmux", true},
                      Case{"flood", "qtmux", false}, Case{"flood", "qtmux", true},
                      Case{"no-pictures", "qtmux", false}, Case{"no-pictures", "qtmux", true},
                      Case{"pause", "qtmux", false}, Case{"pause", "qtmux", true},
                      Case{"die", "qtmux", false}),
    name_of);

// A track that pauses and a sender that dies, into the other muxers.
INSTANTIATE_TEST_SUITE_P(OtherMuxers, OddSender,
                         ::testing::Values(Case{"pause", "matroskamux", false},
                                           Case{"die", "matroskamux", false},
                                           Case{"late", "matroskamux", true},
                                           Case{"pause", "mp4mux", false},
                                           Case{"die", "mp4mux", false}),
                         name_of);

}  // namespace
}  // namespace rdmavideo::testing

namespace rdmavideo::testing {
namespace {

struct Stamps {
  std::mutex mu;
  std::vector<GstClockTime> pictures;
  GstClockTime sound = 0;  // sound pushed, in duration
};

// Live: one chunk of sound (at 2 s) and one picture (at 3 s) stamped an hour ahead. Every
// picture still gets a stamp of its own, about a frame after the one before, the sound goes
// on, and the two moves are counted. (The hour became the live stream's latency for good:
// every later picture was clamped to one pts, 113 pictures with one stamp.)
TEST(OddSenderLive, OneTimestampAnHourAheadDoesNotHoldTheTimeLine) {
  init_gstreamer();
  Stamps stamps;
  auto receiver = parse_pipeline(
      "rdmasrc name=s address=127.0.0.1 port=0 is-live=true ! fakesink sync=false "
      "s.audio_0 ! fakesink name=a sync=false");
  auto src = element(receiver.get(), "s");
  GstPad* video = gst_element_get_static_pad(src.get(), "src");
  gst_pad_add_probe(
      video, GST_PAD_PROBE_TYPE_BUFFER,
      +[](GstPad*, GstPadProbeInfo* info, gpointer data) {
        auto* s = static_cast<Stamps*>(data);
        std::lock_guard lock(s->mu);
        s->pictures.push_back(GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)));
        return GST_PAD_PROBE_OK;
      },
      &stamps, nullptr);
  gst_object_unref(video);
  auto a = element(receiver.get(), "a");
  GstPad* sound = gst_element_get_static_pad(a.get(), "sink");
  gst_pad_add_probe(
      sound, GST_PAD_PROBE_TYPE_BUFFER,
      +[](GstPad*, GstPadProbeInfo* info, gpointer data) {
        auto* s = static_cast<Stamps*>(data);
        std::lock_guard lock(s->mu);
        s->sound += GST_BUFFER_DURATION(GST_PAD_PROBE_INFO_BUFFER(info));
        return GST_PAD_PROBE_OK;
      },
      &stamps, nullptr);
  gst_object_unref(sound);
  ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  guint port = 0;
  g_object_get(src.get(), "bound-port", &port, nullptr);
  TempDir dir;
  Process send({RDMAVIDEO_ODD_SENDER, "--connect", "127.0.0.1:" + std::to_string(port), "--case",
                "hour", "--live", "--seconds", "5"},
               dir / "send.stderr");
  EXPECT_EQ(send.wait(30s), 0) << send.stderr_text();
  const BusLog end = wait_for_end(receiver.get(), 30s);
  EXPECT_TRUE(end.eos) << end.error.value_or("");
  EXPECT_TRUE(end.warned("timestamps jumped")) << "the jump is said";
  const uint64_t jumps = u64_field(stats_of(src.get()).get(), "jumps");
  gst_element_set_state(receiver.get(), GST_STATE_NULL);

  std::lock_guard lock(stamps.mu);
  ASSERT_GE(stamps.pictures.size(), 140u);
  std::set<GstClockTime> distinct(stamps.pictures.begin(), stamps.pictures.end());
  EXPECT_GE(distinct.size(), stamps.pictures.size() - 1) << "pictures sharing a stamp";
  size_t about_a_frame = 0;
  for (size_t i = 1; i < stamps.pictures.size(); ++i) {
    const GstClockTime d = stamps.pictures[i] - stamps.pictures[i - 1];
    about_a_frame += d > 10 * GST_MSECOND && d < 60 * GST_MSECOND;
  }
  EXPECT_GE(about_a_frame, stamps.pictures.size() * 9 / 10);
  EXPECT_GE(jumps, 2u) << "there and back, at least for the picture";
  EXPECT_NEAR(static_cast<double>(stamps.sound) / GST_SECOND, 5.0, 0.3);
  std::printf("%zu pictures, %zu distinct stamps, %zu a frame apart; %llu jumps\n",
              stamps.pictures.size(), distinct.size(), about_a_frame,
              static_cast<unsigned long long>(jumps));
}

}  // namespace
}  // namespace rdmavideo::testing
