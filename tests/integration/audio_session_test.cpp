// SPDX-License-Identifier: Apache-2.0
// Audio beside video (protocol version 3) through the real pieces: a SenderSession over each
// transport (TCP on loopback everywhere; verbs in the Soft-RoCE lab, where the rxe_audio test
// runs this binary, skipped elsewhere) into a ReceiverService in this process, with a shared
// key so every audio chunk carries a tag. The sink checks what a listener would get: every
// track with its name and format, every sample as sent, in order, on the video's pts clock.
// Then the versions (a receiver of version 2 gets the video alone, and the sender says so),
// the audio queue's bound, and the refusal of an audio-only connection.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "process.hpp"
#include "rdmavideo/receiver_service.hpp"
#include "rdmavideo/sender_session.hpp"
#include "sender/sender_core.hpp"

namespace rdmavideo {
namespace {

using namespace std::chrono_literals;

struct Heard {
  std::mutex mu;
  std::vector<AudioTrack> tracks;
  std::vector<std::vector<std::byte>>
      samples;  // per track, as arrived (planar chunks joined per channel below)
  std::vector<std::vector<AudioPacket>> packets;  // per track, when kept
  std::vector<int64_t> next_pts;                  // per track: the pts the next packet must have
  std::vector<uint32_t> largest_packet;           // per track, samples
  std::vector<bool> ended;
  uint64_t frames = 0;
  uint64_t out_of_order = 0;
  bool audio_before_first_frame = false;
  bool finished = false;
};

class ListeningSink final : public StreamSink {
 public:
  ListeningSink(std::shared_ptr<Heard> heard, bool keep) : heard_(std::move(heard)), keep_(keep) {}
  void frame(FrameLease) override {
    std::lock_guard lock(heard_->mu);
    ++heard_->frames;
  }
  void audio_started(const AudioTrack& track) override {
    std::lock_guard lock(heard_->mu);
    if (heard_->frames == 0) heard_->audio_before_first_frame = true;
    heard_->tracks.push_back(track);
    heard_->samples.emplace_back();
    heard_->packets.emplace_back();
    heard_->next_pts.push_back(INT64_MIN);
    heard_->largest_packet.push_back(0);
    heard_->ended.push_back(false);
  }
  bool audio(AudioPacket packet) override {
    std::lock_guard lock(heard_->mu);
    const uint32_t t = packet.track;
    const auto& format = heard_->tracks.at(t).format;
    // Each packet continues the last, within the ns the sender rounds each chunk's pts to.
    if (heard_->next_pts[t] != INT64_MIN && std::llabs(packet.pts_ns - heard_->next_pts[t]) > 1) {
      ++heard_->out_of_order;
    }
    heard_->next_pts[t] = packet.pts_ns + static_cast<int64_t>(uint64_t{packet.samples} *
                                                               1'000'000'000 / format.sample_rate);
    heard_->largest_packet[t] = std::max(heard_->largest_packet[t], packet.samples);
    // Planar chunks are kept per channel: put each channel's share after what it had.
    auto& all = heard_->samples[t];
    if (proto::planar(format.sample_format)) {
      planar_[t].resize(format.channels);
      const size_t per_channel = packet.data.size() / format.channels;
      for (uint32_t c = 0; c < format.channels; ++c) {
        planar_[t][c].insert(planar_[t][c].end(),
                             packet.data.begin() + static_cast<ptrdiff_t>(c * per_channel),
                             packet.data.begin() + static_cast<ptrdiff_t>((c + 1) * per_channel));
      }
      all.clear();
      for (const auto& channel : planar_[t]) all.insert(all.end(), channel.begin(), channel.end());
    } else {
      all.insert(all.end(), packet.data.begin(), packet.data.end());
    }
    if (keep_) heard_->packets[t].push_back(std::move(packet));
    return true;
  }
  void audio_ended(uint32_t track) override {
    std::lock_guard lock(heard_->mu);
    heard_->ended.at(track) = true;
  }
  Result<void> finish(const StreamEnd& end) override {
    EXPECT_TRUE(end.ok()) << (end.error ? end.error->message() : "");
    std::lock_guard lock(heard_->mu);
    heard_->packets.clear();  // what was kept goes back to the queue
    heard_->finished = true;
    return {};
  }

 private:
  std::shared_ptr<Heard> heard_;
  bool keep_;
  std::map<uint32_t, std::vector<std::vector<std::byte>>> planar_;
};

struct Transport {
  TransportKind kind;
  const char* host;
};
void PrintTo(const Transport& t, std::ostream* os) { *os << to_string(t.kind) << " to " << t.host; }

std::shared_ptr<const auth::SharedKey> test_key() {
  return std::make_shared<const auth::SharedKey>(std::vector<std::byte>(32, std::byte{'k'}));
}

struct Rig {
  std::shared_ptr<Heard> heard = std::make_shared<Heard>();
  std::unique_ptr<ReceiverService> service;
  std::unique_ptr<SenderSession> session;
};

// A receiver (of `receiver_version`) and a session connected to it, both with the key.
void rig_up(Rig& rig, const Transport& t, uint16_t receiver_version = proto::kVersion,
            bool keep = false, bool live = false) {
  ReceiverServiceOptions service_options;
  service_options.transport = t.kind;
  service_options.listen.endpoint = Endpoint{t.host, 0};
  service_options.listen.ring_size = 4;
  service_options.listen.key = test_key();
  service_options.listen.max_version = receiver_version;
  service_options.sink_factory = [heard = rig.heard,
                                  keep](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return std::unique_ptr<StreamSink>(std::make_unique<ListeningSink>(heard, keep));
  };
  auto service = ReceiverService::start(std::move(service_options));
  ASSERT_TRUE(service) << service.error().message();
  rig.service = std::move(*service);
  SenderSessionOptions options;
  options.transport = t.kind;
  options.connect.endpoint = rig.service->local_endpoint();
  options.connect.key = test_key();
  options.policy.live = live;
  auto session = SenderSession::connect(std::move(options));
  ASSERT_TRUE(session) << session.error().message();
  rig.session = std::move(*session);
}

#define SKIP_WITHOUT_LAB(t)                                                                       \
  if ((t).kind == TransportKind::verbs && !std::filesystem::exists("/sys/class/infiniband/rxe0")) \
  GTEST_SKIP() << "no Soft-RoCE lab here (rxe0 missing): ctest -L rxe runs this in it"

proto::AudioStart stereo_float_planar() {
  proto::AudioStart a;
  a.sample_format = proto::SampleFormat::f32p;
  a.sample_rate = 48000;
  a.channels = 2;
  a.channel_layout = 0x3;
  a.name = "Program";
  return a;
}

proto::AudioStart mono_s16() {
  proto::AudioStart a;
  a.sample_format = proto::SampleFormat::s16;
  a.sample_rate = 44100;
  a.channels = 1;
  a.name = "Commentary";
  return a;
}

// Planar float: a 440 Hz sine on the left, 880 Hz on the right, `n` samples from `first`.
std::vector<std::byte> sines(uint64_t first, uint32_t n) {
  std::vector<float> out(2 * size_t{n});
  for (uint32_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(first + i) / 48000.0;
    out[i] = static_cast<float>(std::sin(2 * M_PI * 440 * t));
    out[n + i] = static_cast<float>(0.5 * std::sin(2 * M_PI * 880 * t));
  }
  std::vector<std::byte> bytes(out.size() * sizeof(float));
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

std::vector<std::byte> ramp(uint64_t first, uint32_t n) {
  std::vector<std::byte> bytes(2 * size_t{n});
  for (uint32_t i = 0; i < n; ++i) {
    const auto v = static_cast<int16_t>((first + i) % 65536 - 32768);
    std::memcpy(bytes.data() + 2 * i, &v, 2);
  }
  return bytes;
}

using testing::wait_until;

class AudioOver : public ::testing::TestWithParam<Transport> {};

TEST_P(AudioOver, EveryTrackArrivesWithItsNameEverySampleInOrderOnTheVideosClock) {
  const Transport t = GetParam();
  SKIP_WITHOUT_LAB(t);
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig, t));
  SenderSession& session = *rig.session;
  auto program = session.start_audio(stereo_float_planar());
  auto commentary = session.start_audio(mono_s16());
  ASSERT_TRUE(program && commentary);
  EXPECT_EQ(*program, 0u);
  EXPECT_EQ(*commentary, 1u);

  auto format = proto::make_stream_start(PixelFormat::nv12, 64, 36, {60, 1});
  format->name = "cam";
  ASSERT_TRUE(session.start_stream(*format, 3));
  // 60 frames, and after each the audio of its 1/60 s: 800 samples at 48 kHz (a whole chunk
  // of 6400 bytes, more than one verbs control buffer holds) and 735 at 44.1 kHz.
  constexpr int kFrames = 60;
  uint64_t sent48 = 0, sent44 = 0;
  std::vector<std::byte> all48, all44;
  for (int i = 0; i < kFrames; ++i) {
    auto buffer = session.acquire_buffer();
    ASSERT_TRUE(buffer && *buffer);
    const int64_t pts = int64_t{i} * 1'000'000'000 / 60;
    auto sent = session.submit(*buffer, FrameMeta{static_cast<uint64_t>(i), pts});
    ASSERT_TRUE(sent) << sent.error().message();
    const auto a = sines(sent48, 800);
    ASSERT_TRUE(session.submit_audio(*program, static_cast<int64_t>(sent48 * 1'000'000'000 / 48000),
                                     800, a));
    const auto b = ramp(sent44, 735);
    ASSERT_TRUE(session.submit_audio(*commentary,
                                     static_cast<int64_t>(sent44 * 1'000'000'000 / 44100), 735, b));
    sent48 += 800;
    sent44 += 735;
    all48.insert(all48.end(), a.begin(), a.end());  // per submission: planar per call
    all44.insert(all44.end(), b.begin(), b.end());
  }
  ASSERT_TRUE(session.end_audio(*commentary));
  ASSERT_TRUE(session.end_stream());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.heard->mu);
    return rig.heard->finished;
  }));

  std::lock_guard lock(rig.heard->mu);
  const Heard& h = *rig.heard;
  EXPECT_EQ(h.frames, uint64_t{kFrames});
  ASSERT_EQ(h.tracks.size(), 2u);
  EXPECT_TRUE(h.audio_before_first_frame)
      << "a track started after the picture: a recording would miss it";
  EXPECT_EQ(h.tracks[0].format.name, "Program");
  EXPECT_EQ(h.tracks[0].format.sample_format, proto::SampleFormat::f32p);
  EXPECT_EQ(h.tracks[0].format.channel_layout, 0x3u);
  EXPECT_EQ(h.tracks[1].format.name, "Commentary");
  EXPECT_EQ(h.tracks[1].format.sample_rate, 44100u);
  EXPECT_EQ(h.out_of_order, 0u);
  // The mono track, interleaved, is the sender's bytes exactly.
  EXPECT_EQ(h.samples[1], all44);
  // The planar track: every channel's samples in order. Rebuild the sender's per channel.
  std::vector<std::byte> left, right;
  for (int i = 0; i < kFrames; ++i) {
    const auto* call = all48.data() + static_cast<ptrdiff_t>(i) * 6400;
    left.insert(left.end(), call, call + 3200);
    right.insert(right.end(), call + 3200, call + 6400);
  }
  left.insert(left.end(), right.begin(), right.end());
  EXPECT_EQ(h.samples[0], left);
  EXPECT_TRUE(h.ended[1]);
  EXPECT_FALSE(h.ended[0]);
  if (t.kind == TransportKind::verbs) {
    // Split to fit a 4096-byte control buffer: at most 505 stereo float samples a chunk.
    EXPECT_LE(h.largest_packet[0], 505u);
  }
  const auto reports = rig.service->reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].version, 3);
  ASSERT_EQ(reports[0].audio.size(), 2u);
  EXPECT_EQ(reports[0].audio[0].samples, sent48);
  EXPECT_EQ(reports[0].audio[1].samples, sent44);
  EXPECT_EQ(reports[0].audio[0].dropped, 0u);
  EXPECT_TRUE(reports[0].audio[1].ended);
  const auto destinations = session.destinations();
  ASSERT_EQ(destinations.size(), 1u);
  EXPECT_EQ(destinations[0].audio_samples, sent48 + sent44);
  EXPECT_EQ(destinations[0].audio_dropped_samples, 0u);
  EXPECT_FALSE(destinations[0].audio_refused);
}

TEST_P(AudioOver, AReceiverOfVersionTwoGetsTheVideoAloneAndTheSenderSaysSo) {
  const Transport t = GetParam();
  SKIP_WITHOUT_LAB(t);
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig, t, /*receiver_version=*/2));
  SenderSession& session = *rig.session;
  auto track = session.start_audio(stereo_float_planar());
  ASSERT_TRUE(track);
  auto format = proto::make_stream_start(PixelFormat::nv12, 64, 36, {60, 1});
  format->flags |= proto::kStreamFlash;  // version 3's: left out for this receiver
  ASSERT_TRUE(session.start_stream(*format, 3));
  for (int i = 0; i < 10; ++i) {
    auto buffer = session.acquire_buffer();
    ASSERT_TRUE(buffer && *buffer);
    ASSERT_TRUE(session.submit(*buffer, FrameMeta{static_cast<uint64_t>(i), std::nullopt}));
    ASSERT_TRUE(session.submit_audio(*track, i * 16'666'667LL, 800, sines(800u * i, 800)));
  }
  ASSERT_TRUE(session.end_stream());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.heard->mu);
    return rig.heard->finished;
  }));
  std::lock_guard lock(rig.heard->mu);
  EXPECT_EQ(rig.heard->frames, 10u);
  EXPECT_TRUE(rig.heard->tracks.empty());
  const auto reports = rig.service->reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].version, 2);
  EXPECT_EQ(reports[0].format.flags & proto::kStreamFlash, 0u);
  const auto destinations = session.destinations();
  EXPECT_TRUE(destinations[0].audio_refused);
  EXPECT_EQ(destinations[0].audio_dropped_samples, 8000u);
  EXPECT_EQ(destinations[0].audio_samples, 0u);
}

TEST_P(AudioOver, ASinkThatHoldsItsAudioIsBoundedByTheQueueAndTheRestCounted) {
  const Transport t = GetParam();
  SKIP_WITHOUT_LAB(t);
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig, t, proto::kVersion, /*keep=*/true));
  SenderSession& session = *rig.session;
  proto::AudioStart wide = stereo_float_planar();
  wide.channels = 8;
  wide.channel_layout = 0;
  wide.sample_format = proto::SampleFormat::f32;
  auto track = session.start_audio(wide);
  ASSERT_TRUE(track);
  auto format = proto::make_stream_start(PixelFormat::nv12, 64, 36, {60, 1});
  ASSERT_TRUE(session.start_stream(*format, 3));
  // 8 MiB of samples, twice the queue, which this sink never lets go of.
  const uint32_t per_call = 16384;  // 512 KiB each
  const std::vector<std::byte> silence(size_t{per_call} * 8 * 4);
  for (int i = 0; i < 16; ++i) {
    auto buffer = session.acquire_buffer();
    ASSERT_TRUE(buffer && *buffer);
    ASSERT_TRUE(session.submit(*buffer, FrameMeta{static_cast<uint64_t>(i), std::nullopt}));
    ASSERT_TRUE(session.submit_audio(*track, i * 341'333'333LL, per_call, silence));
  }
  ASSERT_TRUE(session.end_stream());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.heard->mu);
    return rig.heard->finished;
  }));
  const auto reports = rig.service->reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].stats.frames, 16u) << "the picture goes on";
  ASSERT_EQ(reports[0].audio.size(), 1u);
  const AudioReport& a = reports[0].audio[0];
  EXPECT_EQ(a.samples, 16u * per_call);
  EXPECT_GT(a.dropped, 0u);
  const uint64_t kept_bytes = (a.samples - a.dropped_samples) * 8 * 4;
  EXPECT_LE(kept_bytes, kAudioQueueBytes);
  EXPECT_GT(kept_bytes, kAudioQueueBytes / 2);
  // Given back to the budget with the stream.
  EXPECT_TRUE(wait_until([&] { return rig.service->budget().used() == 0; }))
      << rig.service->budget().used() << " bytes still reserved";
}

TEST_P(AudioOver, AnAudioOnlyConnectionIsRefusedNamingWhy) {
  const Transport t = GetParam();
  SKIP_WITHOUT_LAB(t);
  ReceiverServiceOptions service_options;
  service_options.transport = t.kind;
  service_options.listen.endpoint = Endpoint{t.host, 0};
  service_options.sink_factory = [](const StreamInfo&) -> Result<std::unique_ptr<StreamSink>> {
    return make_error(ErrorCode::invalid_argument, "no stream should be admitted");
  };
  auto service = ReceiverService::start(std::move(service_options));
  ASSERT_TRUE(service) << service.error().message();
  ConnectOptions options;
  options.endpoint = (*service)->local_endpoint();
  auto core = sender::SenderCore::connect(t.kind, options);
  ASSERT_TRUE(core) << core.error().message();
  proto::AudioStart a = stereo_float_planar();
  a.stream_id = 2;
  ASSERT_TRUE((*core)->start_audio(a));
  Result<void> ok;
  ASSERT_TRUE(wait_until([&] {
    ok = (*core)->progress(50ms);
    return !ok;
  })) << "the receiver took an audio-only connection";
  EXPECT_NE(ok.error().message().find("audio-only connection is refused"), std::string::npos)
      << ok.error().message();
  EXPECT_TRUE((*service)->reports().empty());
}

// A track started once the ring is up (rdmasink's audio pad at its first buffer, after the
// video pad's caps) is announced at once, before the first frame, though its first samples
// come after it: a receiver's recording knows its tracks by its first frame.
TEST_P(AudioOver, ATrackStartedAfterTheRingIsUpIsAnnouncedBeforeTheFirstFrame) {
  const Transport t = GetParam();
  SKIP_WITHOUT_LAB(t);
  Rig rig;
  ASSERT_NO_FATAL_FAILURE(rig_up(rig, t));
  SenderSession& session = *rig.session;
  auto format = proto::make_stream_start(PixelFormat::nv12, 64, 36, {60, 1});
  ASSERT_TRUE(session.start_stream(*format, 3));
  auto track = session.start_audio(stereo_float_planar());
  ASSERT_TRUE(track) << track.error().message();
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.heard->mu);
    return !rig.heard->tracks.empty();
  })) << "the track was not announced before any frame or sample";
  {
    std::lock_guard lock(rig.heard->mu);
    EXPECT_EQ(rig.heard->frames, 0u);
    EXPECT_EQ(rig.heard->tracks[0].format.name, "Program");
  }
  for (int i = 0; i < 6; ++i) {
    auto buffer = session.acquire_buffer();
    ASSERT_TRUE(buffer && *buffer);
    const int64_t pts = int64_t{i} * 1'000'000'000 / 60;
    ASSERT_TRUE(session.submit(*buffer, FrameMeta{static_cast<uint64_t>(i), pts}));
    ASSERT_TRUE(session.submit_audio(*track, int64_t{i} * 800 * 1'000'000'000 / 48000, 800,
                                     sines(static_cast<uint64_t>(i) * 800, 800)));
  }
  ASSERT_TRUE(session.end_stream());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(rig.heard->mu);
    return rig.heard->finished;
  }));
  std::lock_guard lock(rig.heard->mu);
  EXPECT_TRUE(rig.heard->audio_before_first_frame);
  EXPECT_EQ(rig.heard->tracks.size(), 1u) << "announced twice";
  EXPECT_EQ(rig.heard->samples[0].size(), 6u * 800 * 2 * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(Transports, AudioOver,
                         ::testing::Values(Transport{TransportKind::tcp, "127.0.0.1"},
                                           Transport{TransportKind::verbs, "10.99.0.1"}),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param.kind));
                         });

}  // namespace
}  // namespace rdmavideo
