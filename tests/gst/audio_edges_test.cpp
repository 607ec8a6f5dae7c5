// SPDX-License-Identifier: Apache-2.0
// The edges of sound through the GStreamer elements that an attack round found: caps that
// change on an rdmasink audio pad, pads whose first buffers come out of their order, names
// that are not whole UTF-8 characters, and mono planar sound. Each body is driven in this
// process (appsrc into rdmasink, rdmasrc into appsink), with rdmavideo-recv recording where
// what a user keeps is the file.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/audio/audio.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "gst_test_support.hpp"
#include "output_checks.hpp"
#include "process.hpp"
#include "temp_dir.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

class GstAudioEdges : public ::testing::Test {
 protected:
  void SetUp() override { init_gstreamer(); }
};

// `frames` of a 1 kHz beep (0.1 s of every second loud) in `format` at `rate`, from sample
// `first` of the tone, as a buffer stamped where it falls.
GstBuffer* tone(GstAudioFormat format, int rate, int channels, uint64_t first, int frames) {
  GstAudioInfo info;
  gst_audio_info_set_format(&info, format, rate, channels, nullptr);
  GstBuffer* b =
      gst_buffer_new_allocate(nullptr, size_t(frames) * GST_AUDIO_INFO_BPF(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  for (int i = 0; i < frames; ++i) {
    const double t = static_cast<double>(first + i) / rate;
    const double v = (std::fmod(t, 1.0) < 0.1 ? 0.5 : 0.01) * std::sin(2 * M_PI * 1000 * t);
    for (int c = 0; c < channels; ++c) {
      if (format == GST_AUDIO_FORMAT_F32LE) {
        reinterpret_cast<float*>(map.data)[i * channels + c] = static_cast<float>(v);
      } else {
        reinterpret_cast<int16_t*>(map.data)[i * channels + c] = static_cast<int16_t>(v * 32767);
      }
    }
  }
  gst_buffer_unmap(b, &map);
  GST_BUFFER_PTS(b) = gst_util_uint64_scale_int(first, GST_SECOND, rate);
  GST_BUFFER_DURATION(b) = gst_util_uint64_scale_int(frames, GST_SECOND, rate);
  return b;
}

GstCaps* audio_caps(GstAudioFormat format, int rate, int channels) {
  GstAudioInfo info;
  gst_audio_info_set_format(&info, format, rate, channels, nullptr);
  return gst_audio_info_to_caps(&info);
}

// A picture every 1/30 s (UYVY 64x36: white on the first frame of each second) from appsrc
// `v` up to `seconds`.
void push_pictures(GstElement* v, int seconds) {
  for (int f = 0; f < seconds * 30; ++f) {
    GstBuffer* frame = gst_buffer_new_allocate(nullptr, 64 * 36 * 2, nullptr);
    GstMapInfo map;
    gst_buffer_map(frame, &map, GST_MAP_WRITE);
    for (size_t i = 0; i < map.size; i += 2) {
      map.data[i] = 128;
      map.data[i + 1] = f % 30 == 0 ? 235 : 16;
    }
    gst_buffer_unmap(frame, &map);
    GST_BUFFER_PTS(frame) = gst_util_uint64_scale_int(f, GST_SECOND, 30);
    GST_BUFFER_DURATION(frame) = GST_SECOND / 30;
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(v), frame), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(v));
}

// appsrc `v`'s pictures (UYVY 64x36 at 30 fps) into rdmasink `s` toward a receiver on `port`,
// beside `audio` (branches into s.audio_N).
UniquePipeline sender_to(int port, const std::string& audio) {
  return parse_pipeline(
      "appsrc name=v format=time caps=video/x-raw,format=UYVY,width=64,height=36,framerate=30/1 "
      "! rdmasink name=s transport=tcp sync=false port=" +
      std::to_string(port) + " " + audio);
}

// An rdmasink audio pad whose caps change 19 times (S16LE 48 kHz and F32LE 44.1 kHz in turn,
// every 150 ms): the stream goes on, one track to the end, the tone whole. (Each change
// started a new track, which the recorder refused as started after the first frame, and the
// 17th, past the protocol's 16 tracks, failed the pipeline, picture and all.)
TEST_F(GstAudioEdges, CapsChangingOnASinkAudioPadKeepOneTrackToTheEnd) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  TempDir dir;
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--output", out.string()});
  auto sender = sender_to(recv.port(), "appsrc name=a format=time ! s.audio_0");
  auto v = element(sender.get(), "v");
  auto a = element(sender.get(), "a");
  UniqueCaps first(audio_caps(GST_AUDIO_FORMAT_S16LE, 48000, 2));
  g_object_set(a.get(), "caps", first.get(), nullptr);
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  std::thread pictures([&] { push_pictures(v.get(), 3); });
  // 3 s of sound in 10 ms buffers; the caps change every 15 buffers.
  uint64_t at_ns = 0;
  int changes = 0;
  for (int i = 0; i < 300; ++i) {
    const bool s16 = (i / 15) % 2 == 0;
    if (i > 0 && i % 15 == 0) {
      UniqueCaps caps(s16 ? audio_caps(GST_AUDIO_FORMAT_S16LE, 48000, 2)
                          : audio_caps(GST_AUDIO_FORMAT_F32LE, 44100, 2));
      g_object_set(a.get(), "caps", caps.get(), nullptr);
      ++changes;
    }
    const int rate = s16 ? 48000 : 44100;
    const uint64_t from = gst_util_uint64_scale_int(at_ns, rate, GST_SECOND);
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(a.get()),
                                      tone(s16 ? GST_AUDIO_FORMAT_S16LE : GST_AUDIO_FORMAT_F32LE,
                                           rate, 2, from, rate / 100)),
              GST_FLOW_OK);
    at_ns += 10'000'000;
  }
  gst_app_src_end_of_stream(GST_APP_SRC(a.get()));
  pictures.join();
  EXPECT_EQ(changes, 19);
  const BusLog sent = wait_for_end(sender.get(), 30s);
  EXPECT_TRUE(sent.eos) << sent.error.value_or("");
  gst_element_set_state(sender.get(), GST_STATE_NULL);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const std::string streams = stream_codecs(out);
  const auto audio = streams.find(",audio");
  ASSERT_NE(audio, std::string::npos) << streams;
  EXPECT_EQ(streams.find(",audio", audio + 1), std::string::npos) << "one track\n" << streams;
  const auto m = av_sync(out, 0);
  ASSERT_TRUE(m.contains("tone_hz")) << m.dump();
  EXPECT_NEAR(m["tone_hz"].get<double>(), 1000, 10) << m.dump();
  EXPECT_NEAR(m["audio_s"].get<double>(), 3.0, 0.1) << m.dump();
  EXPECT_EQ(m["beeps"], m["flashes"]) << m.dump();
}

// Two audio pads whose first buffers come out of their order (audio_1's 300 ms before
// audio_0's): audio_0 is still track 0 in the recording. (The order followed whichever pad's
// first buffer came first: audio_1 became track 0.)
TEST_F(GstAudioEdges, AudioPadsBecomeTracksInPadOrder) {
#if !RDMAVIDEO_HAVE_FFMPEG
  GTEST_SKIP() << "this build has no FFmpeg: no recordings";
#endif
  TempDir dir;
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--output", out.string()});
  auto sender = sender_to(recv.port(),
                          "appsrc name=a0 format=time ! s.audio_0 appsrc name=a1 format=time ! "
                          "s.audio_1");
  auto v = element(sender.get(), "v");
  UniqueObject<GstElement> a[2] = {element(sender.get(), "a0"), element(sender.get(), "a1")};
  UniqueCaps mono(audio_caps(GST_AUDIO_FORMAT_S16LE, 48000, 1));
  UniqueCaps stereo(audio_caps(GST_AUDIO_FORMAT_S16LE, 48000, 2));
  g_object_set(a[0].get(), "caps", mono.get(), nullptr);
  g_object_set(a[1].get(), "caps", stereo.get(), nullptr);
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  std::thread pictures([&] { push_pictures(v.get(), 2); });
  std::thread second([&] {
    for (int i = 0; i < 200; ++i)
      gst_app_src_push_buffer(GST_APP_SRC(a[1].get()),
                              tone(GST_AUDIO_FORMAT_S16LE, 48000, 2, uint64_t(i) * 480, 480));
    gst_app_src_end_of_stream(GST_APP_SRC(a[1].get()));
  });
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 200; ++i)
    gst_app_src_push_buffer(GST_APP_SRC(a[0].get()),
                            tone(GST_AUDIO_FORMAT_S16LE, 48000, 1, uint64_t(i) * 480, 480));
  gst_app_src_end_of_stream(GST_APP_SRC(a[0].get()));
  second.join();
  pictures.join();
  const BusLog sent = wait_for_end(sender.get(), 30s);
  EXPECT_TRUE(sent.eos) << sent.error.value_or("");
  gst_element_set_state(sender.get(), GST_STATE_NULL);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  // audio_0 is mono, audio_1 stereo: the tracks' channels, in the file's order.
  const std::string channels =
      capture("ffprobe -v error -select_streams a -show_entries stream=channels -of csv=p=0 '" +
              out.string() + "'");
  EXPECT_EQ(channels, "1\n2\n") << "audio_0 (mono) is track 0, audio_1 (stereo) track 1";
}

// A title of 62 ASCII bytes and an "é" (2 bytes): 64 bytes, one past what a name holds. It is
// cut before the "é", never inside it, and what rdmasrc tags is valid UTF-8. (rdmasink cut it
// at 63 bytes itself, half a character, and GStreamer warned of invalid UTF-8 downstream.)
// And mono planar sound arrives in caps and audio meta GStreamer's own checks accept (a
// GLib CRITICAL a buffer before: the info was unpositioned while the caps said mono).
TEST_F(GstAudioEdges, ANameCutAtACharacterAndMonoPlanarWithoutACritical) {
  static std::atomic<int> criticals{0};
  const GLogFunc previous = g_log_set_default_handler(
      [](const gchar* domain, GLogLevelFlags level, const gchar* message, gpointer) {
        if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
          ++criticals;
          ADD_FAILURE() << (domain ? domain : "") << ": " << message;
        }
      },
      nullptr);
  auto receiver = parse_pipeline(
      "rdmasrc name=r address=127.0.0.1 port=0 ! queue ! fakesink sync=false "
      "r.audio_0 ! queue ! appsink name=out sync=false");
  auto r = element(receiver.get(), "r");
  auto out = element(receiver.get(), "out");
  TitlesSeen titles;
  watch_titles(out.get(), titles);
  ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  guint port = 0;
  g_object_get(r.get(), "bound-port", &port, nullptr);
  const std::string title = std::string(62, 'a') + "\xc3\xa9";
  auto sender = parse_pipeline(
      "videotestsrc num-buffers=30 ! video/x-raw,format=UYVY,width=64,height=36,framerate=30/1 "
      "! rdmasink name=s transport=tcp sync=false port=" +
      std::to_string(port) +
      " audiotestsrc num-buffers=100 samplesperbuffer=480 ! audio/x-raw,format=F32LE,"
      "layout=non-interleaved,rate=48000,channels=1 ! taginject name=t ! s.audio_0");
  auto t = element(sender.get(), "t");
  g_object_set(t.get(), "tags", ("title=\"" + title + "\"").c_str(), nullptr);
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  uint64_t samples = 0;
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
    samples += planes.n_samples;
    gst_audio_buffer_unmap(&planes);
  }
  gst_element_set_state(sender.get(), GST_STATE_NULL);
  gst_element_set_state(receiver.get(), GST_STATE_NULL);
  g_log_set_default_handler(previous, nullptr);
  ASSERT_NE(caps, nullptr) << "no sound arrived";
  GstAudioInfo info;
  ASSERT_TRUE(gst_audio_info_from_caps(&info, caps.get()));
  EXPECT_EQ(GST_AUDIO_INFO_CHANNELS(&info), 1);
  EXPECT_EQ(GST_AUDIO_INFO_LAYOUT(&info), GST_AUDIO_LAYOUT_NON_INTERLEAVED);
  EXPECT_NEAR(static_cast<double>(samples) / 48000, 1.0, 0.05);
  EXPECT_EQ(criticals.load(), 0);
  std::lock_guard lock(titles.mu);
  ASSERT_EQ(titles.seen.size(), 1u);
  const std::string& seen = titles.seen[0];
  EXPECT_TRUE(g_utf8_validate(seen.data(), static_cast<gssize>(seen.size()), nullptr));
  EXPECT_EQ(seen, std::string(62, 'a')) << "cut before the character, not inside it";
}

}  // namespace
}  // namespace rdmavideo::testing
