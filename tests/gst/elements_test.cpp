// SPDX-License-Identifier: Apache-2.0
// rdmasink and rdmasrc in one process over 127.0.0.1 TCP: the factories and their
// properties, frames byte for byte from videotestsrc and appsrc, zero copy on both sides
// (rdmasink's pool, rdmasrc's ring-slot memory) and the copies counted where it cannot be,
// credits held by downstream buffers, caps changes mid-stream, EOS, repeated state changes,
// and the bus errors for a dead peer. GStreamer runs with a private registry and the build
// tree's plugin.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <new>
#include <stdexcept>
#include <thread>

#include "boundary.hpp"
#include "gst_test_support.hpp"
#include "process.hpp"
#include "raw_peer.hpp"
#include "rdmavideo/auth.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kSlotMemoryType = "RdmaVideoSlot";
constexpr uint32_t kSeed = 0x5EED;

class GstElements : public ::testing::Test {
 protected:
  void SetUp() override {
    init_gstreamer();
    for (const char* needed : {"videotestsrc", "appsrc", "appsink", "fakesink", "capsfilter"}) {
      UniqueObject<GstElementFactory> factory(gst_element_factory_find(needed));
      if (!factory) GTEST_SKIP() << "GStreamer element " << needed << " is not installed";
    }
  }
};

std::string caps_string(const std::string& format, int width, int height, int fps = 30) {
  return "video/x-raw,format=" + format + ",width=" + std::to_string(width) +
         ",height=" + std::to_string(height) + ",framerate=" + std::to_string(fps) + "/1";
}

// A moving pattern (smpte scrolled 3 pixels a frame), so every frame differs from the last.
std::string testsrc(const std::string& caps, int frames) {
  return "videotestsrc num-buffers=" + std::to_string(frames) +
         " pattern=smpte horizontal-speed=3 ! " + caps;
}

/// rdmasrc on 127.0.0.1, a free port, into `downstream`; PLAYING, with its bound port. The
/// loopback tests are TCP tests (copies and in-place sends are TCP's rules), so rdmasink
/// below asks for TCP rather than taking verbs where a machine has an RDMA device.
struct ReceiverPipeline {
  UniquePipeline pipeline;
  UniqueObject<GstElement> src;
  uint16_t port = 0;

  explicit ReceiverPipeline(
      const std::string& src_properties = "",
      const std::string& downstream = "appsink name=out sync=false enable-last-sample=false") {
    pipeline = parse_pipeline("rdmasrc name=src address=127.0.0.1 port=0 " + src_properties +
                              " ! " + downstream);
    src = element(pipeline.get(), "src");
    if (gst_element_set_state(pipeline.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
      auto error = pop_message(pipeline.get(), GST_MESSAGE_ERROR, 1s);
      throw std::runtime_error("receiver pipeline did not start: " + describe(error.get()));
    }
    guint bound = 0;
    g_object_get(src.get(), "bound-port", &bound, nullptr);
    if (bound == 0) throw std::runtime_error("rdmasrc reports bound-port 0 after start");
    port = static_cast<uint16_t>(bound);
  }
  GstAppSink* appsink() {
    out_ = element(pipeline.get(), "out");
    return GST_APP_SINK(out_.get());
  }

 private:
  UniqueObject<GstElement> out_;
};

std::string sink_to(uint16_t port, const std::string& properties = "") {
  return "rdmasink name=sink host=127.0.0.1 port=" + std::to_string(port) +
         " transport=tcp sync=false " + properties;
}

UniquePipeline start(const std::string& description) {
  auto pipeline = parse_pipeline(description);
  if (gst_element_set_state(pipeline.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    auto error = pop_message(pipeline.get(), GST_MESSAGE_ERROR, 1s);
    throw std::runtime_error("pipeline did not start: " + describe(error.get()) + "\n  " +
                             description);
  }
  return pipeline;
}

/// One frame as appsink got it.
struct Received {
  GstVideoInfo info;
  FrameBytes bytes;
  GstClockTime pts = GST_CLOCK_TIME_NONE;
  guint64 offset = 0;
  bool slot_memory = false;
  guint memories = 0;
};

Received take(GstSample* sample) {
  Received r;
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  if (!gst_video_info_from_caps(&r.info, gst_sample_get_caps(sample))) {
    throw std::runtime_error("sample caps are not raw video");
  }
  r.bytes = frame_bytes(buffer, r.info);
  r.pts = GST_BUFFER_PTS(buffer);
  r.offset = GST_BUFFER_OFFSET(buffer);
  r.memories = gst_buffer_n_memory(buffer);
  r.slot_memory =
      r.memories == 1 && gst_memory_is_type(gst_buffer_peek_memory(buffer, 0), kSlotMemoryType);
  return r;
}

/// Pulls samples until EOS (or until `max`); each is released once read, so the ring keeps
/// moving. Stops early when no sample comes within `timeout`.
std::vector<Received> pull_all(GstAppSink* sink, size_t max = SIZE_MAX,
                               std::chrono::seconds timeout = 30s) {
  std::vector<Received> out;
  while (out.size() < max) {
    UniqueSample sample(gst_app_sink_try_pull_sample(
        sink, static_cast<GstClockTime>(timeout.count()) * GST_SECOND));
    if (!sample) break;
    out.push_back(take(sample.get()));
  }
  return out;
}

/// What `source` (a description ending in caps) produces, read straight into appsink.
std::vector<Received> reference_frames(const std::string& source) {
  auto pipeline = start(source + " ! appsink name=out sync=false");
  auto out = element(pipeline.get(), "out");
  auto frames = pull_all(GST_APP_SINK(out.get()));
  if (!gst_app_sink_is_eos(GST_APP_SINK(out.get())))
    throw std::runtime_error("reference did not reach EOS");
  return frames;
}

struct FormatCase {
  const char* format;
  int width;
  int height;
};

void PrintTo(const FormatCase& c, std::ostream* os) {
  *os << c.format << " " << c.width << "x" << c.height;
}

class VideotestsrcThroughRdma : public GstElements,
                                public ::testing::WithParamInterface<FormatCase> {};

// videotestsrc ! rdmasink -> rdmasrc ! appsink: the frames are videotestsrc's byte for byte,
// in order, with the sender's timestamps; rdmasink sends from its own pool (no copies) and
// rdmasrc pushes the ring slots themselves (no copies). Both post stats at EOS.
TEST_P(VideotestsrcThroughRdma, FramesArriveByteEqualWithoutCopies) {
  const FormatCase c = GetParam();
  constexpr int kFrames = 30;
  const std::string source = testsrc(caps_string(c.format, c.width, c.height), kFrames);
  const auto reference = reference_frames(source);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kFrames));
  ASSERT_FALSE(first_difference(reference[1].bytes, reference[0].bytes, 1) == std::nullopt)
      << "the reference pattern does not move; the test could not tell frames apart";

  ReceiverPipeline receiver("verify=true");
  auto sender = start(source + " ! " + sink_to(receiver.port, "checksum=true"));
  const auto got = pull_all(receiver.appsink());
  EXPECT_TRUE(gst_app_sink_is_eos(receiver.appsink())) << "rdmasrc did not end with EOS";
  ASSERT_EQ(got.size(), reference.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&got[i].info), GST_VIDEO_INFO_FORMAT(&reference[i].info));
    EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&got[i].info), c.width);
    EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&got[i].info), c.height);
    EXPECT_EQ(GST_VIDEO_INFO_FPS_N(&got[i].info), 30);
    EXPECT_EQ(GST_VIDEO_INFO_FPS_D(&got[i].info), 1);
    EXPECT_TRUE(got[i].slot_memory)
        << "buffer is not one RdmaVideoSlot memory (" << got[i].memories << " memories)";
    EXPECT_EQ(got[i].pts, reference[i].pts);
    EXPECT_EQ(got[i].offset, i);
    const auto diff = first_difference(got[i].bytes, reference[i].bytes, i);
    ASSERT_FALSE(diff) << *diff;
  }

  const BusLog sent = wait_for_end(sender.get());
  ASSERT_TRUE(sent.eos) << *sent.error;
  const GstStructure* sink_stats = sent.last("rdmasink-stats");
  ASSERT_NE(sink_stats, nullptr) << "no rdmasink-stats message at EOS";
  GstVideoInfo info = reference[0].info;
  EXPECT_EQ(u64_field(sink_stats, "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(sink_stats, "bytes"),
            static_cast<uint64_t>(kFrames) * GST_VIDEO_INFO_SIZE(&info));
  EXPECT_EQ(u64_field(sink_stats, "dropped"), 0u);
  EXPECT_EQ(u64_field(sink_stats, "copies"), 0u)
      << "videotestsrc's buffers came from rdmasink's pool";
  EXPECT_EQ(string_field(sink_stats, "transport"), "tcp");
  EXPECT_NE(string_field(sink_stats, "peer").find("127.0.0.1:" + std::to_string(receiver.port)),
            std::string::npos)
      << string_field(sink_stats, "peer");

  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  const GstStructure* src_stats = received.last("rdmasrc-stats");
  ASSERT_NE(src_stats, nullptr) << "no rdmasrc-stats message at EOS";
  EXPECT_EQ(u64_field(src_stats, "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(src_stats, "bytes"),
            static_cast<uint64_t>(kFrames) * GST_VIDEO_INFO_SIZE(&info));
  EXPECT_EQ(u64_field(src_stats, "copies"), 0u);
  EXPECT_EQ(u64_field(src_stats, "dropped"), 0u);
  EXPECT_EQ(u64_field(src_stats, "checksum-failures"), 0u);
  EXPECT_EQ(string_field(src_stats, "transport"), "tcp");
  // Latency is the service's, measured as each frame completed in the ring (same clock here).
  EXPECT_GT(u64_field(src_stats, "latency-max-ns"), 0u);
  EXPECT_GE(u64_field(src_stats, "latency-max-ns"), u64_field(src_stats, "latency-p50-ns"));
}

INSTANTIATE_TEST_SUITE_P(Formats, VideotestsrcThroughRdma,
                         ::testing::Values(FormatCase{"NV12", 320, 240},
                                           FormatCase{"UYVY", 320, 240},
                                           FormatCase{"RGBA", 320, 240},
                                           FormatCase{"NV12", 1280, 720}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.format) + "_" +
                                  std::to_string(param_info.param.width) + "x" +
                                  std::to_string(param_info.param.height);
                         });

// Functions the elements hand GStreamer, as boundary.hpp installs them: what one throws
// becomes an error message on its element (a pad's: the pad's element) and the failure value
// GStreamer knows, and the pipeline's process goes on.
gboolean start_throwing(GstBaseSink* sink) {
  (void)sink;
  throw std::runtime_error("the key cannot be proven");
}
GstFlowReturn render_out_of_memory(GstBaseSink* sink, GstBuffer* buffer) {
  (void)sink;
  (void)buffer;
  throw std::bad_alloc();
}
GstFlowReturn chain_throwing(GstPad* pad, GstObject* parent, GstBuffer* buffer) {
  (void)pad;
  (void)parent;
  gst_buffer_unref(buffer);
  throw std::logic_error("a pad function's fault");
}

TEST_F(GstElements, AFunctionThatThrowsPostsAnErrorAndReturnsFailure) {
  UniquePipeline pipeline(gst_parse_launch("fakesrc ! fakesink name=sink", nullptr));
  ASSERT_TRUE(pipeline);
  const auto sink = element(pipeline.get(), "sink");
  auto* base = GST_BASE_SINK(sink.get());

  EXPECT_EQ((gst::guarded<"connect to the receiver", start_throwing>(base)), FALSE);
  auto message = pop_message(pipeline.get(), GST_MESSAGE_ERROR, 1s);
  ASSERT_TRUE(message);
  EXPECT_EQ(std::string(GST_MESSAGE_SRC_NAME(message.get())), "sink");
  EXPECT_NE(describe(message.get()).find("Could not connect to the receiver."), std::string::npos)
      << describe(message.get());
  EXPECT_NE(describe(message.get()).find("connect to the receiver: the key cannot be proven"),
            std::string::npos)
      << describe(message.get());

  GstBuffer* buffer = gst_buffer_new();
  EXPECT_EQ((gst::guarded<"send a frame", render_out_of_memory>(base, buffer)), GST_FLOW_ERROR);
  gst_buffer_unref(buffer);
  message = pop_message(pipeline.get(), GST_MESSAGE_ERROR, 1s);
  ASSERT_TRUE(message);
  EXPECT_NE(describe(message.get()).find("send a frame: out of memory"), std::string::npos)
      << describe(message.get());

  GstPad* pad = gst_element_get_static_pad(sink.get(), "sink");
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(
      (gst::guarded<"send sound", chain_throwing>(pad, GST_OBJECT(sink.get()), gst_buffer_new())),
      GST_FLOW_ERROR);
  gst_object_unref(pad);
  message = pop_message(pipeline.get(), GST_MESSAGE_ERROR, 1s);
  ASSERT_TRUE(message);
  EXPECT_EQ(std::string(GST_MESSAGE_SRC_NAME(message.get())), "sink");
  EXPECT_NE(describe(message.get()).find("send sound: a pad function's fault"), std::string::npos)
      << describe(message.get());
}

TEST_F(GstElements, FactoriesHaveTheDocumentedPropertiesDefaultsAndTemplates) {
  struct Expected {
    const char* name;
    GType type;
    const char* default_text;  // g_strdup_value_contents of the default
    bool writable;
  };
  const std::vector<Expected> sink_properties = {
      {"host", G_TYPE_STRING, "\"127.0.0.1\"", true}, {"port", G_TYPE_UINT, "5000", true},
      {"transport", G_TYPE_ENUM, "auto", true},       {"rdma-device", G_TYPE_STRING, "\"\"", true},
      {"mode", G_TYPE_ENUM, "no-drop", true},         {"checksum", G_TYPE_BOOLEAN, "FALSE", true},
      {"stream-name", G_TYPE_STRING, "\"\"", true},   {"stats", G_TYPE_BOXED, nullptr, false},
  };
  const std::vector<Expected> src_properties = {
      {"address", G_TYPE_STRING, "\"0.0.0.0\"", true}, {"port", G_TYPE_UINT, "5000", true},
      {"transport", G_TYPE_ENUM, "auto", true},        {"ring-size", G_TYPE_UINT, "8", true},
      {"rdma-device", G_TYPE_STRING, "\"\"", true},    {"verify", G_TYPE_BOOLEAN, "FALSE", true},
      {"is-live", G_TYPE_BOOLEAN, "FALSE", true},      {"bound-port", G_TYPE_UINT, "0", false},
      {"stats", G_TYPE_BOXED, nullptr, false},         {"tracks", G_TYPE_STRING, "\"all\"", true},
  };
  const auto check = [](const char* factory_name, const std::vector<Expected>& expected,
                        const char* pad_name, GstPadDirection direction, const char* klass,
                        GstPadPresence audio_presence) {
    SCOPED_TRACE(factory_name);
    UniqueObject<GstElementFactory> factory(gst_element_factory_find(factory_name));
    ASSERT_NE(factory, nullptr) << factory_name << " is not in the registry (GST_PLUGIN_PATH="
                                << RDMAVIDEO_GST_PLUGIN_DIR << ")";
    EXPECT_STREQ(gst_element_factory_get_metadata(factory.get(), GST_ELEMENT_METADATA_KLASS),
                 klass);
    UniqueObject<GstElement> e(gst_element_factory_create(factory.get(), nullptr));
    ASSERT_NE(e, nullptr);
    for (const auto& p : expected) {
      SCOPED_TRACE(p.name);
      GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(e.get()), p.name);
      ASSERT_NE(spec, nullptr) << "no property " << p.name;
      EXPECT_TRUE(g_type_is_a(G_PARAM_SPEC_VALUE_TYPE(spec), p.type))
          << g_type_name(G_PARAM_SPEC_VALUE_TYPE(spec));
      EXPECT_EQ((spec->flags & G_PARAM_WRITABLE) != 0, p.writable);
      EXPECT_TRUE((spec->flags & G_PARAM_READABLE) != 0);
      EXPECT_GT(std::string(g_param_spec_get_blurb(spec)).size(), 20u) << "blurb is not a sentence";
      if (p.default_text) {
        const GValue* default_value = g_param_spec_get_default_value(spec);
        if (G_VALUE_HOLDS_ENUM(default_value)) {
          const GEnumValue* v = g_enum_get_value(G_PARAM_SPEC_ENUM(spec)->enum_class,
                                                 g_value_get_enum(default_value));
          ASSERT_NE(v, nullptr);
          EXPECT_STREQ(v->value_nick, p.default_text);
        } else {
          gchar* text = g_strdup_value_contents(default_value);
          EXPECT_STREQ(text, p.default_text);
          g_free(text);
        }
        // A new element's value is the default.
        GValue value = G_VALUE_INIT;
        g_value_init(&value, G_PARAM_SPEC_VALUE_TYPE(spec));
        g_object_get_property(G_OBJECT(e.get()), p.name, &value);
        EXPECT_EQ(g_param_values_cmp(spec, &value, g_param_spec_get_default_value(spec)), 0);
        g_value_unset(&value);
      }
    }
    // The stats of an element that never started: every field, all zero.
    auto stats = stats_of(e.get());
    ASSERT_NE(stats, nullptr);
    EXPECT_STREQ(gst_structure_get_name(stats.get()),
                 direction == GST_PAD_SINK ? "rdmasink-stats" : "rdmasrc-stats");
    for (const char* field : {"frames", "bytes", "dropped", "copies", "checksum-failures",
                              "latency-p50-ns", "latency-p99-ns", "latency-max-ns"}) {
      EXPECT_EQ(u64_field(stats.get(), field), 0u) << field;
    }
    double seconds = -1;
    EXPECT_TRUE(gst_structure_get_double(stats.get(), "seconds", &seconds));
    EXPECT_EQ(string_field(stats.get(), "transport"), "");
    EXPECT_EQ(string_field(stats.get(), "peer"), "");

    // One always pad, raw video in the ten carried formats, with a fixed non-zero rate; and
    // audio_%u pads (request on the sink, sometimes on the source), raw audio as the protocol
    // carries it.
    const GList* templates = gst_element_factory_get_static_pad_templates(factory.get());
    ASSERT_EQ(g_list_length(const_cast<GList*>(templates)), 2u);
    GstStaticPadTemplate* tmpl = nullptr;
    GstStaticPadTemplate* audio = nullptr;
    for (const GList* l = templates; l; l = l->next) {
      auto* t = static_cast<GstStaticPadTemplate*>(l->data);
      (std::string(t->name_template) == "audio_%u" ? audio : tmpl) = t;
    }
    ASSERT_NE(tmpl, nullptr);
    ASSERT_NE(audio, nullptr);
    EXPECT_EQ(audio->direction, direction);
    EXPECT_EQ(audio->presence, audio_presence);
    UniqueCaps audio_caps(gst_static_caps_get(&audio->static_caps));
    for (const char* format : {"F32LE", "S32LE", "S16LE"}) {
      for (const char* layout : {"interleaved", "non-interleaved"}) {
        UniqueCaps one(gst_caps_from_string((std::string("audio/x-raw,format=") + format +
                                             ",layout=" + layout + ",rate=48000,channels=2")
                                                .c_str()));
        EXPECT_TRUE(gst_caps_can_intersect(audio_caps.get(), one.get())) << format << " " << layout;
      }
    }
    for (const char* refused :
         {"audio/x-raw,format=S24LE,layout=interleaved,rate=48000,channels=2",
          "audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=17",
          "audio/x-raw,format=F32BE,layout=interleaved,rate=48000,channels=2"}) {
      UniqueCaps one(gst_caps_from_string(refused));
      EXPECT_FALSE(gst_caps_can_intersect(audio_caps.get(), one.get())) << refused;
    }
    EXPECT_STREQ(tmpl->name_template, pad_name);
    EXPECT_EQ(tmpl->direction, direction);
    EXPECT_EQ(tmpl->presence, GST_PAD_ALWAYS);
    UniqueCaps caps(gst_static_caps_get(&tmpl->static_caps));
    for (const char* format : {"NV12", "I420", "P010_10LE", "UYVY", "YUY2", "v210", "RGBA", "BGRA",
                               "RGB", "I422_10LE"}) {
      UniqueCaps one(gst_caps_from_string(caps_string(format, 1920, 1080, 60).c_str()));
      EXPECT_TRUE(gst_caps_can_intersect(caps.get(), one.get()))
          << format << " is not in " << factory_name << "'s template";
    }
    for (const std::string& refused :
         {caps_string("GRAY8", 640, 480),
          std::string("video/x-raw,format=NV12,width=640,height=480,framerate=0/1"),
          std::string("audio/x-raw,format=S16LE,rate=48000,channels=2")}) {
      UniqueCaps one(gst_caps_from_string(refused.c_str()));
      EXPECT_FALSE(gst_caps_can_intersect(caps.get(), one.get()))
          << refused << " should not be accepted";
    }
  };
  check("rdmasink", sink_properties, "sink", GST_PAD_SINK, "Sink/Network/Video", GST_PAD_REQUEST);
  check("rdmasrc", src_properties, "src", GST_PAD_SRC, "Source/Network/Video", GST_PAD_SOMETIMES);

  // The enums carry the documented nicks.
  UniqueObject<GstElement> sink(gst_element_factory_make("rdmasink", nullptr));
  for (const char* nick : {"auto", "tcp", "verbs"}) {
    GEnumClass* klass = G_ENUM_CLASS(g_type_class_ref(G_PARAM_SPEC_VALUE_TYPE(
        g_object_class_find_property(G_OBJECT_GET_CLASS(sink.get()), "transport"))));
    EXPECT_NE(g_enum_get_value_by_nick(klass, nick), nullptr) << "transport " << nick;
    g_type_class_unref(klass);
  }
  for (const char* nick : {"live", "no-drop"}) {
    GEnumClass* klass = G_ENUM_CLASS(g_type_class_ref(G_PARAM_SPEC_VALUE_TYPE(
        g_object_class_find_property(G_OBJECT_GET_CLASS(sink.get()), "mode"))));
    EXPECT_NE(g_enum_get_value_by_nick(klass, nick), nullptr) << "mode " << nick;
    g_type_class_unref(klass);
  }
}

// GstHarness pushes into rdmasink: the allocation query offers a pool of page-aligned
// buffers, which go out with no copy; a plain single-memory buffer in the stream's layout
// goes out in place over TCP (no copy either); a buffer of two memories, or one with other
// strides, is copied once and counted. Every frame arrives intact in GStreamer's layout.
TEST_F(GstElements, RdmaSinkPoolIsZeroCopyAndOtherBuffersAreCopiedAndCounted) {
  ReceiverPipeline receiver;
  GstHarness* h = gst_harness_new_parse(sink_to(receiver.port).c_str());
  ASSERT_NE(h, nullptr);
  auto sink = UniqueObject<GstElement>(gst_harness_find_element(h, "rdmasink"));
  const std::string caps = caps_string("NV12", 320, 240);
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstVideoInfo info;
  {
    UniqueCaps c(gst_caps_from_string(caps.c_str()));
    ASSERT_TRUE(gst_video_info_from_caps(&info, c.get()));
  }
  const auto copies = [&] { return u64_field(stats_of(sink.get()).get(), "copies"); };
  size_t frame_number = 0;
  std::vector<std::string> kinds;
  const auto push = [&](GstBuffer* buffer, const char* kind) {
    GST_BUFFER_PTS(buffer) = frame_number * GST_SECOND / 30;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
    kinds.push_back(kind);
    ++frame_number;
    return gst_harness_push(h, buffer);
  };

  // From the pool rdmasink proposed.
  for (int i = 0; i < 3; ++i) {
    GstBuffer* buffer = gst_harness_create_buffer(h, GST_VIDEO_INFO_SIZE(&info));
    ASSERT_NE(buffer->pool, nullptr) << "the harness got no pool from rdmasink's allocation query";
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE));
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)) % 4096 == 0,
                p == 0)
          << "plane " << p << " of a pool buffer: the frame must start on a page";
    }
    fill_pattern(frame, kSeed, frame_number);
    gst_video_frame_unmap(&frame);
    ASSERT_EQ(push(buffer, "pool"), GST_FLOW_OK);
  }
  EXPECT_EQ(copies(), 0u) << "buffers from rdmasink's own pool were copied";

  // Not from the pool, one memory, GStreamer's layout: sent in place over TCP.
  {
    GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE));
    fill_pattern(frame, kSeed, frame_number);
    gst_video_frame_unmap(&frame);
    ASSERT_EQ(push(buffer, "plain"), GST_FLOW_OK);
  }
  EXPECT_EQ(copies(), 0u) << "a single-memory buffer in the stream's layout needs no copy over TCP";

  // Two memories, one a plane: copied.
  {
    GstBuffer* whole = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, whole, GST_MAP_WRITE));
    fill_pattern(frame, kSeed, frame_number);
    gst_video_frame_unmap(&frame);
    const gsize split = GST_VIDEO_INFO_PLANE_OFFSET(&info, 1);
    GstBuffer* buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, gst_allocator_alloc(nullptr, split, nullptr));
    gst_buffer_append_memory(
        buffer, gst_allocator_alloc(nullptr, GST_VIDEO_INFO_SIZE(&info) - split, nullptr));
    for (guint m = 0; m < 2; ++m) {
      GstMapInfo map;
      ASSERT_TRUE(gst_memory_map(gst_buffer_peek_memory(buffer, m), &map, GST_MAP_WRITE));
      gst_buffer_extract(whole, m == 0 ? 0 : split, map.data, map.size);
      gst_memory_unmap(gst_buffer_peek_memory(buffer, m), &map);
    }
    gst_buffer_unref(whole);
    ASSERT_EQ(gst_buffer_n_memory(buffer), 2u);
    ASSERT_EQ(push(buffer, "two memories"), GST_FLOW_OK);
  }
  EXPECT_EQ(copies(), 1u) << "a buffer of two memories must be copied, and counted";

  // One memory, wider strides described by a GstVideoMeta: copied into the stream's layout.
  {
    GstVideoInfo padded = info;
    gsize offset = 0;
    for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
      GST_VIDEO_INFO_PLANE_STRIDE(&padded, p) = GST_VIDEO_INFO_PLANE_STRIDE(&info, p) + 64;
      GST_VIDEO_INFO_PLANE_OFFSET(&padded, p) = offset;
      offset += static_cast<gsize>(GST_VIDEO_INFO_PLANE_STRIDE(&padded, p)) * visible_rows(info, p);
    }
    GST_VIDEO_INFO_SIZE(&padded) = offset;
    GstBuffer* buffer = gst_buffer_new_allocate(nullptr, offset, nullptr);
    gst_buffer_memset(buffer, 0, 0xEE, offset);  // padding that must not arrive
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info),
                                   GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                                   GST_VIDEO_INFO_N_PLANES(&info), padded.offset, padded.stride);
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &padded, buffer, GST_MAP_WRITE));
    fill_pattern(frame, kSeed, frame_number);
    gst_video_frame_unmap(&frame);
    ASSERT_EQ(push(buffer, "padded strides"), GST_FLOW_OK);
  }
  EXPECT_EQ(copies(), 2u) << "a buffer with other strides must be copied, and counted";
  EXPECT_EQ(u64_field(stats_of(sink.get()).get(), "frames"), frame_number);

  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  const auto got = pull_all(receiver.appsink());
  ASSERT_EQ(got.size(), frame_number);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(kinds[i]);
    EXPECT_TRUE(got[i].slot_memory);
    EXPECT_EQ(GST_VIDEO_INFO_PLANE_STRIDE(&got[i].info, 0), GST_VIDEO_INFO_PLANE_STRIDE(&info, 0));
    const auto diff = first_difference(got[i].bytes, pattern_bytes(info, kSeed, i), i);
    EXPECT_FALSE(diff) << *diff;
  }
  EXPECT_TRUE(gst_app_sink_is_eos(receiver.appsink()));
  sink.reset();
  gst_harness_teardown(h);
}

// Buffers held downstream keep their ring slots: with ring-size R and every buffer held,
// exactly R frames arrive and the sender waits; each buffer released lets one more through.
class HeldBuffers : public GstElements, public ::testing::WithParamInterface<guint> {
 protected:
  struct Holder {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<UniqueBuffer> held;
    size_t arrived = 0;
    bool hold = true;
  };
  static void on_handoff(GstElement*, GstBuffer* buffer, GstPad*, gpointer data) {
    auto* holder = static_cast<Holder*>(data);
    std::lock_guard lock(holder->mutex);
    ++holder->arrived;
    if (holder->hold) holder->held.emplace_back(gst_buffer_ref(buffer));
    holder->cv.notify_all();
  }
  static bool wait_arrived(Holder& holder, size_t n, std::chrono::seconds timeout = 30s) {
    std::unique_lock lock(holder.mutex);
    return holder.cv.wait_for(lock, timeout, [&] { return holder.arrived >= n; });
  }
  static size_t arrived(Holder& holder) {
    std::lock_guard lock(holder.mutex);
    return holder.arrived;
  }
};

TEST_P(HeldBuffers, LimitProgressToRingSizeUntilReleased) {
  const guint ring = GetParam();
  constexpr int kFrames = 12;
  Holder holder;
  ReceiverPipeline receiver(
      "ring-size=" + std::to_string(ring),
      "fakesink name=out sync=false enable-last-sample=false signal-handoffs=true");
  auto out = element(receiver.pipeline.get(), "out");
  g_signal_connect(out.get(), "handoff", G_CALLBACK(on_handoff), &holder);
  guint ring_property = 0;
  g_object_get(receiver.src.get(), "ring-size", &ring_property, nullptr);
  ASSERT_EQ(ring_property, ring);

  const std::string caps = caps_string("RGBA", 64, 48);
  auto sender = start(testsrc(caps, kFrames) + " ! " + sink_to(receiver.port));
  auto sink = element(sender.get(), "sink");
  ASSERT_TRUE(wait_arrived(holder, ring))
      << "only " << arrived(holder) << " of " << ring << " frames arrived";
  // Nothing more can come while every slot is held downstream. (A wrong implementation
  // would let more through within this wait; a right one never does.)
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(arrived(holder), ring) << "more frames arrived than the ring has slots";
  EXPECT_EQ(u64_field(stats_of(receiver.src.get()).get(), "frames"), ring);
  EXPECT_EQ(u64_field(stats_of(sink.get()).get(), "frames"), ring)
      << "the sender wrote without a credit";
  EXPECT_EQ(u64_field(stats_of(sink.get()).get(), "dropped"), 0u);

  // One buffer released: its credit goes back and exactly one more frame arrives.
  {
    std::lock_guard lock(holder.mutex);
    holder.held.erase(holder.held.begin());
  }
  ASSERT_TRUE(wait_arrived(holder, ring + 1));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(arrived(holder), ring + 1);

  // Release everything and stop holding: the rest of the stream flows.
  {
    std::lock_guard lock(holder.mutex);
    holder.hold = false;
    holder.held.clear();
  }
  const BusLog received = wait_for_end(receiver.pipeline.get());
  EXPECT_TRUE(received.eos) << *received.error;
  EXPECT_EQ(arrived(holder), static_cast<size_t>(kFrames));
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
}

INSTANTIATE_TEST_SUITE_P(RingSizes, HeldBuffers, ::testing::Values(1u, 3u, 8u));

// A buffer held after rdmasrc (and its whole pipeline) is gone still reads the frame it
// arrived with: the memory owns the slot's lease, which keeps the ring alive.
TEST_F(GstElements, HeldBuffersStayValidAfterTheSourceStops) {
  constexpr int kFrames = 4;
  const std::string source = testsrc(caps_string("UYVY", 160, 120), kFrames);
  const auto reference = reference_frames(source);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kFrames));

  std::vector<UniqueSample> held;
  {
    ReceiverPipeline receiver("ring-size=" + std::to_string(kFrames));
    auto sender = start(source + " ! " + sink_to(receiver.port));
    while (held.size() < static_cast<size_t>(kFrames)) {
      UniqueSample sample(gst_app_sink_try_pull_sample(receiver.appsink(), 30 * GST_SECOND));
      ASSERT_NE(sample, nullptr) << "frame " << held.size() << " did not arrive";
      held.push_back(std::move(sample));
    }
    const BusLog sent = wait_for_end(sender.get());
    EXPECT_TRUE(sent.eos) << *sent.error;
  }  // both pipelines are NULL and unreffed here
  for (size_t i = 0; i < held.size(); ++i) {
    const Received r = take(held[i].get());
    EXPECT_TRUE(r.slot_memory);
    const auto diff = first_difference(r.bytes, reference[i].bytes, i);
    EXPECT_FALSE(diff) << *diff;
  }
}

// Samples held from one run of rdmasrc are released while the same element runs a new
// stream on a new connection: the old slots go back to a connection that is gone, harmlessly,
// and the new stream is unaffected.
TEST_F(GstElements, BuffersHeldFromAnEarlierRunAreReleasedSafelyDuringTheNext) {
  constexpr int kFrames = 4;
  const std::string caps = caps_string("NV12", 160, 120);
  const auto first_reference = reference_frames(testsrc(caps, kFrames));
  ReceiverPipeline receiver("ring-size=" + std::to_string(kFrames));
  std::vector<UniqueSample> held;
  {
    auto sender = start(testsrc(caps, kFrames) + " ! " + sink_to(receiver.port));
    while (held.size() < static_cast<size_t>(kFrames)) {
      UniqueSample sample(gst_app_sink_try_pull_sample(receiver.appsink(), 30 * GST_SECOND));
      ASSERT_NE(sample, nullptr) << "frame " << held.size() << " did not arrive";
      held.push_back(std::move(sample));
    }
    const BusLog sent = wait_for_end(sender.get());
    ASSERT_TRUE(sent.eos) << *sent.error;
  }
  ASSERT_EQ(gst_element_set_state(receiver.pipeline.get(), GST_STATE_NULL),
            GST_STATE_CHANGE_SUCCESS);
  ASSERT_NE(gst_element_set_state(receiver.pipeline.get(), GST_STATE_PLAYING),
            GST_STATE_CHANGE_FAILURE);
  guint port = 0;
  g_object_get(receiver.src.get(), "bound-port", &port, nullptr);
  ASSERT_NE(port, 0u);

  constexpr int kSecond = 12;
  const std::string second_source =
      "videotestsrc num-buffers=" + std::to_string(kSecond) + " pattern=ball ! " + caps;
  const auto second_reference = reference_frames(second_source);
  auto sender = start(second_source + " ! " + sink_to(static_cast<uint16_t>(port)));
  std::vector<Received> got = pull_all(receiver.appsink(), 2);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < held.size(); ++i) {
    const auto diff = first_difference(take(held[i].get()).bytes, first_reference[i].bytes, i);
    EXPECT_FALSE(diff) << "held from the first run: " << *diff;
  }
  held.clear();  // their credits belong to the first connection
  for (auto& r : pull_all(receiver.appsink())) got.push_back(std::move(r));
  ASSERT_EQ(got.size(), static_cast<size_t>(kSecond));
  for (size_t i = 0; i < got.size(); ++i) {
    const auto diff = first_difference(got[i].bytes, second_reference[i].bytes, i);
    EXPECT_FALSE(diff) << "second run: " << *diff;
  }
  const BusLog received = wait_for_end(receiver.pipeline.get());
  EXPECT_TRUE(received.eos) << *received.error;
}

/// Runs `change` (a state change that must not hang) on its own thread; a hang fails the
/// test by aborting the process, since nothing else could end it.
void within_deadline(const char* what, const std::function<void()>& change,
                     std::chrono::seconds timeout = 30s) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([done, change] {
    change();
    done->set_value();
  }).detach();
  if (finished.wait_for(timeout) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not return within %lld s\n", what,
                 static_cast<long long>(timeout.count()));
    std::abort();
  }
}

// A sender blocked waiting for a credit (downstream holds every slot) is stopped: stop
// wakes the wait, the receiver sees the stream end, and releasing the held buffers after
// that is harmless. Then the receiver stopped first: the sender's wait ends in EOS.
TEST_F(GstElements, StoppingWhileTheSenderWaitsForACreditDoesNotHang) {
  for (const bool sender_first : {true, false}) {
    SCOPED_TRACE(sender_first ? "sender stopped first" : "receiver stopped first");
    constexpr guint kRing = 2;
    ReceiverPipeline receiver("ring-size=" + std::to_string(kRing));
    auto sender = start(testsrc(caps_string("RGBA", 64, 48), -1) + " ! " + sink_to(receiver.port));
    auto sink = element(sender.get(), "sink");
    std::vector<UniqueSample> held;
    while (held.size() < kRing) {
      UniqueSample sample(gst_app_sink_try_pull_sample(receiver.appsink(), 30 * GST_SECOND));
      ASSERT_NE(sample, nullptr);
      held.push_back(std::move(sample));
    }
    // The sink has sent what it had credits for and waits in render for the next one.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (u64_field(stats_of(sink.get()).get(), "frames") < kRing &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(u64_field(stats_of(sink.get()).get(), "frames"), kRing);
    if (sender_first) {
      within_deadline("rdmasink PLAYING -> NULL while waiting for a credit", [&] {
        EXPECT_EQ(gst_element_set_state(sender.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
      });
      held.clear();
      const BusLog received = wait_for_end(receiver.pipeline.get());
      EXPECT_TRUE(received.eos) << *received.error;
      within_deadline("rdmasrc PLAYING -> NULL after EOS", [&] {
        EXPECT_EQ(gst_element_set_state(receiver.pipeline.get(), GST_STATE_NULL),
                  GST_STATE_CHANGE_SUCCESS);
      });
    } else {
      within_deadline("rdmasrc PLAYING -> NULL with every slot held", [&] {
        EXPECT_EQ(gst_element_set_state(receiver.pipeline.get(), GST_STATE_NULL),
                  GST_STATE_CHANGE_SUCCESS);
      });
      held.clear();
      // A receiver stopped on purpose ends the stream (as rdmavideo-recv --frames does): EOS
      // for the sender, not an error. A killed one is an error (below).
      const BusLog sent = wait_for_end(sender.get(), 30s);
      EXPECT_TRUE(sent.eos) << *sent.error;
      within_deadline("rdmasink PLAYING -> NULL after losing the receiver", [&] {
        EXPECT_EQ(gst_element_set_state(sender.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
      });
    }
  }
}

// Flushing seeks on the sending pipeline while large frames stream: a flush may interrupt a
// wait for a credit but never a frame half written, so the connection survives every seek
// and every frame that went out arrives whole.
TEST_F(GstElements, FlushingSeeksOnTheSenderKeepTheConnection) {
  constexpr int kSeeks = 20;
  ReceiverPipeline receiver("verify=true", "fakesink sync=false");
  auto sender = start(testsrc(caps_string("RGBA", 1920, 1080), -1) + " ! " +
                      sink_to(receiver.port, "checksum=true"));
  auto sink = element(sender.get(), "sink");
  const auto sent_frames = [&] { return u64_field(stats_of(sink.get()).get(), "frames"); };
  for (int i = 0; i < kSeeks; ++i) {
    SCOPED_TRACE("seek " + std::to_string(i));
    const uint64_t before = sent_frames();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (sent_frames() < before + 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GE(sent_frames(), before + 2)
        << describe(pop_message(sender.get(), GST_MESSAGE_ERROR, 0ms).get());
    ASSERT_TRUE(gst_element_seek_simple(sender.get(), GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 0));
  }
  // Back in PLAYING before the EOS: gst_element_send_event() holds the state lock, which
  // the pipeline's return to PLAYING after a flushing seek needs.
  ASSERT_EQ(gst_element_get_state(sender.get(), nullptr, nullptr, 30 * GST_SECOND),
            GST_STATE_CHANGE_SUCCESS);
  ASSERT_TRUE(gst_element_send_event(sender.get(), gst_event_new_eos()));
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  const GstStructure* src_stats = received.last("rdmasrc-stats");
  ASSERT_NE(src_stats, nullptr);
  EXPECT_EQ(u64_field(src_stats, "frames"), sent_frames());
  EXPECT_EQ(u64_field(src_stats, "checksum-failures"), 0u);
}

/// A TCP proxy on 127.0.0.1 between one sender and one receiver that can stop carrying the
/// sender's bytes (the receiver's still flow back), so the sender's writes stall mid-frame
/// while both peers run normally.
class PausableProxy {
 public:
  explicit PausableProxy(uint16_t target) : target_(target) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 1) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("proxy: bind/listen on 127.0.0.1:0 failed");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~PausableProxy() {
    done_ = true;
    thread_.join();
    for (int fd : {listen_fd_, client_fd_, server_fd_}) {
      if (fd >= 0) close(fd);
    }
  }
  uint16_t port() const { return port_; }
  void pause(bool paused) { paused_ = paused; }

 private:
  void run() {
    pollfd accept_fd{listen_fd_, POLLIN, 0};
    while (!done_ && poll(&accept_fd, 1, 20) <= 0) {
    }
    if (done_) return;
    client_fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    server_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(target_);
    if (client_fd_ < 0 || connect(server_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      return;
    std::vector<char> buffer(1 << 20);
    bool client_open = true;
    bool server_open = true;
    while (!done_ && (client_open || server_open)) {
      pollfd fds[2] = {{client_open && !paused_ ? client_fd_ : -1, POLLIN, 0},
                       {server_open ? server_fd_ : -1, POLLIN, 0}};
      if (poll(fds, 2, 20) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int from = i == 0 ? client_fd_ : server_fd_;
        const int to = i == 0 ? server_fd_ : client_fd_;
        const ssize_t n = recv(from, buffer.data(), buffer.size(), 0);
        if (n <= 0) {
          shutdown(to, SHUT_WR);
          (i == 0 ? client_open : server_open) = false;
          continue;
        }
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w =
              send(to, buffer.data() + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
          if (w <= 0) return;
          sent += w;
        }
      }
    }
  }

  uint16_t target_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  int client_fd_ = -1;
  int server_fd_ = -1;
  std::atomic<bool> paused_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The same with a frame surely half written: a proxy between rdmasink and rdmasrc stops
// carrying the sender's bytes, so rdmasink's write stalls mid-frame, and the flush comes
// while it is stalled for longer than the socket's send timeout (1 s). When the bytes flow
// again the frame completes, the flush finishes, and the stream goes on, every frame whole.
TEST_F(GstElements, FlushWhileAFrameIsHalfWrittenKeepsTheConnection) {
  ReceiverPipeline receiver("verify=true", "fakesink sync=false");
  PausableProxy proxy(receiver.port);
  auto sender = start(testsrc(caps_string("RGBA", 1920, 1080), -1) + " ! " +
                      sink_to(proxy.port(), "checksum=true"));
  auto sink = element(sender.get(), "sink");
  const auto sent_frames = [&] { return u64_field(stats_of(sink.get()).get(), "frames"); };
  const auto wait_for_frames = [&](uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (sent_frames() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return sent_frames() >= n;
  };
  ASSERT_TRUE(wait_for_frames(5));
  proxy.pause(true);
  // Frames stop going out once the socket buffers are full: the sink is inside a write.
  uint64_t stalled = sent_frames();
  for (;;) {
    std::this_thread::sleep_for(300ms);
    if (sent_frames() == stalled) break;
    stalled = sent_frames();
  }
  auto seek = std::async(std::launch::async, [&] {
    return gst_element_seek_simple(sender.get(), GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 0);
  });
  std::this_thread::sleep_for(2500ms);
  proxy.pause(false);
  ASSERT_EQ(seek.wait_for(30s), std::future_status::ready) << "the flushing seek never finished";
  EXPECT_TRUE(seek.get());
  ASSERT_TRUE(wait_for_frames(stalled + 5))
      << describe(pop_message(sender.get(), GST_MESSAGE_ERROR, 0ms).get());
  ASSERT_EQ(gst_element_get_state(sender.get(), nullptr, nullptr, 30 * GST_SECOND),
            GST_STATE_CHANGE_SUCCESS);
  ASSERT_TRUE(gst_element_send_event(sender.get(), gst_event_new_eos()));
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  const GstStructure* src_stats = received.last("rdmasrc-stats");
  ASSERT_NE(src_stats, nullptr);
  EXPECT_EQ(u64_field(src_stats, "frames"), sent_frames());
  EXPECT_EQ(u64_field(src_stats, "checksum-failures"), 0u);
}

// A GStreamer application handles signals (GLib's child watch, the terminal's SIGWINCH, its
// own SIGINT), and a process-directed signal lands on whichever thread does not block it,
// the elements' own threads included. A signal with a handler, SA_RESTART or not, must not
// cost the stream: every thread of this process is signalled over and over while frames
// flow both ways through rdmasink and rdmasrc. (recv() on a socket with SO_RCVTIMEO fails
// with EINTR on any handled signal, SA_RESTART or not.)
TEST_F(GstElements, SignalsHandledByTheApplicationDoNotBreakTheStream) {
  struct sigaction action {};
  action.sa_handler = [](int) {};
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  constexpr int kFrames = 120;
  ReceiverPipeline receiver("verify=true", "fakesink sync=false");
  auto sender = start(testsrc(caps_string("RGBA", 1920, 1080), kFrames) + " ! " +
                      sink_to(receiver.port, "checksum=true"));
  auto sink = element(sender.get(), "sink");
  std::atomic<bool> streaming{true};
  size_t signals = 0;
  std::thread signaller([&] {
    while (streaming) {
      for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        const pid_t tid = std::stoi(task.path().filename().string());
        if (syscall(SYS_tgkill, getpid(), tid, SIGUSR1) == 0) ++signals;
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  const BusLog received = wait_for_end(receiver.pipeline.get());
  const BusLog sent = wait_for_end(sender.get());
  streaming = false;
  signaller.join();
  // A signal sent may still be pending on a thread that has not run since: ignoring the
  // signal discards it, where restoring the default at once would let it end the process.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGUSR1, &ignore, nullptr);
  sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_GT(signals, 100u);
  ASSERT_TRUE(received.eos) << *received.error;
  ASSERT_TRUE(sent.eos) << *sent.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "checksum-failures"), 0u);
}

// The sender paused (PLAYING to PAUSED) while rdmasink waits for a credit: GstBaseSink
// unlocks render for the pause, and render must wait in preroll and then go on with the
// same frame, not return FLUSHING (which would stop the source for good, with no error).
TEST_F(GstElements, PausingTheSenderWhileItWaitsForACreditResumes) {
  constexpr guint kRing = 2;
  constexpr int kFrames = 12;
  std::mutex mutex;
  std::vector<UniqueBuffer> held;
  std::atomic<bool> hold{true};
  struct Context {
    std::mutex* mutex;
    std::vector<UniqueBuffer>* held;
    std::atomic<bool>* hold;
  } context{&mutex, &held, &hold};
  ReceiverPipeline receiver("ring-size=" + std::to_string(kRing) + " verify=true",
                            "fakesink name=out sync=false enable-last-sample=false "
                            "signal-handoffs=true");
  auto out = element(receiver.pipeline.get(), "out");
  g_signal_connect(out.get(), "handoff",
                   G_CALLBACK(+[](GstElement*, GstBuffer* buffer, GstPad*, gpointer data) {
                     auto* c = static_cast<Context*>(data);
                     std::lock_guard lock(*c->mutex);
                     if (*c->hold) c->held->emplace_back(gst_buffer_ref(buffer));
                   }),
                   &context);
  auto sender = start(testsrc(caps_string("NV12", 64, 48), kFrames) + " ! " +
                      sink_to(receiver.port, "checksum=true"));
  auto sink = element(sender.get(), "sink");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (u64_field(stats_of(sink.get()).get(), "frames") < kRing &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(u64_field(stats_of(sink.get()).get(), "frames"), kRing);
  std::this_thread::sleep_for(300ms);  // render is now waiting for a credit
  within_deadline("rdmasink PLAYING -> PAUSED while waiting for a credit", [&] {
    EXPECT_NE(gst_element_set_state(sender.get(), GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    EXPECT_EQ(gst_element_get_state(sender.get(), nullptr, nullptr, 10 * GST_SECOND),
              GST_STATE_CHANGE_SUCCESS);
  });
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  {
    std::lock_guard lock(mutex);
    hold = false;
    held.clear();
  }
  const BusLog sent = wait_for_end(sender.get(), 30s);
  EXPECT_TRUE(sent.eos) << *sent.error;
  const BusLog received = wait_for_end(receiver.pipeline.get(), 30s);
  ASSERT_TRUE(received.eos) << *received.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "dropped"), 0u);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "checksum-failures"), 0u);
}

// Caps change while downstream still holds every slot of the old format: frames of the new
// format still come (the old slots stay with their buffers), and nothing deadlocks.
TEST_F(GstElements, CapsChangeWhileDownstreamHoldsEveryOldSlot) {
  constexpr guint kRing = 2;
  ReceiverPipeline receiver("ring-size=" + std::to_string(kRing));
  auto sender = start("appsrc name=in format=time ! " + sink_to(receiver.port));
  auto in = element(sender.get(), "in");
  size_t frame_number = 0;
  const auto push_segment = [&](const std::string& caps_text, int frames) {
    UniqueCaps caps(gst_caps_from_string(caps_text.c_str()));
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, caps.get()));
    gst_app_src_set_caps(GST_APP_SRC(in.get()), caps.get());
    for (int i = 0; i < frames; ++i, ++frame_number) {
      GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
      GstVideoFrame frame;
      ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE));
      fill_pattern(frame, kSeed, frame_number);
      gst_video_frame_unmap(&frame);
      GST_BUFFER_PTS(buffer) = frame_number * GST_SECOND / 30;
      ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(in.get()), buffer), GST_FLOW_OK);
    }
  };
  push_segment(caps_string("NV12", 160, 120), kRing);
  std::vector<UniqueSample> held;
  while (held.size() < kRing) {
    UniqueSample sample(gst_app_sink_try_pull_sample(receiver.appsink(), 30 * GST_SECOND));
    ASSERT_NE(sample, nullptr);
    held.push_back(std::move(sample));
  }
  push_segment(caps_string("RGBA", 96, 64), 3);
  ASSERT_EQ(gst_app_src_end_of_stream(GST_APP_SRC(in.get())), GST_FLOW_OK);
  const auto got = pull_all(receiver.appsink(), SIZE_MAX, 20s);
  ASSERT_EQ(got.size(), 3u)
      << "frames of the new format did not arrive while the old slots were held";
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&got[i].info), GST_VIDEO_FORMAT_RGBA);
    const auto diff =
        first_difference(got[i].bytes, pattern_bytes(got[i].info, kSeed, kRing + i), kRing + i);
    EXPECT_FALSE(diff) << *diff;
  }
  for (size_t i = 0; i < held.size(); ++i) {
    const Received r = take(held[i].get());
    EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&r.info), GST_VIDEO_FORMAT_NV12);
    const auto diff = first_difference(r.bytes, pattern_bytes(r.info, kSeed, i), i);
    EXPECT_FALSE(diff) << "held across the caps change: " << *diff;
  }
}

// appsrc changes caps twice mid-stream (size, then format) on one connection: rdmasrc
// renegotiates, and each frame arrives under its own caps, intact.
TEST_F(GstElements, CapsChangeMidStreamArrivesAsNewCapsWithCorrectFrames) {
  const std::vector<std::string> segments = {
      caps_string("NV12", 320, 240), caps_string("NV12", 640, 480), caps_string("UYVY", 640, 480)};
  constexpr int kPerSegment = 4;
  ReceiverPipeline receiver;
  auto sender = start("appsrc name=in format=time ! " + sink_to(receiver.port));
  auto in = element(sender.get(), "in");
  std::vector<GstVideoInfo> sent_info;
  size_t frame_number = 0;
  for (const auto& caps_text : segments) {
    UniqueCaps caps(gst_caps_from_string(caps_text.c_str()));
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, caps.get()));
    gst_app_src_set_caps(GST_APP_SRC(in.get()), caps.get());
    for (int i = 0; i < kPerSegment; ++i, ++frame_number) {
      GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
      GstVideoFrame frame;
      ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE));
      fill_pattern(frame, kSeed, frame_number);
      gst_video_frame_unmap(&frame);
      GST_BUFFER_PTS(buffer) = frame_number * GST_SECOND / 30;
      GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
      ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(in.get()), buffer), GST_FLOW_OK);
      sent_info.push_back(info);
    }
  }
  ASSERT_EQ(gst_app_src_end_of_stream(GST_APP_SRC(in.get())), GST_FLOW_OK);

  const auto got = pull_all(receiver.appsink());
  ASSERT_EQ(got.size(), frame_number);
  size_t caps_changes = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    const GstVideoInfo& want = sent_info[i];
    EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&got[i].info), GST_VIDEO_INFO_FORMAT(&want));
    EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&got[i].info), GST_VIDEO_INFO_WIDTH(&want));
    EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&got[i].info), GST_VIDEO_INFO_HEIGHT(&want));
    if (i > 0 && !gst_video_info_is_equal(&got[i].info, &got[i - 1].info)) ++caps_changes;
    EXPECT_TRUE(got[i].slot_memory);
    const auto diff = first_difference(got[i].bytes, pattern_bytes(want, kSeed, i), i);
    EXPECT_FALSE(diff) << *diff;
  }
  EXPECT_EQ(caps_changes, segments.size() - 1);
  EXPECT_TRUE(gst_app_sink_is_eos(receiver.appsink()));
  const BusLog sent = wait_for_end(sender.get());
  ASSERT_TRUE(sent.eos) << *sent.error;
  ASSERT_NE(sent.last("rdmasink-stats"), nullptr);
  EXPECT_EQ(u64_field(sent.last("rdmasink-stats"), "frames"), frame_number);
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), frame_number);
}

// The same two pipelines taken NULL -> PLAYING -> NULL twenty times, a short stream each
// time: no error, every stream complete, and no file descriptor left behind.
TEST_F(GstElements, RepeatedNullPlayingNullLeavesNoErrorsOrFds) {
  constexpr int kCycles = 20;
  constexpr int kFrames = 5;
  auto receiver = parse_pipeline("rdmasrc name=src address=127.0.0.1 port=0 ! fakesink sync=false");
  auto sender = parse_pipeline(testsrc(caps_string("NV12", 128, 96), kFrames) + " ! " + sink_to(1));
  auto src = element(receiver.get(), "src");
  auto sink = element(sender.get(), "sink");
  size_t fds_after_warmup = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    guint port = 0;
    g_object_get(src.get(), "bound-port", &port, nullptr);
    ASSERT_NE(port, 0u);
    g_object_set(sink.get(), "port", port, nullptr);
    ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE)
        << describe(pop_message(sender.get(), GST_MESSAGE_ERROR, 1s).get());
    const BusLog received = wait_for_end(receiver.get());
    ASSERT_TRUE(received.eos) << *received.error;
    ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
    EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), static_cast<uint64_t>(kFrames));
    const BusLog sent = wait_for_end(sender.get());
    ASSERT_TRUE(sent.eos) << *sent.error;
    EXPECT_EQ(gst_element_set_state(sender.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    EXPECT_EQ(gst_element_set_state(receiver.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    guint bound = 1;
    g_object_get(src.get(), "bound-port", &bound, nullptr);
    EXPECT_EQ(bound, 0u) << "bound-port after stop";
    if (cycle == 1) fds_after_warmup = open_fd_count();
  }
  EXPECT_EQ(open_fd_count(), fds_after_warmup)
      << "file descriptors leaked over " << kCycles - 2 << " cycles";
}

// rdmasrc started and stopped with no sender, and stopped while a sender is mid-stream:
// stop() wakes every wait, and nothing is left open.
TEST_F(GstElements, StopWhileWaitingOrMidStreamLeavesNoFds) {
  auto idle = parse_pipeline("rdmasrc address=127.0.0.1 port=0 ! fakesink sync=false");
  for (int i = 0; i < 2; ++i) {
    ASSERT_NE(gst_element_set_state(idle.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(gst_element_set_state(idle.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  const size_t fds = open_fd_count();
  for (int i = 0; i < 20; ++i) {
    ASSERT_NE(gst_element_set_state(idle.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(gst_element_set_state(idle.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  EXPECT_EQ(open_fd_count(), fds) << "an idle rdmasrc leaked file descriptors";
  auto error = pop_message(idle.get(), GST_MESSAGE_ERROR, 0ms);
  EXPECT_EQ(error, nullptr) << describe(error.get());

  // A sender with no end, stopped mid-stream: the receiver sees EOS, never an error.
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE("mid-stream stop " + std::to_string(i));
    ReceiverPipeline receiver("", "fakesink sync=false");
    auto sender = start(testsrc(caps_string("NV12", 128, 96), -1) + " ! " + sink_to(receiver.port));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (u64_field(stats_of(receiver.src.get()).get(), "frames") < 3 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_GE(u64_field(stats_of(receiver.src.get()).get(), "frames"), 3u);
    ASSERT_EQ(gst_element_set_state(sender.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    const BusLog received = wait_for_end(receiver.pipeline.get());
    EXPECT_TRUE(received.eos) << *received.error;
  }
  EXPECT_EQ(open_fd_count(), fds) << "stopping mid-stream leaked file descriptors";
}

// The built-in test pattern's frame `sequence` as GStreamer's visible bytes, read from the
// sender's layout for this stream.
FrameBytes test_pattern_bytes(const proto::StreamStart& format, const GstVideoInfo& info,
                              uint64_t sequence) {
  TestPattern pattern(format);
  const auto data = pattern.frame(sequence);
  FrameBytes out;
  for (int p = 0; p < format.layout.plane_count; ++p) {
    const size_t row = visible_row_bytes(info, static_cast<guint>(p));
    const size_t rows = visible_rows(info, static_cast<guint>(p));
    const auto& plane = format.layout.planes[p];
    std::vector<uint8_t> bytes(row * rows);
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(bytes.data() + r * row, data.data() + plane.offset + r * plane.stride, row);
    }
    out.planes.push_back(std::move(bytes));
    out.row_bytes.push_back(row);
  }
  return out;
}

// rdmavideo-send packs RGB rows tightly (641 x 3 = 1923 bytes); GStreamer pads them to 1924.
// Downstream that reads GstVideoMeta gets the ring slot with the sender's strides in a meta
// (no copy); downstream that does not (appsink) gets one copy in GStreamer's layout, counted.
// Either way every frame is the sender's test pattern.
TEST_F(GstElements, SenderStridesComeAsVideoMetaOrAreRepackedAndCounted) {
  constexpr int kFrames = 6;
  const auto format = proto::make_stream_start(PixelFormat::rgb24, 641, 361, Rational{60, 1});
  ASSERT_TRUE(format);
  ASSERT_EQ(format->layout.planes[0].stride, 1923u);
  TempDir dir;
  const auto send_args = [&](uint16_t port) {
    return std::vector<std::string>{RDMAVIDEO_SEND_BIN,
                                    "--connect",
                                    "127.0.0.1:" + std::to_string(port),
                                    "--testsrc",
                                    "-s",
                                    "641x361",
                                    "--pix-fmt",
                                    "rgb24",
                                    "--frames",
                                    std::to_string(kFrames),
                                    "--checksum",
                                    "--transport",
                                    "tcp",
                                    "--quiet"};
  };

  {
    SCOPED_TRACE("downstream reads GstVideoMeta");
    GstHarness* h = gst_harness_new_parse("rdmasrc address=127.0.0.1 port=0 verify=true");
    gst_harness_add_propose_allocation_meta(h, GST_VIDEO_META_API_TYPE, nullptr);
    gst_harness_play(h);
    UniqueObject<GstElement> src(gst_harness_find_element(h, "rdmasrc"));
    guint port = 0;
    g_object_get(src.get(), "bound-port", &port, nullptr);
    ASSERT_NE(port, 0u);
    Process send(send_args(static_cast<uint16_t>(port)), dir / "send-meta.stderr");
    for (int i = 0; i < kFrames; ++i) {
      UniqueBuffer buffer(gst_harness_pull(h));
      ASSERT_NE(buffer, nullptr) << "frame " << i << " did not arrive: " << send.stderr_text();
      UniqueCaps caps(gst_pad_get_current_caps(h->sinkpad));
      GstVideoInfo info;
      ASSERT_TRUE(gst_video_info_from_caps(&info, caps.get()));
      EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_RGB);
      EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&info), 641);
      const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer.get());
      ASSERT_NE(meta, nullptr) << "the sender's strides were not described by a GstVideoMeta";
      EXPECT_EQ(meta->stride[0], 1923);
      EXPECT_TRUE(gst_memory_is_type(gst_buffer_peek_memory(buffer.get(), 0), kSlotMemoryType));
      const auto diff = first_difference(frame_bytes(buffer.get(), info),
                                         test_pattern_bytes(*format, info, i), i);
      EXPECT_FALSE(diff) << *diff;
    }
    EXPECT_EQ(send.wait(30s), 0) << send.stderr_text();
    auto stats = stats_of(src.get());
    EXPECT_EQ(u64_field(stats.get(), "frames"), static_cast<uint64_t>(kFrames));
    EXPECT_EQ(u64_field(stats.get(), "copies"), 0u);
    EXPECT_EQ(u64_field(stats.get(), "checksum-failures"), 0u);
    src.reset();
    gst_harness_teardown(h);
  }
  {
    SCOPED_TRACE("downstream reads GStreamer's layout only");
    ReceiverPipeline receiver("verify=true");
    Process send(send_args(receiver.port), dir / "send-copy.stderr");
    const auto got = pull_all(receiver.appsink());
    ASSERT_EQ(got.size(), static_cast<size_t>(kFrames)) << send.stderr_text();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_FALSE(got[i].slot_memory) << "frame " << i << " should have been repacked";
      EXPECT_EQ(GST_VIDEO_INFO_PLANE_STRIDE(&got[i].info, 0), 1924);
      const auto diff =
          first_difference(got[i].bytes, test_pattern_bytes(*format, got[i].info, i), i);
      EXPECT_FALSE(diff) << *diff;
    }
    EXPECT_EQ(send.wait(30s), 0) << send.stderr_text();
    const BusLog received = wait_for_end(receiver.pipeline.get());
    ASSERT_TRUE(received.eos) << *received.error;
    ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
    EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "copies"), static_cast<uint64_t>(kFrames));
    EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "checksum-failures"), 0u);
  }
}

// rdmasink mode=live drops a frame when no slot is free and counts it; rdmasrc sees the gap
// in the sequence, counts the same frames as dropped and marks the next buffer DISCONT.
TEST_F(GstElements, LiveModeDropsAreCountedOnBothSides) {
  struct Holder {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<UniqueBuffer> held;
    std::vector<guint64> offsets;
    std::vector<bool> discont;
    bool hold = true;
  } holder;
  constexpr guint kRing = 2;
  ReceiverPipeline receiver(
      "ring-size=" + std::to_string(kRing),
      "fakesink name=out sync=false enable-last-sample=false signal-handoffs=true");
  auto out = element(receiver.pipeline.get(), "out");
  g_signal_connect(out.get(), "handoff",
                   G_CALLBACK(+[](GstElement*, GstBuffer* buffer, GstPad*, gpointer data) {
                     auto* h = static_cast<Holder*>(data);
                     std::lock_guard lock(h->mutex);
                     h->offsets.push_back(GST_BUFFER_OFFSET(buffer));
                     h->discont.push_back(GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DISCONT));
                     if (h->hold) h->held.emplace_back(gst_buffer_ref(buffer));
                     h->cv.notify_all();
                   }),
                   &holder);
  const auto count = [&] {
    std::lock_guard lock(holder.mutex);
    return holder.offsets.size();
  };
  auto sender =
      start(testsrc(caps_string("NV12", 64, 48), -1) + " ! " + sink_to(receiver.port, "mode=live"));
  auto sink = element(sender.get(), "sink");
  const auto wait_until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    return done();
  };
  ASSERT_TRUE(wait_until([&] { return count() >= kRing; }));
  ASSERT_TRUE(wait_until([&] { return u64_field(stats_of(sink.get()).get(), "dropped") >= 10; }))
      << "a live sender with no free slot did not drop";
  EXPECT_EQ(count(), kRing) << "frames arrived with every slot held";
  {
    std::lock_guard lock(holder.mutex);
    holder.hold = false;
    holder.held.clear();
  }
  ASSERT_TRUE(wait_until([&] { return count() >= kRing + 20; }));
  ASSERT_EQ(gst_element_set_state(sender.get(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;

  const auto sink_stats = stats_of(sink.get());
  const GstStructure* src_stats = received.last("rdmasrc-stats");
  ASSERT_NE(src_stats, nullptr);
  std::lock_guard lock(holder.mutex);
  const uint64_t last_sequence = holder.offsets.back();
  EXPECT_EQ(u64_field(src_stats, "frames"), holder.offsets.size());
  EXPECT_EQ(u64_field(sink_stats.get(), "frames"), holder.offsets.size())
      << "a frame sent never arrived";
  // Every sequence number up to the last one arrived is either a frame or a drop, and the
  // drops after it come with EndOfStream: rdmasrc ends up counting what the sender dropped.
  EXPECT_GE(u64_field(src_stats, "frames") + u64_field(src_stats, "dropped"), last_sequence + 1);
  EXPECT_GE(u64_field(src_stats, "dropped"), 10u);
  EXPECT_EQ(u64_field(src_stats, "dropped"), u64_field(sink_stats.get(), "dropped"));
  // The sink says why: each frame waited out its bound for a slot that did not come.
  EXPECT_EQ(u64_field(sink_stats.get(), "dropped-no-credit"),
            u64_field(sink_stats.get(), "dropped"));
  for (const char* other :
       {"dropped-late", "dropped-behind", "dropped-not-up", "dropped-no-buffer"})
    EXPECT_EQ(u64_field(sink_stats.get(), other), 0u) << other;
  ASSERT_GT(holder.offsets.size(), kRing);
  EXPECT_GT(holder.offsets[kRing], kRing) << "no gap after the held frames";
  EXPECT_TRUE(holder.discont[kRing]) << "the frame after a gap is not DISCONT";
}

// rdmasrc is-live=true is a live source (no preroll, live in the latency query) and stamps
// each buffer with the running time it arrived at: never ahead of the pipeline's running
// time when it is pulled, never going backwards.
TEST_F(GstElements, IsLiveSourceStampsBuffersWithTheirArrivalRunningTime) {
  constexpr int kFrames = 15;
  auto receiver = parse_pipeline(
      "rdmasrc name=src address=127.0.0.1 port=0 is-live=true ! appsink name=out sync=false");
  auto src = element(receiver.get(), "src");
  auto out = element(receiver.get(), "out");
  gboolean live = FALSE;
  g_object_get(src.get(), "is-live", &live, nullptr);
  ASSERT_TRUE(live);
  ASSERT_EQ(gst_element_set_state(receiver.get(), GST_STATE_PAUSED), GST_STATE_CHANGE_NO_PREROLL)
      << "a live source does not preroll";
  ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  guint port = 0;
  g_object_get(src.get(), "bound-port", &port, nullptr);
  ASSERT_NE(port, 0u);
  auto sender = start("videotestsrc is-live=true num-buffers=" + std::to_string(kFrames) + " ! " +
                      caps_string("NV12", 64, 48) + " ! " +
                      sink_to(static_cast<uint16_t>(port), "mode=live"));
  GstClockTime previous = 0;
  int frames = 0;
  for (;; ++frames) {
    UniqueSample sample(gst_app_sink_try_pull_sample(GST_APP_SINK(out.get()), 30 * GST_SECOND));
    if (!sample) break;
    const GstClockTime pts = GST_BUFFER_PTS(gst_sample_get_buffer(sample.get()));
    UniqueObject<GstClock> clock(gst_element_get_clock(receiver.get()));
    ASSERT_NE(clock, nullptr);
    const GstClockTime running =
        gst_clock_get_time(clock.get()) - gst_element_get_base_time(receiver.get());
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(pts)) << "frame " << frames;
    EXPECT_LE(pts, running) << "frame " << frames << " is stamped after the time it was pulled";
    EXPECT_GE(pts, previous) << "frame " << frames << " is stamped before the frame ahead of it";
    previous = pts;
  }
  EXPECT_EQ(frames, kFrames);
  EXPECT_TRUE(gst_app_sink_is_eos(GST_APP_SINK(out.get())));
  GstQuery* latency = gst_query_new_latency();
  ASSERT_TRUE(gst_element_query(src.get(), latency));
  gboolean query_live = FALSE;
  gst_query_parse_latency(latency, &query_live, nullptr, nullptr);
  gst_query_unref(latency);
  EXPECT_TRUE(query_live) << "the latency query does not say live";
}

// Downstream that refuses the sender's format: rdmasrc posts a negotiation ERROR that names
// the format it was offered.
TEST_F(GstElements, SrcPostsNegotiationErrorWhenDownstreamRefusesTheFormat) {
  ReceiverPipeline receiver("", "capsfilter caps=video/x-raw,format=I420 ! fakesink sync=false");
  auto sender = start(testsrc(caps_string("NV12", 64, 48), 10) + " ! " + sink_to(receiver.port));
  auto message = pop_message(receiver.pipeline.get(), GST_MESSAGE_ERROR, 30s);
  ASSERT_NE(message, nullptr) << "no ERROR from rdmasrc";
  GError* error = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_error(message.get(), &error, &debug);
  EXPECT_EQ(error->domain, GST_CORE_ERROR);
  EXPECT_EQ(error->code, GST_CORE_ERROR_NEGOTIATION);
  const std::string details = debug ? debug : "";
  g_error_free(error);
  g_free(debug);
  EXPECT_NE(details.find("nv12 64x48"), std::string::npos) << details;
  EXPECT_STREQ(GST_MESSAGE_SRC_NAME(message.get()), "src");
}

// Either pipeline paused mid-stream for longer than the peer timeout (5 s): the paused side
// keeps its connection alive (rdmasink's keepalive thread, rdmasrc's receive thread), and
// after PLAYING again the stream completes with every frame verified.
TEST_F(GstElements, PausingEitherSideLongerThanThePeerTimeoutKeepsTheStream) {
  ReceiverPipeline receiver("verify=true", "fakesink name=out sync=false");
  auto sender = start(testsrc(caps_string("NV12", 320, 240), -1) + " ! " +
                      sink_to(receiver.port, "checksum=true"));
  auto sink = element(sender.get(), "sink");
  const auto frames_of = [](GstElement* e) { return u64_field(stats_of(e).get(), "frames"); };
  const auto wait_for = [&](GstElement* e, uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (frames_of(e) < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    return frames_of(e) >= n;
  };
  for (GstElement* paused : {sender.get(), receiver.pipeline.get()}) {
    SCOPED_TRACE(paused == sender.get() ? "sender paused" : "receiver paused");
    ASSERT_TRUE(wait_for(sink.get(), frames_of(sink.get()) + 3));
    ASSERT_NE(gst_element_set_state(paused, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    std::this_thread::sleep_for(6s);
    auto error = pop_message(paused == sender.get() ? receiver.pipeline.get() : sender.get(),
                             GST_MESSAGE_ERROR, 0ms);
    ASSERT_EQ(error, nullptr) << "the other side gave up on the paused one: "
                              << describe(error.get());
    ASSERT_NE(gst_element_set_state(paused, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  }
  ASSERT_TRUE(wait_for(sink.get(), frames_of(sink.get()) + 3));
  ASSERT_EQ(gst_element_get_state(sender.get(), nullptr, nullptr, 30 * GST_SECOND),
            GST_STATE_CHANGE_SUCCESS);
  ASSERT_TRUE(gst_element_send_event(sender.get(), gst_event_new_eos()));
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), frames_of(sink.get()));
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "checksum-failures"), 0u);
}

// A paused rdmasink connects in start() and sends StreamStart only once caps arrive (a live
// source in PAUSED sends none), keeping the connection alive meanwhile: past its proof of the
// key, it is no stream yet and has no deadline. An anonymous flood (silent sockets, and Hellos
// that offer the key and never prove it) under a descriptor limit it exhausts sheds anonymous
// connections only: once PLAYING the sink streams, every frame verified.
TEST_F(GstElements, PausedAuthenticatedSinkSurvivesAnAnonymousFlood) {
  TempDir dir;
  const auto key = dir / "shared.key";
  ASSERT_TRUE(auth::create_key_file(key));
#ifdef RDMAVIDEO_ASAN
  // AddressSanitizer's runtime opens files to start a thread: out of descriptors, it cannot,
  // and it fails the thread it already started. The flood alone, then, without the limit.
  const bool exhaust = false;
#else
  const bool exhaust = true;
#endif
  std::vector<std::string> argv{RDMAVIDEO_RECV_BIN, "--listen",     "127.0.0.1:0",
                                "--serve",          "--verify",     "--key-file",
                                key.string(),       "--stats-json", (dir / "recv.json").string()};
  if (exhaust) argv.insert(argv.begin(), {"prlimit", "--nofile=16"});
  Process recv(argv, dir / "recv.stderr");
  const auto port = recv.wait_for_stderr(R"(listening on 127\.0\.0\.1:(\d+))", 30s);
  ASSERT_TRUE(port) << recv.stderr_text();
  auto sender = parse_pipeline(
      "videotestsrc is-live=true pattern=smpte ! " + caps_string("NV12", 320, 240) + " ! " +
      sink_to(static_cast<uint16_t>(std::stoi(*port)), "checksum=true key-file=" + key.string()));
  // Connected and authenticated by the time PAUSED is reached (start() connects).
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  {
    Flood silent(std::stoi(*port), 200);
    std::vector<std::unique_ptr<RawPeer>> offering;
    for (int i = 0; i < 20; ++i) {
      try {
        offering.push_back(std::make_unique<RawPeer>(std::stoi(*port)));
        proto::Hello hello;
        hello.flags = proto::kCapAuth;  // offers the key, then never proves it
        hello.max_frame_bytes = 1 << 20;
        // The receiver may have shed this peer already (out of descriptors right now: that is
        // the flood's point), so the send may fail; what counts is what the receiver does.
        const auto bytes = proto::encode(hello);
        (void)::send(offering.back()->fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      } catch (const std::exception&) {
        // The connection itself refused: the same.
      }
    }
    std::this_thread::sleep_for(6s);  // past the handshake deadline and the peer timeout
  }
  if (exhaust) {
    EXPECT_NE(recv.stderr_text().find("Too many open files"), std::string::npos)
        << "the flood never used up the descriptors:\n"
        << recv.stderr_text();
  }
  auto error = pop_message(sender.get(), GST_MESSAGE_ERROR, 0ms);
  ASSERT_EQ(error, nullptr) << "the paused sink was cut: " << describe(error.get()) << "\n"
                            << recv.stderr_text();
  ASSERT_NE(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(recv.wait_for_stderr(R"(stream 1 ring 1: 320x240 nv12)", 10s)) << recv.stderr_text();
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(gst_element_send_event(sender.get(), gst_event_new_eos()));
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
  ASSERT_TRUE(recv.wait_for_stderr("stream 1 the sender ended it", 10s)) << recv.stderr_text();
  recv.signal(SIGTERM);
  ASSERT_EQ(recv.wait(10s), 0) << recv.stderr_text();
  const auto r = read_json(dir / "recv.json");
  EXPECT_GT(r["frames"].get<int>(), 10);
  EXPECT_EQ(r["checksum_failures"], 0);
  ASSERT_EQ(r["streams"].size(), 1u);
  EXPECT_EQ(r["streams"][0]["state"], "ended");
}

// A live rdmasrc paused while create() waits for the next frame (GstBaseSrc unlocks it for
// PLAYING to PAUSED): after PLAYING again the stream goes on to its end.
TEST_F(GstElements, PausingALiveSrcWhileItWaitsForAFrameResumes) {
  constexpr int kFrames = 30;
  auto receiver = parse_pipeline(
      "rdmasrc name=src address=127.0.0.1 port=0 is-live=true ! fakesink sync=false");
  auto src = element(receiver.get(), "src");
  ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  guint port = 0;
  g_object_get(src.get(), "bound-port", &port, nullptr);
  ASSERT_NE(port, 0u);
  // 30 fps, paced by the sender's clock: create() spends most of its time waiting.
  auto sender = start("videotestsrc is-live=true num-buffers=" + std::to_string(kFrames) + " ! " +
                      caps_string("NV12", 64, 48) + " ! " +
                      sink_to(static_cast<uint16_t>(port), "mode=live"));
  const auto frames = [&] { return u64_field(stats_of(src.get()).get(), "frames"); };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (frames() < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(frames(), 5u);
  within_deadline("live rdmasrc PLAYING -> PAUSED", [&] {
    EXPECT_NE(gst_element_set_state(receiver.get(), GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  });
  std::this_thread::sleep_for(300ms);
  ASSERT_NE(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const BusLog received = wait_for_end(receiver.get(), 30s);
  ASSERT_TRUE(received.eos) << *received.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  const GstStructure* stats = received.last("rdmasrc-stats");
  // A live sender drops what finds no free slot; every frame is either received or counted.
  EXPECT_EQ(u64_field(stats, "frames") + u64_field(stats, "dropped"),
            static_cast<uint64_t>(kFrames));
  EXPECT_GT(u64_field(stats, "frames"), 5u) << "nothing arrived after PLAYING again";
}

// EOS before any frame (and so before any caps) still ends the receiving pipeline.
TEST_F(GstElements, EosWithoutFramesPropagates) {
  ReceiverPipeline receiver;
  auto sender = start("appsrc name=in format=time caps=" + caps_string("NV12", 64, 48) + " ! " +
                      sink_to(receiver.port));
  auto in = element(sender.get(), "in");
  ASSERT_EQ(gst_app_src_end_of_stream(GST_APP_SRC(in.get())), GST_FLOW_OK);
  const BusLog sent = wait_for_end(sender.get());
  EXPECT_TRUE(sent.eos) << *sent.error;
  const BusLog received = wait_for_end(receiver.pipeline.get(), 30s);
  EXPECT_TRUE(received.eos) << *received.error;
  ASSERT_NE(received.last("rdmasrc-stats"), nullptr);
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "frames"), 0u);
}

// rdmasink to a port nobody listens on: the state change fails and the ERROR names the
// receiver's address.
TEST_F(GstElements, SinkWithNoReceiverPostsErrorNamingTheAddress) {
  const uint16_t port = free_port();
  auto sender = parse_pipeline(testsrc(caps_string("NV12", 64, 48), 5) + " ! " + sink_to(port));
  EXPECT_EQ(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  auto message = pop_message(sender.get(), GST_MESSAGE_ERROR, 10s);
  ASSERT_NE(message, nullptr) << "no ERROR on the bus";
  GError* error = nullptr;
  gst_message_parse_error(message.get(), &error, nullptr);
  EXPECT_EQ(error->domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(error->code, GST_RESOURCE_ERROR_OPEN_WRITE);
  g_error_free(error);
  const std::string text = describe(message.get());
  EXPECT_NE(text.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << text;
  EXPECT_STREQ(GST_MESSAGE_SRC_NAME(message.get()), "sink");
}

// A sender (rdmavideo-send) killed mid-stream: rdmasrc says so in a WARNING naming the
// sender, then ends the stream with EOS, so a recording downstream is finished and playable
// (an ERROR, as before, left a muxer's file without its index).
TEST_F(GstElements, SrcWarnsAndEndsTheStreamWhenTheSenderIsKilled) {
  TempDir dir;
  ReceiverPipeline receiver("", "fakesink sync=false");
  Process send({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:" + std::to_string(receiver.port),
                "--testsrc", "-s", "320x240", "--pix-fmt", "nv12", "--transport", "tcp", "--quiet"},
               dir / "send.stderr");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (u64_field(stats_of(receiver.src.get()).get(), "frames") < 10 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(u64_field(stats_of(receiver.src.get()).get(), "frames"), 10u) << send.stderr_text();
  send.signal(SIGKILL);
  EXPECT_EQ(send.wait(10s), 128 + SIGKILL);
  const BusLog received = wait_for_end(receiver.pipeline.get(), 30s);
  EXPECT_TRUE(received.eos) << received.error.value_or("");
  EXPECT_FALSE(received.error) << *received.error;
  EXPECT_TRUE(received.warned("failed or went away")) << "a killed sender is not a clean end";
  EXPECT_TRUE(received.warned("127.0.0.1:")) << "the warning names the sender";
}

// A receiver (rdmavideo-recv) killed mid-stream: rdmasink posts an ERROR, not EOS.
TEST_F(GstElements, SinkPostsErrorWhenTheReceiverIsKilled) {
  TempDir dir;
  Receiver recv(dir, {"--quiet", "--transport", "tcp"});
  auto sender = start(testsrc(caps_string("NV12", 320, 240), -1) + " ! " +
                      sink_to(static_cast<uint16_t>(recv.port())));
  auto sink = element(sender.get(), "sink");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (u64_field(stats_of(sink.get()).get(), "frames") < 10 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(u64_field(stats_of(sink.get()).get(), "frames"), 10u) << recv.process().stderr_text();
  recv.process().signal(SIGKILL);
  EXPECT_EQ(recv.process().wait(10s), 128 + SIGKILL);
  const BusLog sent = wait_for_end(sender.get(), 30s);
  EXPECT_FALSE(sent.eos) << "a killed receiver must not look like a clean end of stream";
  ASSERT_TRUE(sent.error);
  EXPECT_NE(sent.error->find("error from sink:"), std::string::npos) << *sent.error;
}

}  // namespace
}  // namespace rdmavideo::testing

namespace rdmavideo::testing {
namespace {

// ---- memory:CUDAMemory

bool has_cuda_feature(const GstCaps* caps) {
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstCapsFeatures* features = gst_caps_get_features(caps, i);
    if (features && gst_caps_features_contains(features, "memory:CUDAMemory")) return true;
  }
  return false;
}

std::string string_property(GstElement* e, const char* name) {
  gchar* value = nullptr;
  g_object_get(e, name, &value, nullptr);
  std::string text = value ? value : "";
  g_free(value);
  return text;
}

// The templates list memory:CUDAMemory where the build has GStreamer's CUDA library; a caps
// query offers it only where the GPU is there too, and `cuda-caps` says which, or why not.
TEST_F(GstElements, CudaCapsAreInTheTemplatesWhereBuiltAndOfferedOnlyWithAGpu) {
  for (const char* name : {"rdmasink", "rdmasrc"}) {
    SCOPED_TRACE(name);
    UniqueObject<GstElement> e(gst_element_factory_make(name, nullptr));
    ASSERT_NE(e, nullptr);
    GstPad* pad =
        GST_ELEMENT_PADS(e.get())->data ? GST_PAD(GST_ELEMENT_PADS(e.get())->data) : nullptr;
    ASSERT_NE(pad, nullptr);
    GstCaps* templ = gst_pad_get_pad_template_caps(pad);
    EXPECT_EQ(has_cuda_feature(templ), bool{RDMAVIDEO_GST_CUDA_CAPS}) << gst_caps_to_string(templ);
    gst_caps_unref(templ);
    const std::string status = string_property(e.get(), "cuda-caps");
    GstCaps* offered = gst_pad_query_caps(pad, nullptr);
    EXPECT_EQ(has_cuda_feature(offered), status.starts_with("offered on cuda:0")) << status;
    EXPECT_FALSE(gst_caps_is_empty(offered)) << "system memory caps are always offered";
    gst_caps_unref(offered);
    if (!RDMAVIDEO_GST_CUDA_CAPS) {
      EXPECT_NE(status.find("this build has no memory:CUDAMemory caps"), std::string::npos)
          << status;
    } else if (!cuda::Driver::shared()) {
      EXPECT_NE(status.find("no CUDA driver"), std::string::npos) << status;
    }
  }
}

// Downstream of rdmasrc asks for CUDA memory where none is offered: the elements do not link
// (as with any caps they cannot meet), and `cuda-caps` says why; system memory still links.
TEST_F(GstElements, DownstreamWantingCudaMemoryWithoutItDoesNotLinkAndTheElementSaysWhy) {
  UniqueObject<GstElement> probe(gst_element_factory_make("rdmasrc", nullptr));
  const std::string status = string_property(probe.get(), "cuda-caps");
  if (status.starts_with("offered")) GTEST_SKIP() << "CUDA caps are offered here: " << status;
  EXPECT_NE(status.find("no memory:CUDAMemory caps"), std::string::npos) << status;
  // The video pad by name: gst-launch-1.0 would wait for a sometimes pad (an audio_N) that
  // might link, as it does with any demuxer.
  UniqueObject<GstElement> src(gst_element_factory_make("rdmasrc", nullptr));
  UniqueObject<GstElement> filter(gst_element_factory_make("capsfilter", nullptr));
  UniqueCaps cuda_only(gst_caps_from_string("video/x-raw(memory:CUDAMemory)"));
  g_object_set(filter.get(), "caps", cuda_only.get(), nullptr);
  EXPECT_FALSE(gst_element_link_pads(src.get(), "src", filter.get(), "sink"))
      << "linked to a CUDA-only downstream";
  auto linked =
      parse_pipeline("rdmasrc address=127.0.0.1 port=0 ! capsfilter caps=video/x-raw ! fakesink");
  EXPECT_NE(linked, nullptr);
}

// memory=cuda where there is no GPU: neither element starts, and the error names the driver.
TEST_F(GstElements, MemoryCudaWithoutAGpuFailsToStartNamingWhatIsMissing) {
  if (cuda::Driver::shared() && (*cuda::Driver::shared())->device_count() > 0) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  auto receiver =
      parse_pipeline("rdmasrc name=src address=127.0.0.1 port=0 memory=cuda ! fakesink");
  EXPECT_EQ(gst_element_set_state(receiver.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  auto error = pop_message(receiver.get(), GST_MESSAGE_ERROR, 10s);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(describe(error.get()).find("frames in cuda:0: no CUDA driver"), std::string::npos)
      << describe(error.get());
  ReceiverPipeline host_receiver;
  auto sender = parse_pipeline(testsrc(caps_string("NV12", 64, 48), 5) + " ! " +
                               sink_to(host_receiver.port, "memory=cuda"));
  EXPECT_EQ(gst_element_set_state(sender.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  auto sink_error = pop_message(sender.get(), GST_MESSAGE_ERROR, 10s);
  ASSERT_NE(sink_error, nullptr);
  EXPECT_NE(describe(sink_error.get()).find("no CUDA driver"), std::string::npos)
      << describe(sink_error.get());
  auto bad = parse_pipeline(testsrc(caps_string("NV12", 64, 48), 5) + " ! " +
                            sink_to(host_receiver.port, "memory=gpu"));
  EXPECT_EQ(gst_element_set_state(bad.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  auto bad_error = pop_message(bad.get(), GST_MESSAGE_ERROR, 10s);
  ASSERT_NE(bad_error, nullptr);
  EXPECT_NE(describe(bad_error.get()).find("memory=gpu is not host, cuda or cuda:N"),
            std::string::npos);
}

// On a GPU with GStreamer's CUDA elements: cudaupload ! rdmasink memory=cuda -> rdmasrc
// memory=cuda ! cudadownload, frames byte-equal to videotestsrc's, with the elements'
// CUDA context shared so every copy stays on the GPU. Skipped, saying why, elsewhere.
TEST_F(GstElements, CudaMemoryEndToEndIsByteEqualAndStaysOnTheGpu) {
  UniqueObject<GstElement> probe(gst_element_factory_make("rdmasink", nullptr));
  const std::string status = string_property(probe.get(), "cuda-caps");
  if (!status.starts_with("offered")) GTEST_SKIP() << status;
  for (const char* needed : {"cudaupload", "cudadownload"}) {
    UniqueObject<GstElementFactory> factory(gst_element_factory_find(needed));
    if (!factory)
      GTEST_SKIP() << "GStreamer element " << needed
                   << " is not there (gstreamer1.0-plugins-bad's nvcodec)";
  }
  constexpr int kFrames = 20;
  const std::string source = testsrc(caps_string("NV12", 320, 240), kFrames);
  const auto reference = reference_frames(source);
  ReceiverPipeline receiver("memory=cuda verify=true",
                            "cudadownload ! video/x-raw ! appsink name=out sync=false");
  auto sender =
      start(source + " ! cudaupload ! " + sink_to(receiver.port, "memory=cuda checksum=true"));
  const auto got = pull_all(receiver.appsink());
  ASSERT_EQ(got.size(), reference.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const auto diff = first_difference(got[i].bytes, reference[i].bytes, i);
    ASSERT_FALSE(diff) << *diff;
  }
  const BusLog sent = wait_for_end(sender.get());
  ASSERT_TRUE(sent.eos) << *sent.error;
  EXPECT_FALSE(sent.warned("through host memory")) << "the CUDA context was not shared";
  const BusLog received = wait_for_end(receiver.pipeline.get());
  ASSERT_TRUE(received.eos) << *received.error;
  EXPECT_EQ(u64_field(received.last("rdmasrc-stats"), "checksum-failures"), 0u);
}

}  // namespace
}  // namespace rdmavideo::testing
