// SPDX-License-Identifier: Apache-2.0
// The OBS output without OBS: its format and colour mapping for every OBS format and colour
// space, its settings, and its frame and audio path driven by synthetic video_data and
// audio_data (what OBS's threads hand an output) into a ReceiverService in this process over
// TCP. The last test stalls the receiver and checks that OBS's video callback drops and
// returns, never waits.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "found_receivers.hpp"
#include "obs_format.hpp"
#include "obs_sender.hpp"
#include "process.hpp"
#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::obs {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------
// Formats and colour

TEST(ObsFormat, OwnFormatsPassThroughAsTheProtocolCarriesThem) {
  struct Case {
    video_format obs;
    PixelFormat ours;
  };
  for (const Case& c :
       {Case{VIDEO_FORMAT_NV12, PixelFormat::nv12}, Case{VIDEO_FORMAT_I420, PixelFormat::i420},
        Case{VIDEO_FORMAT_P010, PixelFormat::p010}, Case{VIDEO_FORMAT_UYVY, PixelFormat::uyvy},
        Case{VIDEO_FORMAT_YUY2, PixelFormat::yuy2}, Case{VIDEO_FORMAT_RGBA, PixelFormat::rgba},
        Case{VIDEO_FORMAT_BGRA, PixelFormat::bgra}, Case{VIDEO_FORMAT_BGRX, PixelFormat::bgra},
        Case{VIDEO_FORMAT_I210, PixelFormat::yuv422p10},
        Case{VIDEO_FORMAT_I444, PixelFormat::yuv444p},
        Case{VIDEO_FORMAT_I412, PixelFormat::yuv444p12}}) {
    SCOPED_TRACE(format_name(c.obs));
    EXPECT_EQ(carried(c.obs), c.ours);
    video_output_info canvas{};
    canvas.format = c.obs;
    canvas.width = 1920;
    canvas.height = 1080;
    canvas.colorspace = VIDEO_CS_709;
    canvas.range = VIDEO_RANGE_PARTIAL;
    const VideoPlan plan = plan_video(canvas);
    EXPECT_EQ(plan.format, c.ours);
    EXPECT_FALSE(plan.conversion) << "OBS's frames go out as they are";
  }
}

TEST(ObsFormat, OthersAreConvertedWithRangeAndColourSpaceSaid) {
  struct Case {
    video_format obs, via;
    PixelFormat ours;
  };
  for (const Case& c : {Case{VIDEO_FORMAT_I010, VIDEO_FORMAT_P010, PixelFormat::p010},
                        Case{VIDEO_FORMAT_YVYU, VIDEO_FORMAT_YUY2, PixelFormat::yuy2},
                        Case{VIDEO_FORMAT_I422, VIDEO_FORMAT_UYVY, PixelFormat::uyvy},
                        Case{VIDEO_FORMAT_I42A, VIDEO_FORMAT_UYVY, PixelFormat::uyvy},
                        Case{VIDEO_FORMAT_I40A, VIDEO_FORMAT_I420, PixelFormat::i420},
                        Case{VIDEO_FORMAT_Y800, VIDEO_FORMAT_I420, PixelFormat::i420},
                        Case{VIDEO_FORMAT_YUVA, VIDEO_FORMAT_I444, PixelFormat::yuv444p},
                        Case{VIDEO_FORMAT_AYUV, VIDEO_FORMAT_I444, PixelFormat::yuv444p},
                        Case{VIDEO_FORMAT_YA2L, VIDEO_FORMAT_I412, PixelFormat::yuv444p12},
                        Case{VIDEO_FORMAT_BGR3, VIDEO_FORMAT_BGRA, PixelFormat::bgra}}) {
    SCOPED_TRACE(format_name(c.obs));
    EXPECT_FALSE(carried(c.obs));
    // DEFAULT colour space and range: the conversion is told what they mean, not left to guess.
    video_output_info canvas{};
    canvas.format = c.obs;
    canvas.width = 1280;
    canvas.height = 720;
    const VideoPlan plan = plan_video(canvas);
    EXPECT_EQ(plan.format, c.ours);
    ASSERT_TRUE(plan.conversion);
    EXPECT_EQ(plan.conversion->format, c.via);
    EXPECT_EQ(plan.conversion->width, 1280u);
    EXPECT_EQ(plan.conversion->height, 720u);
    EXPECT_EQ(plan.conversion->colorspace, VIDEO_CS_709);
    EXPECT_EQ(plan.conversion->range, VIDEO_RANGE_PARTIAL);
  }
  // A 4:4:4 canvas keeps its chroma; 10-bit 4:2:0 stays 10-bit.
  EXPECT_EQ(nearest_carried(VIDEO_FORMAT_I010), VIDEO_FORMAT_P010);
  EXPECT_EQ(nearest_carried(VIDEO_FORMAT_YUVA), VIDEO_FORMAT_I444);
}

TEST(ObsFormat, EveryColourSpaceAndRangeAsH273) {
  using namespace colour;
  struct Case {
    video_colorspace space;
    video_range_type range;
    Colour want;
  };
  for (const Case& c : {
           Case{VIDEO_CS_601,
                VIDEO_RANGE_PARTIAL,
                {kBt601_525, kTransferBt601, kBt601_525, kLimited}},
           Case{VIDEO_CS_601, VIDEO_RANGE_FULL, {kBt601_525, kTransferBt601, kBt601_525, kFull}},
           Case{VIDEO_CS_709, VIDEO_RANGE_PARTIAL, {kBt709, kBt709, kBt709, kLimited}},
           Case{VIDEO_CS_DEFAULT, VIDEO_RANGE_DEFAULT, {kBt709, kBt709, kBt709, kLimited}},
           Case{VIDEO_CS_SRGB, VIDEO_RANGE_FULL, {kBt709, kTransferSrgb, kBt709, kFull}},
           Case{VIDEO_CS_2100_PQ,
                VIDEO_RANGE_PARTIAL,
                {kBt2020, kTransferPq, kMatrixBt2020Ncl, kLimited}},
           Case{VIDEO_CS_2100_HLG,
                VIDEO_RANGE_PARTIAL,
                {kBt2020, kTransferHlg, kMatrixBt2020Ncl, kLimited}},
       }) {
    SCOPED_TRACE(describe(c.want));
    EXPECT_EQ(colour_of(c.space, c.range, VIDEO_FORMAT_NV12), c.want);
    video_output_info canvas{};
    canvas.format = VIDEO_FORMAT_P010;
    canvas.width = 64;
    canvas.height = 64;
    canvas.colorspace = c.space;
    canvas.range = c.range;
    EXPECT_EQ(plan_video(canvas).colour, c.want);
  }
  // RGB is RGB, full range, whatever OBS's YUV settings say.
  const Colour rgb = colour_of(VIDEO_CS_709, VIDEO_RANGE_PARTIAL, VIDEO_FORMAT_BGRA);
  EXPECT_EQ(rgb.matrix, 0);
  EXPECT_EQ(rgb.range, kFull);
  EXPECT_EQ(rgb.primaries, kBt709);
}

TEST(ObsFormat, AudioTracksAreFloatPlanarWithOBSSpeakerMasks) {
  const auto stereo = audio_track(48000, SPEAKERS_STEREO, "Mic/Aux");
  EXPECT_EQ(stereo.sample_format, proto::SampleFormat::f32p);
  EXPECT_EQ(stereo.sample_rate, 48000u);
  EXPECT_EQ(stereo.channels, 2);
  EXPECT_EQ(stereo.channel_layout, 0x3u);
  EXPECT_EQ(stereo.name, "Mic/Aux");
  EXPECT_EQ(audio_track(44100, SPEAKERS_5POINT1, "x").channels, 6);
  EXPECT_EQ(channel_mask(SPEAKERS_5POINT1), 0x3fu);   // FL FR FC LFE BL BR: FFmpeg's 5.1(back)
  EXPECT_EQ(channel_mask(SPEAKERS_7POINT1), 0x63fu);  // + SL SR
  EXPECT_EQ(channel_mask(SPEAKERS_4POINT0), 0x107u);  // FL FR FC BC
  EXPECT_EQ(channel_mask(SPEAKERS_MONO), 0x4u);
  EXPECT_EQ(audio_track(48000, SPEAKERS_7POINT1, "x").channels, 8);
}

TEST(ObsSettings, ParsesAndNamesWhatIsWrong) {
  auto ok = OutputSettings::parse("10.0.0.2:5000, rec:5001", "verbs", "", "Main", 5, true);
  ASSERT_TRUE(ok) << ok.error().message();
  ASSERT_EQ(ok->destinations.size(), 2u);
  EXPECT_EQ(ok->destinations[1].host, "rec");
  EXPECT_EQ(ok->destinations[1].port, 5001);
  EXPECT_EQ(ok->transport, TransportKind::verbs);
  EXPECT_EQ(ok->tracks, 5u);
  EXPECT_TRUE(ok->reconnect);
  EXPECT_EQ(ok->destinations_text(), "10.0.0.2:5000, rec:5001");
  struct Bad {
    const char* destinations;
    const char* transport;
    int64_t tracks;
    std::string name;
    const char* says;
  };
  for (const Bad& b : {Bad{"", "auto", 1, "x", "destinations is empty"},
                       Bad{"[rec", "auto", 1, "x", "destinations \"[rec\""},
                       Bad{"rec:0", "auto", 1, "x", "destinations \"rec:0\""},
                       Bad{"rec:5000", "udp", 1, "x", "transport \"udp\" unknown"},
                       Bad{"rec:5000", "auto", 64, "x", "tracks 64"},
                       Bad{"rec:5000", "auto", -1, "x", "tracks -1"},
                       Bad{"rec:5000", "auto", 1, std::string(64, 'n'), "longer than 63 bytes"},
                       Bad{"rec:5000", "auto", 1, "a\nb", "control character"}}) {
    SCOPED_TRACE(b.says);
    auto bad = OutputSettings::parse(b.destinations, b.transport, "", b.name, b.tracks, false);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find(b.says), std::string::npos) << bad.error().message();
  }
}

// ---------------------------------------------------------------------------------------
// The frame and audio path, into a receiver in this process

struct Received {
  std::mutex mu;
  std::shared_ptr<const proto::StreamStart> format;
  std::vector<std::vector<std::byte>> frames;
  std::vector<proto::FrameWritten> infos;
  std::vector<AudioTrack> tracks;
  std::vector<std::vector<AudioPacket>> audio;
  std::vector<FrameLease> held;  // a stalled receiver keeps its slots
  bool stall = false;
  bool finished = false;
};

class Sink final : public StreamSink {
 public:
  explicit Sink(std::shared_ptr<Received> r) : r_(std::move(r)) {}
  void frame(FrameLease lease) override {
    std::lock_guard lock(r_->mu);
    r_->format = lease.shared_format();
    r_->frames.emplace_back(lease.data().begin(), lease.data().end());
    r_->infos.push_back(lease.info());
    if (r_->stall) r_->held.push_back(std::move(lease));
  }
  void audio_started(const AudioTrack& track) override {
    std::lock_guard lock(r_->mu);
    r_->tracks.push_back(track);
    r_->audio.emplace_back();
  }
  bool audio(AudioPacket packet) override {
    std::lock_guard lock(r_->mu);
    packet.queued.reset();
    r_->audio.at(packet.track).push_back(std::move(packet));
    return true;
  }
  Result<void> finish(const StreamEnd&) override {
    std::lock_guard lock(r_->mu);
    r_->held.clear();
    r_->finished = true;
    return {};
  }

 private:
  std::shared_ptr<Received> r_;
};

struct Rig {
  std::shared_ptr<Received> received = std::make_shared<Received>();
  std::unique_ptr<ReceiverService> service;
  OutputSettings settings;
};

void rig_up(Rig& rig, uint32_t ring_size = 8) {
  ReceiverServiceOptions options;
  options.transport = TransportKind::tcp;
  options.listen.endpoint = Endpoint{"127.0.0.1", 0};
  options.listen.ring_size = ring_size;
  options.sink_factory =
      [r = rig.received](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return std::unique_ptr<StreamSink>(std::make_unique<Sink>(r));
  };
  auto service = ReceiverService::start(std::move(options));
  ASSERT_TRUE(service) << service.error().message();
  rig.service = std::move(*service);
  auto settings = OutputSettings::parse(rig.service->local_endpoint().to_string(), "tcp", "",
                                        "OBS program", 5, false);
  ASSERT_TRUE(settings) << settings.error().message();
  rig.settings = *settings;
}

using testing::wait_until;

// An NV12 picture as OBS hands it: rows padded to `linesize`, each byte a function of its
// place and the frame, and the padding 0xEE (it must not travel).
struct ObsFrame {
  std::vector<uint8_t> y, uv;
  video_data data{};
  ObsFrame(uint32_t w, uint32_t h, uint32_t linesize, uint32_t n)
      : y(size_t{linesize} * h, 0xEE), uv(size_t{linesize} * h / 2, 0xEE) {
    for (uint32_t r = 0; r < h; ++r) {
      for (uint32_t x = 0; x < w; ++x)
        y[size_t{r} * linesize + x] = static_cast<uint8_t>(x + 3 * r + 7 * n);
    }
    for (uint32_t r = 0; r < h / 2; ++r) {
      for (uint32_t x = 0; x < w; ++x)
        uv[size_t{r} * linesize + x] = static_cast<uint8_t>(128 + x - r + n);
    }
    data.data[0] = y.data();
    data.data[1] = uv.data();
    data.linesize[0] = data.linesize[1] = linesize;
  }
};

// OBS's float planar mix: channel c of sample i is a function of (i, c, track).
struct ObsAudio {
  std::vector<std::vector<float>> planes;
  audio_data data{};
  ObsAudio(uint64_t first, uint32_t frames, uint32_t channels, int track, uint64_t ts) {
    planes.resize(channels);
    for (uint32_t c = 0; c < channels; ++c) {
      planes[c].resize(frames);
      for (uint32_t i = 0; i < frames; ++i) planes[c][i] = sample(first + i, c, track);
      data.data[c] = reinterpret_cast<uint8_t*>(planes[c].data());
    }
    data.frames = frames;
    data.timestamp = ts;
  }
  static float sample(uint64_t i, uint32_t c, int track) {
    return static_cast<float>(std::sin(0.01 * static_cast<double>(i) * (track + 1) + c));
  }
};

video_output_info nv12_canvas(uint32_t w, uint32_t h) {
  video_output_info canvas{};
  canvas.format = VIDEO_FORMAT_NV12;
  canvas.width = w;
  canvas.height = h;
  canvas.fps_num = 30000;
  canvas.fps_den = 1001;
  canvas.colorspace = VIDEO_CS_709;
  canvas.range = VIDEO_RANGE_PARTIAL;
  return canvas;
}

TEST(ObsOutputPath, FramesAndTwoTracksArriveAsObsGaveThemOnOneClock) {
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig));
  const uint32_t w = 64, h = 36, linesize = 96;  // OBS pads rows; the wire does not
  const auto canvas = nv12_canvas(w, h);
  const std::vector<ObsSender::Track> tracks{
      {0, audio_track(48000, SPEAKERS_STEREO, "Track 1")},
      {2, audio_track(48000, SPEAKERS_STEREO, "Commentary")}};
  auto sender = ObsSender::start(rig.settings, canvas, plan_video(canvas), tracks);
  ASSERT_TRUE(sender) << sender.error().message();
  ObsSender& s = **sender;

  // OBS's clock: ns from some boot-time origin. OBS's audio begins 30 ms (1440 samples)
  // before the first frame and reaches outputs about 50 ms after its time (OBS buffers it).
  // Each tick hands 1024 samples of every selected mix, stamped as OBS 29 stamps them: from
  // one counter all mixes share, so a second mix's stamps run ahead.
  const uint64_t t0 = 5'000'000'000ull;
  const uint64_t period = 1'000'000'000ull * 1001 / 30000;
  const uint64_t audio_start = t0 - 30'000'000;
  const auto tick_time = [&](uint64_t tick) {
    return audio_start + tick * 1024 * 1'000'000'000ull / 48000;
  };
  uint64_t tick = 0, obs_counter = 0;
  auto deliver_audio_until = [&](uint64_t now) {
    while (tick_time(tick) + 50'000'000 <= now) {
      for (int mix : {0, 2, 4}) {  // 4 is not selected: ignored
        ObsAudio a(tick * 1024, 1024, 2, mix, audio_start + obs_counter * 1'000'000'000ull / 48000);
        s.audio(static_cast<size_t>(mix), a.data);
        obs_counter += 1024;
      }
      ++tick;
    }
  };
  const int kFrames = 20;
  for (int n = 0; n < kFrames; ++n) {
    const uint64_t now = t0 + n * period;
    if (n == 7) {  // a frame OBS itself skipped: a gap in the sequence
      deliver_audio_until(now);
      continue;
    }
    ObsFrame f(w, h, linesize, static_cast<uint32_t>(n));
    f.data.timestamp = now;
    s.video(f.data);
    // OBS hands a frame every 33 ms; here each waits for the last to arrive, so none is
    // dropped for want of a buffer (the stall test below covers that).
    const size_t sent = static_cast<size_t>(n < 7 ? n + 1 : n);
    ASSERT_TRUE(wait_until([&] {
      std::lock_guard lock(rig.received->mu);
      return rig.received->frames.size() == sent;
    }));
    deliver_audio_until(now);
  }
  const uint64_t samples_sent = tick * 1024;
  ASSERT_TRUE(s.stop());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.received->mu);
    return rig.received->finished;
  }));
  EXPECT_EQ(s.frames(), uint64_t{kFrames - 1});
  EXPECT_EQ(s.dropped_frames(), 0u);
  EXPECT_GT(s.total_bytes(), 0u);

  std::lock_guard lock(rig.received->mu);
  const Received& r = *rig.received;
  ASSERT_TRUE(r.format);
  EXPECT_EQ(r.format->pixel_format, PixelFormat::nv12);
  EXPECT_EQ(r.format->frame_rate.num, 30000u);  // OBS's exact rational
  EXPECT_EQ(r.format->frame_rate.den, 1001u);
  EXPECT_EQ(r.format->colour, (Colour{1, 1, 1, 1}));
  EXPECT_EQ(r.format->name, "OBS program");
  EXPECT_TRUE(r.format->flags & proto::kStreamLive);
  ASSERT_EQ(r.frames.size(), size_t{kFrames - 1});
  for (size_t i = 0; i < r.frames.size(); ++i) {
    const uint32_t n = static_cast<uint32_t>(i < 7 ? i : i + 1);
    SCOPED_TRACE(n);
    EXPECT_EQ(r.infos[i].sequence, n);
    EXPECT_EQ(r.infos[i].pts_ns, static_cast<int64_t>(n * period));
    // The picture as OBS drew it, without OBS's row padding.
    const ObsFrame f(w, h, linesize, n);
    const auto& got = r.frames[i];
    ASSERT_EQ(got.size(), size_t{w} * h * 3 / 2);
    for (uint32_t row = 0; row < h; ++row) {
      ASSERT_EQ(std::memcmp(got.data() + size_t{row} * w, f.y.data() + size_t{row} * linesize, w),
                0)
          << "Y row " << row;
    }
    for (uint32_t row = 0; row < h / 2; ++row) {
      ASSERT_EQ(std::memcmp(got.data() + size_t{w} * h + size_t{row} * w,
                            f.uv.data() + size_t{row} * linesize, w),
                0)
          << "UV row " << row;
    }
  }
  ASSERT_EQ(r.tracks.size(), 2u);
  EXPECT_EQ(r.tracks[0].format.name, "Track 1");
  EXPECT_EQ(r.tracks[1].format.name, "Commentary");
  for (size_t t = 0; t < 2; ++t) {
    SCOPED_TRACE(t);
    const auto& format = r.tracks[t].format;
    EXPECT_EQ(format.sample_format, proto::SampleFormat::f32p);
    EXPECT_EQ(format.channels, 2);
    const int mix = t == 0 ? 0 : 2;
    // Each track starts with the first sample at or after the first frame (sample 1440 of
    // OBS's audio, 30 ms in, the 1440 before it cut), at pts 0; every sample follows on, in
    // order, on the frame's clock, whatever OBS stamped the chunks.
    const uint64_t cut = 1440;
    ASSERT_FALSE(r.audio[t].empty());
    EXPECT_EQ(r.audio[t].front().pts_ns, 0);
    uint64_t sample = cut;
    for (const auto& p : r.audio[t]) {
      EXPECT_NEAR(static_cast<double>(p.pts_ns),
                  static_cast<double>((sample - cut) * 1'000'000'000ull / 48000), 1.0);
      const auto* floats = reinterpret_cast<const float*>(p.data.data());
      for (uint32_t c = 0; c < 2; ++c) {
        for (uint32_t i = 0; i < p.samples; i += 97) {
          ASSERT_FLOAT_EQ(floats[size_t{c} * p.samples + i], ObsAudio::sample(sample + i, c, mix))
              << "sample " << sample + i << " channel " << c;
        }
      }
      sample += p.samples;
    }
    EXPECT_EQ(sample, samples_sent);
  }
}

TEST(ObsOutputPath, TenBitHdrCanvasArrivesAsP010WithItsColour) {
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig));
  video_output_info canvas{};
  canvas.format = VIDEO_FORMAT_I010;  // OBS converts it; the plan says into what
  canvas.width = 32;
  canvas.height = 16;
  canvas.fps_num = 60;
  canvas.fps_den = 1;
  canvas.colorspace = VIDEO_CS_2100_PQ;
  canvas.range = VIDEO_RANGE_PARTIAL;
  const VideoPlan plan = plan_video(canvas);
  ASSERT_TRUE(plan.conversion);
  auto sender = ObsSender::start(rig.settings, canvas, plan, {});
  ASSERT_TRUE(sender) << sender.error().message();
  // What OBS's conversion then hands over: P010, 10-bit samples in the top bits.
  std::vector<uint16_t> y(32 * 16, 940 << 6), uv(32 * 8, 512 << 6);
  video_data frame{};
  frame.data[0] = reinterpret_cast<uint8_t*>(y.data());
  frame.data[1] = reinterpret_cast<uint8_t*>(uv.data());
  frame.linesize[0] = frame.linesize[1] = 64;
  frame.timestamp = 1;
  (*sender)->video(frame);
  ASSERT_TRUE((*sender)->stop());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.received->mu);
    return rig.received->finished;
  }));
  std::lock_guard lock(rig.received->mu);
  ASSERT_EQ(rig.received->frames.size(), 1u);
  EXPECT_EQ(rig.received->format->pixel_format, PixelFormat::p010);
  EXPECT_EQ(rig.received->format->colour, (Colour{9, 16, 9, 1}));
  uint16_t first = 0;
  std::memcpy(&first, rig.received->frames[0].data(), 2);
  EXPECT_EQ(first, 940 << 6);
}

TEST(ObsOutputPath, AStalledReceiverMakesTheVideoCallbackDropNeverWait) {
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig, /*ring_size=*/2));
  rig.received->stall = true;  // the receiver keeps every slot: no credit comes back
  const auto canvas = nv12_canvas(640, 360);
  auto sender = ObsSender::start(rig.settings, canvas, plan_video(canvas),
                                 {{0, audio_track(48000, SPEAKERS_STEREO, "Track 1")}});
  ASSERT_TRUE(sender) << sender.error().message();
  ObsSender& s = **sender;
  ObsFrame f(640, 360, 640, 0);
  const uint64_t period = 1'000'000'000ull * 1001 / 30000;
  std::chrono::nanoseconds longest{0};
  const int kFrames = 120;
  for (int n = 0; n < kFrames; ++n) {
    f.data.timestamp = 1'000'000'000ull + n * period;
    const auto began = std::chrono::steady_clock::now();
    s.video(f.data);
    s.audio(0, ObsAudio(1024ull * n, 1024, 2, 0, f.data.timestamp).data);
    longest = std::max(longest, std::chrono::steady_clock::now() - began);
  }
  // Two slots, six pool buffers: everything after the first few frames is dropped, each
  // call returning at once. A callback that waited for a credit would take the peer
  // timeout (seconds); a copy of 345 KB takes well under a millisecond.
  EXPECT_LT(longest, 100ms) << "OBS's video thread waited";
  EXPECT_GT(s.dropped_frames(), uint64_t{kFrames - 10});
  EXPECT_EQ(s.frames(), uint64_t{kFrames});
  {
    std::lock_guard lock(rig.received->mu);
    EXPECT_LE(rig.received->frames.size(), 2u);
    rig.received->stall = false;
    rig.received->held.clear();  // the receiver catches up: the stream ends cleanly
  }
  EXPECT_TRUE(s.stop());
}

// The dialog's "On the network" drop-down: a row per receiver a browse found, its name what
// choosing it adds to the Receivers field; one row saying why where there is none.
TEST(FoundReceivers, ListsWhatABrowseFoundAndAddsItOnce) {
  discovery::Service studio;
  studio.name = "studio recorder";
  studio.address = "10.0.0.2";
  studio.port = 7800;
  discovery::ReceiverRecord record;
  record.protocol = 3;
  record.transports = {"tcp"};
  record.key_required = true;
  record.key_id = "0123456789abcdef";
  record.streams_free = 3;
  record.max_streams = 4;
  studio.txt = discovery::receiver_txt(record);
  discovery::Service odd = studio;
  odd.name = "odd";
  odd.txt = {{"proto", "x"}};
  const auto rows = found_receivers(std::vector<discovery::Service>{studio, odd});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].entry, "studio recorder");
  EXPECT_EQ(rows[0].label,
            "studio recorder (10.0.0.2:7800, 3 of 4 streams free, key 0123456789abcdef)");
  EXPECT_EQ(rows[1].entry, "odd");
  EXPECT_NE(rows[1].label.find("\"proto=x\" is not a number"), std::string::npos) << rows[1].label;

  const auto none = found_receivers(std::vector<discovery::Service>{});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].entry, "");
  EXPECT_EQ(none[0].label, "No receivers found on the network");
  const auto failed = found_receivers(Result<std::vector<discovery::Service>>(
      make_error(ErrorCode::unsupported, "no mDNS responder: avahi-daemon is not running")));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].entry, "");
  EXPECT_EQ(failed[0].label, "No receivers found: no mDNS responder: avahi-daemon is not running");

  EXPECT_EQ(with_receiver("", "studio recorder"), "studio recorder");
  EXPECT_EQ(with_receiver(" rec:5000 ", "studio recorder"), "rec:5000, studio recorder");
  EXPECT_EQ(with_receiver("rec:5000, studio recorder", "studio recorder"),
            "rec:5000, studio recorder");
}

// The stand-in browse result the tests give the dialog (a --discover --json listing), read as a
// browse would return it; a file that is not one is named.
TEST(FoundReceivers, ReadsAStandInListing) {
  const std::string path = ::testing::TempDir() + "found_receivers.json";
  {
    std::ofstream out(path);
    out << R"({"receivers": [{"name": "rec a", "address": "10.0.0.3", "port": 7000,
               "txt": {"proto": "3", "key": "none", "streams_free": "1", "max_streams": "1"}}],
               "senders": []})";
  }
  ::setenv("RDMAVIDEO_OBS_BROWSE_STAND_IN", path.c_str(), 1);
  const auto browsed = browse_receivers();
  ASSERT_TRUE(browsed) << browsed.error().message();
  ASSERT_EQ(browsed->size(), 1u);
  EXPECT_EQ(found_receivers(browsed)[0].label, "rec a (10.0.0.3:7000, 1 of 1 stream free, no key)");
  {
    std::ofstream out(path);
    out << "[1, 2]";
  }
  const auto bad = browse_receivers();
  ::unsetenv("RDMAVIDEO_OBS_BROWSE_STAND_IN");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a --discover --json listing"), std::string::npos);
}

}  // namespace
}  // namespace rdmavideo::obs
