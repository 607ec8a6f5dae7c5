// SPDX-License-Identifier: Apache-2.0
// Sound through the GStreamer elements: rdmasink's audio_N request pads, each a track of the
// stream, and rdmasrc's audio_N sometimes pads, one for each track a sender starts.
//
// As users run them (gst-launch-1.0 processes against the command-line peers, their sync
// measured on the recordings by tests/support/av_sync.py: every beep against its flash), and
// in one process where what downstream sees must be counted: pads that come and go with the
// tracks, GAP events for a track's silence, one running time for picture and sound.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/audio/audio.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "gst_test_support.hpp"
#include "output_checks.hpp"
#include "process.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/sender_session.hpp"
#include "temp_dir.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

class GstAudio : public ::testing::Test {
 protected:
  void SetUp() override {
    init_gstreamer();  // also sets the environment the children inherit
    if (std::string(RDMAVIDEO_GST_LAUNCH).empty())
      GTEST_SKIP() << "gst-launch-1.0 is not installed";
  }
};

// Calls `probe` for every picture rdmasrc `src` pushes.
void probe_pictures(GstElement* src, GstPadProbeCallback probe, gpointer data) {
  GstPad* video = gst_element_get_static_pad(src, "src");
  gst_pad_add_probe(video, GST_PAD_PROBE_TYPE_BUFFER, probe, data, nullptr);
  gst_object_unref(video);
}

// Sets a receiving pipeline playing: the port its rdmasrc `src` listens on, 0 where it did
// not start.
guint play_and_port(GstElement* pipeline, GstElement* src) {
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) return 0;
  guint port = 0;
  g_object_get(src, "bound-port", &port, nullptr);
  return port;
}

// A clip of `seconds` at 30 fps: 320x180, white on each whole second and black between, and
// a PCM track for each tone, beeping on the flashes (quiet tone between). Raw video and PCM
// in .mov, which decodebin opens with GStreamer's own plugins.
std::filesystem::path flash_clip(const TempDir& dir, const std::vector<int>& tones, int seconds) {
  const auto clip = dir / "flashes.mov";
  std::string make =
      "ffmpeg -nostdin -v error -y -f lavfi -i \"color=c=black:s=320x180:r=30,format=yuv420p,"
      "geq=lum='if(lt(mod(N\\,30)\\,1)\\,235\\,16)':cb=128:cr=128\"";
  std::string maps = " -map 0:v";
  for (size_t i = 0; i < tones.size(); ++i) {
    const std::string beep =
        "if(lt(mod(t\\,1)\\,0.1)\\,0.5\\,0.01)*sin(2*PI*" + std::to_string(tones[i]) + "*t)";
    make += " -f lavfi -i \"aevalsrc='" + beep + "|" + beep + "':s=48000\"";
    maps += " -map " + std::to_string(i + 1) + ":a";
  }
  make += maps + " -t " + std::to_string(seconds) +
          " -c:v rawvideo -pix_fmt uyvy422 -c:a pcm_s16le '" + clip.string() + "'";
  EXPECT_EQ(shell(make), 0) << make;
  return clip;
}

// Each track of `file` in sync with the picture (3 beeps at least), and their tones `tones`
// in any order.
void expect_tracks_in_sync(const std::filesystem::path& file, const std::set<int>& tones) {
  std::set<int> heard;
  for (int track = 0; track < static_cast<int>(tones.size()); ++track) {
    SCOPED_TRACE("audio track " + std::to_string(track));
    const auto m = av_sync(file, track);
    ASSERT_TRUE(m.contains("tone_hz")) << m.dump();
    const int hz = static_cast<int>(std::lround(m["tone_hz"].get<double>() / 10) * 10);
    expect_in_sync(m, 3, hz);
    heard.insert(hz);
  }
  EXPECT_EQ(heard, tones) << "each track carries its own tone";
}

// gst-launch-1.0 filesrc ! decodebin into rdmasink's video pad and two audio pads, received
// by rdmavideo-recv into a .mov: two tracks, each its own tone, each on its flashes.
TEST_F(GstAudio, RdmasinkSendsADecodedClipsTwoTracksEachItsOwnToneInSync) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  TempDir dir;
  const auto clip = flash_clip(dir, {1000, 500}, 4);
  const auto out = dir / "out.mov";
  Process recv({RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0", "--output", out.string()},
               dir / "recv.stderr");
  const auto port = recv.wait_for_stderr(R"(listening on 127\.0\.0\.1:(\d+))", 30s);
  ASSERT_TRUE(port) << recv.stderr_text();
  Process gst(
      gst_launch_argv("filesrc location=" + clip.string() +
                      " ! decodebin name=d d. ! video/x-raw ! queue ! videoconvert ! rdmasink "
                      "name=s transport=tcp port=" +
                      *port +
                      " d. ! audio/x-raw ! queue ! audioconvert ! s.audio_0"
                      " d. ! audio/x-raw ! queue ! audioconvert ! s.audio_1"),
      dir / "gst.stderr");
  ASSERT_EQ(gst.wait(60s), 0) << gst.stderr_text();
  ASSERT_EQ(recv.wait(60s), 0) << recv.stderr_text();
  const std::string streams = stream_codecs(out);
  EXPECT_EQ(streams.find("prores,video"), 0u) << streams;
  const auto first = streams.find("pcm_s24le,audio");
  ASSERT_NE(first, std::string::npos) << streams;
  EXPECT_NE(streams.find("pcm_s24le,audio", first + 1), std::string::npos) << "two audio tracks\n"
                                                                           << streams;
  expect_tracks_in_sync(out, {1000, 500});
  EXPECT_NE(recv.stderr_text().find("audio track 1"), std::string::npos) << recv.stderr_text();
}

// rdmavideo-send -i clip --audio all into rdmasrc, each audio_N pad into qtmux beside the
// picture: the file has every track, each on its flashes, each its own tone.
TEST_F(GstAudio, RdmasrcGivesEveryTrackOfASenderAPadAndQtmuxKeepsThemInSync) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: rdmavideo-send cannot read the clip";
#endif
  TempDir dir;
  const auto clip = flash_clip(dir, {1000, 500}, 4);
  const auto out = dir / "out.mov";
  const uint16_t port = free_port();
  Redirect out_file;
  out_file.stdout_path = (dir / "gst.stdout").string();
  Process gst(
      gst_launch_argv("rdmasrc name=s address=127.0.0.1 port=" + std::to_string(port) +
                          " ! queue ! videoconvert ! video/x-raw,format=UYVY ! queue ! qtmux "
                          "name=m ! filesink location=" +
                          out.string() +
                          " s.audio_0 ! queue ! audioconvert ! m."
                          " s.audio_1 ! queue ! audioconvert ! m.",
                      {"-e"}),
      dir / "gst.stderr", out_file);
  ASSERT_TRUE(wait_prerolling(dir / "gst.stdout", gst)) << gst.stderr_text();
  Process send({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "-i",
                clip.string(), "--audio", "all", "--quiet"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(gst.wait(60s), 0) << gst.stderr_text();
  const std::string streams = stream_codecs(out);
  const auto first = streams.find(",audio");
  ASSERT_NE(first, std::string::npos) << streams;
  EXPECT_NE(streams.find(",audio", first + 1), std::string::npos) << "two audio tracks\n"
                                                                  << streams;
  expect_tracks_in_sync(out, {1000, 500});
}

// Planar sound through both elements: a stereo track made of two tones (440 Hz left, 880 Hz
// right), non-interleaved and titled, into rdmasink's audio pad, out of rdmasrc's as the
// sender sent it (planar, its channel mask, its title), each channel its own tone: no channel
// swapped or interleaved.
TEST_F(GstAudio, PlanarSoundKeepsItsChannelsThroughBothElements) {
  auto receiver = parse_pipeline(
      "rdmasrc name=r address=127.0.0.1 port=0 ! queue ! fakesink sync=false "
      "r.audio_0 ! queue ! appsink name=out sync=false");
  auto r = element(receiver.get(), "r");
  auto out = element(receiver.get(), "out");
  TitlesSeen titles;
  watch_titles(out.get(), titles);
  const guint port = play_and_port(receiver.get(), r.get());
  ASSERT_NE(port, 0u);
  auto sender = parse_pipeline(
      "videotestsrc num-buffers=60 ! video/x-raw,format=UYVY,width=64,height=36,framerate=30/1 "
      "! rdmasink name=s transport=tcp sync=false port=" +
      std::to_string(port) +
      " interleave name=i ! audioconvert ! audio/x-raw,format=S16LE,layout=non-interleaved,"
      "rate=48000,channels=2 ! taginject tags=title=Program ! s.audio_0"
      " audiotestsrc freq=440 num-buffers=200 samplesperbuffer=480 ! audio/x-raw,channels=1,"
      "rate=48000 ! i. audiotestsrc freq=880 num-buffers=200 samplesperbuffer=480 "
      "! audio/x-raw,channels=1,rate=48000 ! i.");
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  std::vector<int16_t> left, right;
  UniqueCaps caps;
  for (;;) {
    UniqueSample sample(gst_app_sink_try_pull_sample(GST_APP_SINK(out.get()), 30 * GST_SECOND));
    if (!sample) break;
    if (!caps) caps.reset(gst_caps_ref(gst_sample_get_caps(sample.get())));
    GstAudioInfo info;
    ASSERT_TRUE(gst_audio_info_from_caps(&info, gst_sample_get_caps(sample.get())));
    GstAudioBuffer planes;
    ASSERT_TRUE(
        gst_audio_buffer_map(&planes, &info, gst_sample_get_buffer(sample.get()), GST_MAP_READ));
    ASSERT_EQ(planes.n_planes, 2);
    const auto* l = static_cast<const int16_t*>(planes.planes[0]);
    const auto* rr = static_cast<const int16_t*>(planes.planes[1]);
    left.insert(left.end(), l, l + planes.n_samples);
    right.insert(right.end(), rr, rr + planes.n_samples);
    gst_audio_buffer_unmap(&planes);
  }
  ASSERT_NE(caps, nullptr) << "no sound arrived";
  GstAudioInfo info;
  ASSERT_TRUE(gst_audio_info_from_caps(&info, caps.get()));
  EXPECT_EQ(GST_AUDIO_INFO_LAYOUT(&info), GST_AUDIO_LAYOUT_NON_INTERLEAVED);
  EXPECT_EQ(GST_AUDIO_INFO_FORMAT(&info), GST_AUDIO_FORMAT_S16LE);
  EXPECT_EQ(info.position[0], GST_AUDIO_CHANNEL_POSITION_FRONT_LEFT);
  EXPECT_EQ(info.position[1], GST_AUDIO_CHANNEL_POSITION_FRONT_RIGHT);
  // Each channel's tone from its zero crossings.
  const auto hz = [](const std::vector<int16_t>& v) {
    size_t crossings = 0;
    for (size_t i = 1; i < v.size(); ++i) crossings += (v[i - 1] < 0) != (v[i] < 0);
    return static_cast<double>(crossings) / 2 / (static_cast<double>(v.size()) / 48000);
  };
  EXPECT_NEAR(static_cast<double>(left.size()) / 48000, 2.0, 0.05);
  EXPECT_NEAR(hz(left), 440, 5);
  EXPECT_NEAR(hz(right), 880, 5);
  {
    std::lock_guard lock(titles.mu);
    EXPECT_EQ(titles.seen, std::vector<std::string>{"Program"}) << "the track's title tag";
  }
  gst_element_set_state(sender.get(), GST_STATE_NULL);
  gst_element_set_state(receiver.get(), GST_STATE_NULL);
}

// What downstream of one audio pad saw.
struct PadLog {
  std::string name;
  uint64_t pictures_before = 0;  // pictures rdmasrc had pushed when the pad came
  uint64_t buffers = 0;
  GstClockTime sound = 0;  // the durations of the buffers of sound added up
  // Silence: buffers flagged GAP, and GAP events, (start, duration) of each.
  std::vector<std::pair<GstClockTime, GstClockTime>> gaps;
  uint64_t gap_events = 0;
  uint64_t discontinuities = 0;  // a buffer not starting where the one before ended
  GstClockTime first_pts = GST_CLOCK_TIME_NONE, end = 0;
  bool eos = false;
  bool removed = false;
  uint64_t pictures_at_removal = 0;
};

struct Watch {
  std::mutex mu;
  std::vector<PadLog> pads;
  uint64_t pictures = 0;
  bool no_more_pads = false;
  uint64_t pictures_at_no_more_pads = 0;
  GstElement* pipeline = nullptr;
  PadLog* find(GstPad* pad) {
    for (auto& p : pads) {
      if (p.name == GST_PAD_NAME(pad)) return &p;
    }
    return nullptr;
  }
};

GstPadProbeReturn audio_probe(GstPad* pad, GstPadProbeInfo* info, gpointer data) {
  auto* w = static_cast<Watch*>(data);
  std::lock_guard lock(w->mu);
  PadLog* log = w->find(pad);
  if (!log) return GST_PAD_PROBE_OK;
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
    ++log->buffers;
    if (GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_GAP)) {
      log->gaps.emplace_back(GST_BUFFER_PTS(b), GST_BUFFER_DURATION(b));
    } else {
      log->sound += GST_BUFFER_DURATION(b);
    }
    if (!GST_CLOCK_TIME_IS_VALID(log->first_pts)) {
      log->first_pts = GST_BUFFER_PTS(b);
    } else if (GST_BUFFER_PTS(b) + GST_USECOND < log->end ||
               GST_BUFFER_PTS(b) > log->end + GST_USECOND) {
      ++log->discontinuities;  // rounding of each duration to the ns aside
    }
    log->end = GST_BUFFER_PTS(b) + GST_BUFFER_DURATION(b);
  } else if (GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_GAP) {
      GstClockTime ts = 0, duration = 0;
      gst_event_parse_gap(e, &ts, &duration);
      log->gaps.emplace_back(ts, duration);
      ++log->gap_events;
    } else if (GST_EVENT_TYPE(e) == GST_EVENT_EOS) {
      log->eos = true;
    }
  }
  return GST_PAD_PROBE_OK;
}

void pad_added(GstElement* src, GstPad* pad, gpointer data) {
  auto* w = static_cast<Watch*>(data);
  if (std::string(GST_PAD_NAME(pad)).rfind("audio_", 0) != 0) return;
  {
    std::lock_guard lock(w->mu);
    PadLog log;
    log.name = GST_PAD_NAME(pad);
    log.pictures_before = w->pictures;
    w->pads.push_back(log);
  }
  gst_pad_add_probe(
      pad,
      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      audio_probe, w, nullptr);
  // A sink that takes anything, synchronised with the pipeline.
  GstElement* sink = gst_element_factory_make("fakesink", nullptr);
  g_object_set(sink, "sync", FALSE, "async", FALSE, nullptr);
  gst_bin_add(GST_BIN(w->pipeline), sink);
  gst_element_sync_state_with_parent(sink);
  GstPad* sink_pad = gst_element_get_static_pad(sink, "sink");
  EXPECT_EQ(gst_pad_link(pad, sink_pad), GST_PAD_LINK_OK);
  gst_object_unref(sink_pad);
  (void)src;
}

void pad_removed(GstElement*, GstPad* pad, gpointer data) {
  auto* w = static_cast<Watch*>(data);
  std::lock_guard lock(w->mu);
  if (PadLog* log = w->find(pad)) {
    log->removed = true;
    log->pictures_at_removal = w->pictures;
  }
}

void no_more_pads(GstElement*, gpointer data) {
  auto* w = static_cast<Watch*>(data);
  std::lock_guard lock(w->mu);
  w->no_more_pads = true;
  w->pictures_at_no_more_pads = w->pictures;
}

GstPadProbeReturn video_probe(GstPad*, GstPadProbeInfo*, gpointer data) {
  auto* w = static_cast<Watch*>(data);
  std::lock_guard lock(w->mu);
  ++w->pictures;
  return GST_PAD_PROBE_OK;
}

// rdmasrc's `tracks`: a track chosen gets its pad, one not chosen none; a value that is not a
// choice fails the start, naming it.
TEST_F(GstAudio, RdmasrcTracksChoosesWhichTracksGetPads) {
  {
    auto bad = parse_pipeline("rdmasrc address=127.0.0.1 port=0 tracks=1,x ! fakesink");
    EXPECT_EQ(gst_element_set_state(bad.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    auto error = pop_message(bad.get(), GST_MESSAGE_ERROR, 10s);
    ASSERT_NE(error, nullptr);
    EXPECT_NE(describe(error.get()).find("tracks \"1,x\" is not all, none or track numbers"),
              std::string::npos)
        << describe(error.get());
    gst_element_set_state(bad.get(), GST_STATE_NULL);
  }
  TempDir dir;
  for (const std::string tracks : {"none", "1", "0", "all"}) {
    SCOPED_TRACE("tracks=" + tracks);
    const bool chosen = tracks == "0" || tracks == "all";  // the sender's one track is 0
    auto receiver = parse_pipeline("rdmasrc name=src address=127.0.0.1 port=0 tracks=" + tracks +
                                   " ! queue ! fakesink sync=false" +
                                   (chosen ? " src.audio_0 ! queue ! fakesink sync=false" : ""));
    auto src = element(receiver.get(), "src");
    Watch w;
    g_signal_connect(src.get(), "pad-added", G_CALLBACK(+[](GstElement*, GstPad* pad, gpointer d) {
                       PadLog log;
                       log.name = GST_PAD_NAME(pad);
                       std::lock_guard lock(static_cast<Watch*>(d)->mu);
                       static_cast<Watch*>(d)->pads.push_back(log);
                     }),
                     &w);
    ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    guint port = 0;
    g_object_get(src.get(), "bound-port", &port, nullptr);
    Process send({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(port), "--testsrc",
                  "-s", "64x36", "-r", "30", "--tone", "1000", "--frames", "30", "--quiet"},
                 dir / ("send-" + tracks + ".stderr"));
    auto end = pop_message(receiver.get(),
                           static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR), 30s);
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(GST_MESSAGE_TYPE(end.get()), GST_MESSAGE_EOS) << describe(end.get());
    {
      std::lock_guard lock(w.mu);
      if (chosen) {
        ASSERT_EQ(w.pads.size(), 1u);
        EXPECT_EQ(w.pads[0].name, "audio_0");
      } else {
        EXPECT_TRUE(w.pads.empty()) << "a pad for a track not chosen: " << w.pads[0].name;
      }
    }
    gst_element_set_state(receiver.get(), GST_STATE_NULL);
    EXPECT_EQ(send.wait(10s), 0) << send.stderr_text();
  }
}

// A sender (the library's session, as OBS's output uses it) of 6 s of pictures whose tracks
// do what senders' tracks do: track 0 is there from the start and stops for 2 s (2 s to 4 s)
// then goes on; track 1 starts late (at 1 s) and ends early (at 3 s). rdmasrc's pads come and
// go as the tracks do, downstream sees the silence as silence (buffers flagged GAP: qtmux
// fails a PCM track whose timestamps leave a hole, and matroskamux does not move on over a
// GAP event), every track contiguous, and nothing blocks: every picture and the end arrive.
TEST_F(GstAudio, RdmasrcPadsComeAndGoWithTheTracksAndSilenceIsFilled) {
  Watch w;  // outlives the pipeline, whose pads go when it does
  auto receiver =
      parse_pipeline("rdmasrc name=src address=127.0.0.1 port=0 ! fakesink name=video sync=false");
  auto src = element(receiver.get(), "src");
  w.pipeline = receiver.get();
  g_signal_connect(src.get(), "pad-added", G_CALLBACK(pad_added), &w);
  g_signal_connect(src.get(), "pad-removed", G_CALLBACK(pad_removed), &w);
  g_signal_connect(src.get(), "no-more-pads", G_CALLBACK(no_more_pads), &w);
  probe_pictures(src.get(), video_probe, &w);
  const guint port = play_and_port(receiver.get(), src.get());
  ASSERT_NE(port, 0u);

  constexpr int kFps = 30, kFrames = 6 * kFps;
  constexpr uint32_t kRate = 48000, kChunk = 480;  // 10 ms
  SenderSessionOptions options;
  options.transport = TransportKind::tcp;
  options.connect.endpoint = Endpoint{"127.0.0.1", static_cast<uint16_t>(port)};
  auto session = SenderSession::connect(options);
  ASSERT_TRUE(session) << session.error().message();
  auto format = proto::make_stream_start(PixelFormat::uyvy, 64, 36, {kFps, 1});
  ASSERT_TRUE(format);
  format->name = "tracks";
  ASSERT_TRUE((*session)->start_stream(*format, 4));
  proto::AudioStart stereo;
  stereo.sample_format = proto::SampleFormat::f32;
  stereo.sample_rate = kRate;
  stereo.channels = 2;
  stereo.channel_layout = 3;
  stereo.name = "program";
  auto track0 = (*session)->start_audio(stereo);
  ASSERT_TRUE(track0) << track0.error().message();
  uint32_t track1 = 0;
  bool track1_on = false;
  std::vector<float> samples(kChunk * 2, 0.25f);
  const auto bytes = std::as_bytes(std::span(samples));
  int64_t audio_at = 0;  // ns of audio sent so far, both tracks alike
  const int64_t frame_ns = 1'000'000'000 / kFps;
  const int64_t chunk_ns = int64_t{kChunk} * 1'000'000'000 / kRate;
  for (int f = 0; f < kFrames; ++f) {
    const int64_t pts = f * frame_ns;
    if (f == kFps) {  // 1 s: a second track starts
      proto::AudioStart late = stereo;
      late.name = "late";
      auto started = (*session)->start_audio(late);
      ASSERT_TRUE(started) << started.error().message();
      track1 = *started;
      track1_on = true;
    }
    if (f == 3 * kFps) {  // 3 s: it ends
      ASSERT_TRUE((*session)->end_audio(track1));
      track1_on = false;
    }
    // Sound up to the end of this picture.
    for (; audio_at < pts + frame_ns; audio_at += chunk_ns) {
      const bool paused = audio_at >= 2'000'000'000 && audio_at < 4'000'000'000;
      if (!paused) {
        ASSERT_TRUE((*session)->submit_audio(*track0, audio_at, kChunk, bytes));
      }
      if (track1_on) {
        ASSERT_TRUE((*session)->submit_audio(track1, audio_at, kChunk, bytes));
      }
    }
    auto buffer = (*session)->acquire_buffer();
    ASSERT_TRUE(buffer);
    auto sent = (*session)->submit(*buffer, FrameMeta{static_cast<uint64_t>(f), pts});
    ASSERT_TRUE(sent);
  }
  ASSERT_TRUE((*session)->end_stream());
  auto end = pop_message(receiver.get(),
                         static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR), 30s);
  ASSERT_NE(end, nullptr) << "the pipeline never ended: something blocked";
  ASSERT_EQ(GST_MESSAGE_TYPE(end.get()), GST_MESSAGE_EOS) << describe(end.get());
  gst_element_set_state(receiver.get(), GST_STATE_NULL);

  std::lock_guard lock(w.mu);
  EXPECT_EQ(w.pictures, static_cast<uint64_t>(kFrames)) << "every picture arrived";
  EXPECT_TRUE(w.no_more_pads);
  ASSERT_EQ(w.pads.size(), 2u);
  const PadLog& program = w.pads[0];
  const PadLog& late = w.pads[1];
  EXPECT_EQ(program.name, "audio_0");
  EXPECT_EQ(late.name, "audio_1");
  EXPECT_EQ(program.pictures_before, 0u) << "a track started before the first picture";
  EXPECT_LE(w.pictures_at_no_more_pads, 1u) << "no-more-pads at the first picture";
  // Pads come as their tracks arrive; the pictures counted are those pushed by then, a few
  // behind what has arrived.
  EXPECT_GE(late.pictures_before, static_cast<uint64_t>(kFps) - 10) << "the late track's pad "
                                                                       "came when it started";
  EXPECT_LE(late.pictures_before, static_cast<uint64_t>(kFps) + 10);
  // The late track ended at 3 s: EOS on its pad, and the pad gone, while pictures went on.
  EXPECT_TRUE(late.eos);
  EXPECT_TRUE(late.removed);
  EXPECT_LT(late.pictures_at_removal, static_cast<uint64_t>(4 * kFps));
  EXPECT_NEAR(static_cast<double>(late.first_pts) / GST_SECOND, 1.0, 0.05);
  EXPECT_NEAR(static_cast<double>(late.end) / GST_SECOND, 3.0, 0.05);
  EXPECT_TRUE(late.gaps.empty()) << "the late track had no silence";
  EXPECT_EQ(program.discontinuities, 0u) << "track 0 is contiguous, silence and all";
  EXPECT_EQ(late.discontinuities, 0u);
  EXPECT_EQ(program.gap_events, 0u) << "silence is buffers of it, not GAP events";
  // Track 0's silence, 2 s to 4 s, is silence flagged GAP and nothing else.
  GstClockTime silent = 0;
  for (const auto& [ts, duration] : program.gaps) {
    EXPECT_GE(ts + 10 * GST_MSECOND, 2 * GST_SECOND) << "a GAP before the silence";
    EXPECT_LE(ts + duration, 4 * GST_SECOND + 10 * GST_MSECOND) << "a GAP after the silence";
    silent += duration;
  }
  EXPECT_NEAR(static_cast<double>(silent) / GST_SECOND, 2.0, 0.02)
      << program.gaps.size() << " silent buffers";
  EXPECT_NEAR(static_cast<double>(program.end) / GST_SECOND, 6.0, 0.05);
  // 6 s of sound less 2 s of silence.
  EXPECT_NEAR(static_cast<double>(program.sound) / GST_SECOND, 4.0, 0.001)
      << program.buffers << " buffers";
  EXPECT_TRUE(program.eos);
}

// ---- Live: an appsrc pair (a flash each second, a 1 kHz beep on it) through rdmasink
// mode=live into rdmasrc is-live=true, in one process, each branch ending in a sink that
// syncs to the clock as an audio sink does. Every beep's stamp within a frame of its flash's
// (what a listener hears against what they see), and, over a long run, memory flat.

constexpr int kLiveFps = 30;
constexpr uint32_t kLiveRate = 48000;

// What the receiver pushed, as seen on its pads.
struct LiveLog {
  std::mutex mu;
  std::vector<GstClockTime> flashes;  // pts of white pictures
  std::vector<GstClockTime> beeps;    // pts of the first loud sample after half a second quiet
  uint64_t pictures = 0, samples = 0;
  uint64_t quiet = kLiveRate;  // samples since the last loud one
};

GstPadProbeReturn live_video(GstPad*, GstPadProbeInfo* info, gpointer data) {
  auto* log = static_cast<LiveLog*>(data);
  GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
  GstMapInfo map;
  if (!gst_buffer_map(b, &map, GST_MAP_READ)) return GST_PAD_PROBE_OK;
  const bool white = map.size > 1 && map.data[1] > 200;  // UYVY: the first luma sample
  gst_buffer_unmap(b, &map);
  std::lock_guard lock(log->mu);
  ++log->pictures;
  if (white) log->flashes.push_back(GST_BUFFER_PTS(b));
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn live_audio(GstPad*, GstPadProbeInfo* info, gpointer data) {
  auto* log = static_cast<LiveLog*>(data);
  GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
  GstMapInfo map;
  if (!gst_buffer_map(b, &map, GST_MAP_READ)) return GST_PAD_PROBE_OK;
  const auto* f = reinterpret_cast<const float*>(map.data);
  const size_t frames = map.size / (2 * sizeof(float));
  std::lock_guard lock(log->mu);
  for (size_t i = 0; i < frames; ++i) {
    if (std::abs(f[2 * i]) > 0.2f) {
      if (log->quiet >= kLiveRate / 2) {
        log->beeps.push_back(GST_BUFFER_PTS(b) +
                             gst_util_uint64_scale_int(i, GST_SECOND, kLiveRate));
      }
      log->quiet = 0;
    } else {
      ++log->quiet;
    }
  }
  log->samples += frames;
  gst_buffer_unmap(b, &map);
  return GST_PAD_PROBE_OK;
}

void live_audio_pad(GstElement*, GstPad* pad, gpointer data) {
  if (std::string(GST_PAD_NAME(pad)) != "audio_0") return;
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, live_audio, data, nullptr);
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void live_loop(int seconds) {
  LiveLog log;
  auto receiver = parse_pipeline(
      "rdmasrc name=r address=127.0.0.1 port=0 is-live=true ! queue ! fakesink sync=true "
      "r.audio_0 ! queue ! fakesink sync=true");
  auto r = element(receiver.get(), "r");
  g_signal_connect(r.get(), "pad-added", G_CALLBACK(live_audio_pad), &log);
  probe_pictures(r.get(), live_video, &log);
  const guint port = play_and_port(receiver.get(), r.get());
  ASSERT_NE(port, 0u);
  auto sender = parse_pipeline(
      "appsrc name=v is-live=true format=time caps=video/x-raw,format=UYVY,width=320,height=180,"
      "framerate=30/1 ! rdmasink name=s mode=live transport=tcp sync=false port=" +
      std::to_string(port) +
      " appsrc name=a is-live=true format=time caps=audio/x-raw,format=F32LE,"
      "layout=interleaved,rate=48000,channels=2,channel-mask=(bitmask)0x3 ! s.audio_0");
  auto v = element(sender.get(), "v");
  auto a = element(sender.get(), "a");
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);

  // The sources, in real time: a 10 ms chunk of sound each step, a picture when one is due.
  constexpr size_t kPictureBytes = 320 * 180 * 2;
  constexpr uint32_t kChunk = kLiveRate / 100;
  const int64_t frame_ns = 1'000'000'000 / kLiveFps;
  const auto start = std::chrono::steady_clock::now();
  size_t warm_rss = 0;
  int64_t picture = 0;
  for (int64_t step = 0; step < int64_t{seconds} * 100; ++step) {
    const int64_t at = step * 10'000'000;
    std::this_thread::sleep_until(start + std::chrono::nanoseconds(at));
    GstBuffer* sound = gst_buffer_new_allocate(nullptr, kChunk * 2 * sizeof(float), nullptr);
    GstMapInfo map;
    gst_buffer_map(sound, &map, GST_MAP_WRITE);
    auto* f = reinterpret_cast<float*>(map.data);
    for (uint32_t i = 0; i < kChunk; ++i) {
      const double t = static_cast<double>(at) / 1e9 + static_cast<double>(i) / kLiveRate;
      const double amplitude = std::fmod(t, 1.0) < 0.1 ? 0.5 : 0.01;
      f[2 * i] = f[2 * i + 1] = static_cast<float>(amplitude * std::sin(2 * M_PI * 1000 * t));
    }
    gst_buffer_unmap(sound, &map);
    GST_BUFFER_PTS(sound) = static_cast<GstClockTime>(at);
    GST_BUFFER_DURATION(sound) = 10 * GST_MSECOND;
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(a.get()), sound), GST_FLOW_OK);
    for (; picture * frame_ns <= at; ++picture) {
      GstBuffer* frame = gst_buffer_new_allocate(nullptr, kPictureBytes, nullptr);
      gst_buffer_map(frame, &map, GST_MAP_WRITE);
      const bool white = picture % kLiveFps == 0;
      for (size_t i = 0; i < kPictureBytes; i += 2) {
        map.data[i] = 128;
        map.data[i + 1] = white ? 235 : 16;
      }
      gst_buffer_unmap(frame, &map);
      GST_BUFFER_PTS(frame) = static_cast<GstClockTime>(picture * frame_ns);
      GST_BUFFER_DURATION(frame) = static_cast<GstClockTime>(frame_ns);
      ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(v.get()), frame), GST_FLOW_OK);
    }
    if (step == int64_t{seconds} * 25) warm_rss = resident_bytes();
  }
  gst_app_src_end_of_stream(GST_APP_SRC(v.get()));
  gst_app_src_end_of_stream(GST_APP_SRC(a.get()));
  auto sent = pop_message(sender.get(),
                          static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR), 30s);
  ASSERT_NE(sent, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(sent.get()), GST_MESSAGE_EOS) << describe(sent.get());
  auto received = pop_message(
      receiver.get(), static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR), 30s);
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(received.get()), GST_MESSAGE_EOS) << describe(received.get());
  const size_t end_rss = resident_bytes();
  gst_element_set_state(sender.get(), GST_STATE_NULL);
  gst_element_set_state(receiver.get(), GST_STATE_NULL);

  std::lock_guard lock(log.mu);
  EXPECT_GE(log.pictures, static_cast<uint64_t>(seconds * kLiveFps * 95 / 100));
  EXPECT_NEAR(static_cast<double>(log.samples) / kLiveRate, seconds, 0.05 * seconds);
  ASSERT_GE(log.beeps.size(), static_cast<size_t>(seconds - 1));
  // Each beep against the flash nearest it: within a frame, from the first second to the last.
  double worst_ms = 0;
  for (const GstClockTime beep : log.beeps) {
    double nearest = 1e9;
    for (const GstClockTime flash : log.flashes) {
      const double d = (static_cast<double>(beep) - static_cast<double>(flash)) / 1e6;
      if (std::abs(d) < std::abs(nearest)) nearest = d;
    }
    worst_ms = std::max(worst_ms, std::abs(nearest));
  }
  EXPECT_LE(worst_ms, 1000.0 / kLiveFps)
      << log.beeps.size() << " beeps, " << log.flashes.size() << " flashes";
  // Memory: no more than 16 MiB grown after the first quarter (the ring, the queues and the
  // sinks' buffers are made by then).
  if (seconds >= 60) {
    EXPECT_LT(end_rss, warm_rss + (16u << 20))
        << "resident " << warm_rss / 1048576 << " MiB at a quarter, " << end_rss / 1048576
        << " MiB at the end";
  }
  std::printf(
      "live loop %d s: %zu beeps on %zu flashes, worst %.2f ms apart; resident %zu MiB "
      "at a quarter, %zu MiB at the end\n",
      seconds, log.beeps.size(), log.flashes.size(), worst_ms, warm_rss / 1048576,
      end_rss / 1048576);
}

// Eight seconds in the test run; ten minutes as a soak (ctest -L soak).
TEST_F(GstAudio, LiveLoopStampsPictureAndSoundOnOneTimeLine) { live_loop(8); }
TEST_F(GstAudio, DISABLED_LiveLoopTenMinutesNoDriftAndFlatMemory) { live_loop(600); }

}  // namespace
}  // namespace rdmavideo::testing
