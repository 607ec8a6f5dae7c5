// SPDX-License-Identifier: Apache-2.0
// The C API (rdmavideo/rdmavideo.h) as a program that embeds it uses it: linked against
// librdmavideo.so.0 alone, a sender and a receiver in one process over TCP on loopback.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "rdmavideo/rdmavideo.h"

namespace {

std::string last_error() { return rdmavideo_last_error(); }

// A receiver on an ephemeral loopback port, destroyed at the end of the test.
struct Receiver {
  rdmavideo_receiver* r = nullptr;
  explicit Receiver(rdmavideo_receiver_config config) {
    config.listen = "127.0.0.1:0";
    EXPECT_EQ(rdmavideo_receiver_create(&config, &r), RDMAVIDEO_OK) << last_error();
  }
  Receiver() : Receiver(default_config()) {}
  ~Receiver() { rdmavideo_receiver_destroy(r); }
  static rdmavideo_receiver_config default_config() {
    rdmavideo_receiver_config c;
    rdmavideo_receiver_config_init(&c);
    return c;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(rdmavideo_receiver_port(r)); }
};

rdmavideo_video_format rgba(uint32_t width, uint32_t height) {
  rdmavideo_video_format f;
  rdmavideo_video_format_init(&f);
  f.pix_fmt = "rgba";
  f.width = width;
  f.height = height;
  f.fps_num = 30000;
  f.fps_den = 1001;
  return f;
}

// Frame n's bytes: every byte a function of n and its offset.
void fill(uint8_t* data, uint64_t size, uint64_t n) {
  for (uint64_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(i * 7 + n * 13 + (i >> 9));
}

bool holds(const uint8_t* data, uint64_t size, uint64_t n) {
  for (uint64_t i = 0; i < size; ++i) {
    if (data[i] != static_cast<uint8_t>(i * 7 + n * 13 + (i >> 9))) return false;
  }
  return true;
}

TEST(CApi, VersionAndStatusNames) {
  EXPECT_STREQ(rdmavideo_version(), "0.5.0");
  EXPECT_EQ(std::string(rdmavideo_version()), std::to_string(RDMAVIDEO_VERSION_MAJOR) + "." +
                                                  std::to_string(RDMAVIDEO_VERSION_MINOR) + "." +
                                                  std::to_string(RDMAVIDEO_VERSION_PATCH));
  EXPECT_STREQ(rdmavideo_status_name(RDMAVIDEO_ERROR_AUTH_FAILED), "RDMAVIDEO_ERROR_AUTH_FAILED");
  // A value inside the enum's range that names no status (one beyond it is undefined in C++).
  EXPECT_STREQ(rdmavideo_status_name(static_cast<rdmavideo_status>(12)), "(not a status)");
  EXPECT_EQ(rdmavideo_set_log_level("loud"), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("log level \"loud\" unknown"), std::string::npos) << last_error();
  EXPECT_EQ(rdmavideo_set_log_level("warn"), RDMAVIDEO_OK);
}

TEST(CApi, LayoutOfEachFormatIsThePlanesTheWireCarries) {
  rdmavideo_layout layout;
  auto f = rgba(1920, 1080);
  ASSERT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_OK) << last_error();
  EXPECT_EQ(layout.plane_count, 1u);
  EXPECT_EQ(layout.stride[0], 1920u * 4);
  EXPECT_EQ(layout.frame_bytes, 1920u * 1080 * 4);
  f.pix_fmt = "nv12";
  ASSERT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_OK) << last_error();
  EXPECT_EQ(layout.plane_count, 2u);
  EXPECT_EQ(layout.rows[0], 1080u);
  EXPECT_EQ(layout.rows[1], 540u);
  EXPECT_EQ(layout.offset[1], uint64_t{layout.stride[0]} * 1080);
  EXPECT_EQ(layout.frame_bytes, layout.offset[1] + uint64_t{layout.stride[1]} * 540);
  f.pix_fmt = "v210";
  ASSERT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_OK) << last_error();
  EXPECT_EQ(layout.stride[0], 1920u / 48 * 128);
}

TEST(CApi, BadValuesAreRefusedNamingWhatWasWrong) {
  rdmavideo_layout layout;
  auto f = rgba(1920, 1080);
  f.pix_fmt = "rgb565";
  EXPECT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("pix_fmt \"rgb565\" unknown"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("uyvy422"), std::string::npos) << "lists the known ones";
  f = rgba(1920, 1080);
  f.fps_den = 0;
  EXPECT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("frame rate 30000/0"), std::string::npos) << last_error();
  f = rgba(1920, 1080);
  f.colour = "bt2020";
  EXPECT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("colour \"bt2020\""), std::string::npos) << last_error();
  EXPECT_EQ(rdmavideo_video_format_layout(nullptr, &layout), RDMAVIDEO_ERROR_INVALID_ARGUMENT);

  rdmavideo_sender_config c;
  rdmavideo_sender_config_init(&c);
  rdmavideo_sender* s = nullptr;
  EXPECT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("destinations: none given"), std::string::npos) << last_error();
  c.destinations = "127.0.0.1:1";
  c.key_file = "/nonexistent/rdmavideo.key";
  EXPECT_LT(rdmavideo_sender_create(&c, &s), 0);
  EXPECT_NE(last_error().find("key_file"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("/nonexistent/rdmavideo.key"), std::string::npos) << last_error();
  c.key_file = nullptr;
  c.transport = "infiniband";
  EXPECT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("transport \"infiniband\""), std::string::npos) << last_error();
  c.transport = "tcp";
  c.pool_buffers = 1;
  EXPECT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("pool_buffers 1"), std::string::npos) << last_error();
  EXPECT_EQ(s, nullptr);
  // Nothing listens on port 1: the error names the destination.
  c.pool_buffers = 4;
  c.connect_timeout_ms = 2000;
  EXPECT_LT(rdmavideo_sender_create(&c, &s), 0);
  EXPECT_NE(last_error().find("127.0.0.1:1"), std::string::npos) << last_error();

  rdmavideo_receiver_config rc;
  rdmavideo_receiver_config_init(&rc);
  rdmavideo_receiver* r = nullptr;
  rc.listen = "127.0.0.1:99999";
  EXPECT_EQ(rdmavideo_receiver_create(&rc, &r), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("listen"), std::string::npos) << last_error();
  rc.listen = "127.0.0.1:0";
  rc.ring_slots = 0;
  EXPECT_EQ(rdmavideo_receiver_create(&rc, &r), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("ring_slots 0"), std::string::npos) << last_error();
  EXPECT_EQ(r, nullptr);
}

TEST(CApi, TheLastErrorIsEachThreadsOwn) {
  rdmavideo_layout layout;
  auto f = rgba(1920, 1080);
  f.pix_fmt = "nope";
  ASSERT_LT(rdmavideo_video_format_layout(&f, &layout), 0);
  std::string elsewhere = "unset";
  std::thread([&] { elsewhere = rdmavideo_last_error(); }).join();
  EXPECT_EQ(elsewhere, "");
  EXPECT_NE(last_error().find("nope"), std::string::npos);
  // A call that succeeds starts clean.
  f.pix_fmt = "rgba";
  ASSERT_EQ(rdmavideo_video_format_layout(&f, &layout), RDMAVIDEO_OK);
  EXPECT_EQ(last_error(), "");
}

TEST(CApi, LentAndCopiedFramesArriveByteForByteInTheirSlots) {
  Receiver receiver;
  rdmavideo_sender_config c;
  rdmavideo_sender_config_init(&c);
  const std::string to = receiver.address();
  c.destinations = to.c_str();
  c.name = "c-api";
  c.transport = "tcp";
  c.checksum = 1;
  rdmavideo_sender* s = nullptr;
  ASSERT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_OK) << last_error();
  // Lending before the stream has started names the call order.
  rdmavideo_buffer* early = nullptr;
  EXPECT_EQ(rdmavideo_sender_lend(s, &early), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("rdmavideo_sender_start"), std::string::npos) << last_error();

  auto f = rgba(320, 180);
  f.colour = "bt709 full";
  ASSERT_EQ(rdmavideo_sender_start(s, &f), RDMAVIDEO_OK) << last_error();
  rdmavideo_layout layout;
  ASSERT_EQ(rdmavideo_sender_layout(s, &layout), RDMAVIDEO_OK);
  ASSERT_EQ(layout.frame_bytes, 320u * 180 * 4);

  constexpr uint64_t kLent = 12;
  constexpr uint64_t kCopied = 6;
  std::thread sending([&] {
    for (uint64_t n = 0; n < kLent; ++n) {  // zero copy: filled where it is sent from
      rdmavideo_buffer* b = nullptr;
      ASSERT_EQ(rdmavideo_sender_lend(s, &b), RDMAVIDEO_OK) << last_error();
      ASSERT_EQ(rdmavideo_buffer_size(b), layout.frame_bytes);
      ASSERT_EQ(rdmavideo_buffer_memory(b), RDMAVIDEO_MEMORY_HOST);
      fill(static_cast<uint8_t*>(rdmavideo_buffer_data(b)), layout.frame_bytes, n);
      ASSERT_EQ(rdmavideo_sender_submit(s, b, static_cast<int64_t>(n) * 1000), RDMAVIDEO_OK)
          << last_error();
    }
    // A lent buffer given back unsent is not sent.
    rdmavideo_buffer* unsent = nullptr;
    ASSERT_EQ(rdmavideo_sender_lend(s, &unsent), RDMAVIDEO_OK);
    fill(static_cast<uint8_t*>(rdmavideo_buffer_data(unsent)), layout.frame_bytes, 999);
    rdmavideo_sender_discard(s, unsent);
    std::vector<uint8_t> frame(layout.frame_bytes);
    EXPECT_EQ(rdmavideo_sender_send(s, frame.data(), frame.size() - 1, RDMAVIDEO_PTS_AUTO),
              RDMAVIDEO_ERROR_INVALID_ARGUMENT);
    for (uint64_t n = kLent; n < kLent + kCopied; ++n) {
      fill(frame.data(), frame.size(), n);
      ASSERT_EQ(rdmavideo_sender_send(s, frame.data(), frame.size(), RDMAVIDEO_PTS_AUTO),
                RDMAVIDEO_OK)
          << last_error();
    }
    ASSERT_EQ(rdmavideo_sender_end(s), RDMAVIDEO_OK) << last_error();
  });

  uint64_t received = 0;
  for (;;) {
    rdmavideo_frame* frame = nullptr;
    const auto status = rdmavideo_receiver_next_frame(receiver.r, 10000, &frame);
    if (status == RDMAVIDEO_ENDED) break;
    ASSERT_EQ(status, RDMAVIDEO_OK) << rdmavideo_status_name(status) << " " << last_error();
    const uint64_t n = received++;
    EXPECT_EQ(rdmavideo_frame_sequence(frame), n);
    EXPECT_EQ(rdmavideo_frame_stream(frame), 1u);
    EXPECT_EQ(rdmavideo_frame_memory(frame), RDMAVIDEO_MEMORY_HOST);
    ASSERT_EQ(rdmavideo_frame_size(frame), layout.frame_bytes);
    EXPECT_TRUE(holds(static_cast<const uint8_t*>(rdmavideo_frame_data(frame)),
                      rdmavideo_frame_size(frame), n))
        << "frame " << n;
    // Lent frames carry the pts given; copied ones count it from the rate (30000/1001).
    const int64_t pts = n < kLent ? static_cast<int64_t>(n) * 1000
                                  : static_cast<int64_t>(n * 1001 * 1000000000 / 30000);
    EXPECT_NEAR(static_cast<double>(rdmavideo_frame_pts_ns(frame)), static_cast<double>(pts), 1.0)
        << "frame " << n;
    rdmavideo_video_format got;
    got.struct_size = sizeof(got);
    rdmavideo_frame_format(frame, &got);
    EXPECT_STREQ(got.pix_fmt, "rgba");
    EXPECT_EQ(got.width, 320u);
    EXPECT_EQ(got.height, 180u);
    EXPECT_EQ(got.fps_num, 30000u);
    EXPECT_EQ(got.fps_den, 1001u);
    EXPECT_STREQ(got.name, "c-api");
    rdmavideo_layout frame_layout;
    rdmavideo_frame_layout(frame, &frame_layout);
    EXPECT_EQ(frame_layout.frame_bytes, layout.frame_bytes);
    rdmavideo_frame_release(frame);
  }
  sending.join();
  EXPECT_EQ(received, kLent + kCopied);

  rdmavideo_stats sent;
  sent.struct_size = sizeof(sent);
  ASSERT_EQ(rdmavideo_sender_stats(s, &sent), RDMAVIDEO_OK);
  EXPECT_EQ(sent.frames, kLent + kCopied);
  EXPECT_EQ(sent.bytes, (kLent + kCopied) * layout.frame_bytes);
  EXPECT_EQ(sent.dropped, 0u);
  rdmavideo_stats got;
  got.struct_size = sizeof(got);
  ASSERT_EQ(rdmavideo_receiver_stats(receiver.r, &got), RDMAVIDEO_OK);
  EXPECT_EQ(got.frames, kLent + kCopied);
  EXPECT_EQ(got.streams, 1u);
  rdmavideo_sender_destroy(s);
}

TEST(CApi, AFrameHeldStaysValidAfterTheReceiverIsGone) {
  auto rc = Receiver::default_config();
  rc.listen = "127.0.0.1:0";
  rdmavideo_receiver* r = nullptr;
  ASSERT_EQ(rdmavideo_receiver_create(&rc, &r), RDMAVIDEO_OK) << last_error();
  const std::string to = "127.0.0.1:" + std::to_string(rdmavideo_receiver_port(r));
  rdmavideo_sender_config c;
  rdmavideo_sender_config_init(&c);
  c.destinations = to.c_str();
  rdmavideo_sender* s = nullptr;
  ASSERT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_OK) << last_error();
  auto f = rgba(64, 48);
  ASSERT_EQ(rdmavideo_sender_start(s, &f), RDMAVIDEO_OK) << last_error();
  std::vector<uint8_t> bytes(64 * 48 * 4);
  fill(bytes.data(), bytes.size(), 5);
  ASSERT_EQ(rdmavideo_sender_send(s, bytes.data(), bytes.size(), 0), RDMAVIDEO_OK);
  rdmavideo_frame* frame = nullptr;
  ASSERT_EQ(rdmavideo_receiver_next_frame(r, 10000, &frame), RDMAVIDEO_OK) << last_error();
  rdmavideo_receiver_destroy(r);  // the sender is told; the frame is still the caller's
  EXPECT_TRUE(holds(static_cast<const uint8_t*>(rdmavideo_frame_data(frame)), bytes.size(), 5));
  rdmavideo_frame_release(frame);
  rdmavideo_sender_destroy(s);
}

TEST(CApi, AReceiverWithAKeyRefusesASenderWithout) {
  const std::string key_path = ::testing::TempDir() + "c_api_test.key";
  {
    std::ofstream key(key_path, std::ios::binary);
    key << std::string(64, 'a') << "\n";
  }
  std::filesystem::permissions(
      key_path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto rc = Receiver::default_config();
  rc.key_file = key_path.c_str();
  Receiver receiver(rc);
  ASSERT_NE(receiver.r, nullptr) << last_error();
  rdmavideo_sender_config c;
  rdmavideo_sender_config_init(&c);
  const std::string to = receiver.address();
  c.destinations = to.c_str();
  rdmavideo_sender* s = nullptr;
  EXPECT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_ERROR_AUTH_FAILED) << last_error();
  EXPECT_EQ(s, nullptr);
  // With the key, it is taken.
  c.key_file = key_path.c_str();
  ASSERT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_OK) << last_error();
  rdmavideo_sender_destroy(s);
  std::remove(key_path.c_str());
}

TEST(CApi, AudioChunksArriveWithTheirTrackAndFormat) {
  Receiver receiver;
  rdmavideo_sender_config c;
  rdmavideo_sender_config_init(&c);
  const std::string to = receiver.address();
  c.destinations = to.c_str();
  rdmavideo_sender* s = nullptr;
  ASSERT_EQ(rdmavideo_sender_create(&c, &s), RDMAVIDEO_OK) << last_error();
  rdmavideo_audio_format a;
  rdmavideo_audio_format_init(&a);
  a.sample_format = RDMAVIDEO_SAMPLES_S16;
  a.name = "voice";
  uint32_t track = 99;
  ASSERT_EQ(rdmavideo_sender_start_audio(s, &a, &track), RDMAVIDEO_OK) << last_error();
  EXPECT_EQ(track, 0u);
  a.channels = 17;
  uint32_t refused = 99;
  EXPECT_EQ(rdmavideo_sender_start_audio(s, &a, &refused), RDMAVIDEO_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("channels 17"), std::string::npos) << last_error();
  auto f = rgba(64, 48);
  ASSERT_EQ(rdmavideo_sender_start(s, &f), RDMAVIDEO_OK) << last_error();
  // The frames are taken on a thread of their own, as the ring holds only 8 of them.
  uint64_t frames = 0;
  std::thread taking([&] {
    rdmavideo_frame* frame = nullptr;
    while (rdmavideo_receiver_next_frame(receiver.r, 10000, &frame) == RDMAVIDEO_OK) {
      ++frames;
      rdmavideo_frame_release(frame);
    }
  });
  // One second of a ramp, 480 samples (10 ms) at a time, beside a frame every 2 chunks.
  constexpr uint32_t kChunk = 480;
  std::vector<int16_t> samples(kChunk * 2);
  std::vector<uint8_t> picture(64 * 48 * 4);
  for (uint32_t k = 0; k < 100; ++k) {
    for (uint32_t i = 0; i < kChunk; ++i) {
      samples[2 * i] = static_cast<int16_t>(k * kChunk + i);
      samples[2 * i + 1] = static_cast<int16_t>(-static_cast<int32_t>(k * kChunk + i));
    }
    ASSERT_EQ(rdmavideo_sender_send_audio(s, track, int64_t{k} * 10'000'000, kChunk, samples.data(),
                                          samples.size() * sizeof(int16_t)),
              RDMAVIDEO_OK)
        << last_error();
    if (k % 2 == 0) {
      ASSERT_EQ(rdmavideo_sender_send(s, picture.data(), picture.size(), RDMAVIDEO_PTS_AUTO),
                RDMAVIDEO_OK);
    }
  }
  ASSERT_EQ(rdmavideo_sender_end_audio(s, track), RDMAVIDEO_OK) << last_error();
  ASSERT_EQ(rdmavideo_sender_end(s), RDMAVIDEO_OK) << last_error();

  uint64_t next = 0;  // the next sample expected
  for (;;) {
    rdmavideo_chunk* chunk = nullptr;
    const auto status = rdmavideo_receiver_next_chunk(receiver.r, 10000, &chunk);
    if (status == RDMAVIDEO_ENDED) break;
    ASSERT_EQ(status, RDMAVIDEO_OK) << last_error();
    EXPECT_EQ(rdmavideo_chunk_stream(chunk), 1u);
    EXPECT_EQ(rdmavideo_chunk_track(chunk), 0u);
    rdmavideo_audio_format got;
    got.struct_size = sizeof(got);
    rdmavideo_chunk_format(chunk, &got);
    EXPECT_EQ(got.sample_format, RDMAVIDEO_SAMPLES_S16);
    EXPECT_EQ(got.sample_rate, 48000u);
    EXPECT_EQ(got.channels, 2u);
    EXPECT_STREQ(got.name, "voice");
    const uint32_t n = rdmavideo_chunk_samples(chunk);
    ASSERT_EQ(rdmavideo_chunk_size(chunk), uint64_t{n} * 4);
    EXPECT_EQ(rdmavideo_chunk_pts_ns(chunk), static_cast<int64_t>(next * 1'000'000'000 / 48000));
    const auto* got_samples = static_cast<const int16_t*>(rdmavideo_chunk_data(chunk));
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(got_samples[2 * i], static_cast<int16_t>(next + i)) << "sample " << next + i;
      ASSERT_EQ(got_samples[2 * i + 1], static_cast<int16_t>(-static_cast<int32_t>(next + i)));
    }
    next += n;
    rdmavideo_chunk_release(chunk);
  }
  EXPECT_EQ(next, 100u * kChunk);
  taking.join();
  EXPECT_EQ(frames, 50u);
  rdmavideo_sender_destroy(s);
}

TEST(CApi, NextFrameTimesOutWhileNoSenderCame) {
  Receiver receiver;
  rdmavideo_frame* frame = reinterpret_cast<rdmavideo_frame*>(1);
  EXPECT_EQ(rdmavideo_receiver_next_frame(receiver.r, 50, &frame), RDMAVIDEO_TIMEOUT);
  EXPECT_EQ(frame, nullptr);
  rdmavideo_receiver_stop(receiver.r);
  EXPECT_EQ(rdmavideo_receiver_next_frame(receiver.r, 50, &frame), RDMAVIDEO_ENDED);
}

}  // namespace
