// SPDX-License-Identifier: Apache-2.0
// av::AudioConverter: the sender's samples into what a sound device plays (interleaved float
// at the device's rate and channels), and the compensation that makes playback follow the
// sender's clock.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/av/audio_mixer.hpp"

namespace rdmavideo::av {
namespace {

proto::AudioStart format(proto::SampleFormat sample_format, uint32_t rate, uint32_t channels) {
  proto::AudioStart f;
  f.stream_id = 2;
  f.sample_format = sample_format;
  f.sample_rate = rate;
  f.channels = channels;
  return f;
}

// `n` samples of a sine of `hz` at `level`, s16 interleaved, the same on every channel.
std::vector<std::byte> sine_s16(uint32_t rate, uint32_t channels, size_t first, size_t n, double hz,
                                double level) {
  std::vector<std::byte> out(n * channels * 2);
  for (size_t i = 0; i < n; ++i) {
    const auto v = static_cast<int16_t>(std::lround(
        32767 * level * std::sin(2 * std::numbers::pi * hz * double(first + i) / rate)));
    for (uint32_t c = 0; c < channels; ++c) std::memcpy(&out[(i * channels + c) * 2], &v, 2);
  }
  return out;
}

// Feeds one second in 20 ms chunks (after `setup` on the converter) and returns every output
// sample.
std::vector<float> one_second(AudioConverter& conv, uint32_t rate, uint32_t channels,
                              const std::function<void(AudioConverter&)>& setup = {}) {
  std::vector<float> out;
  const size_t chunk = rate / 50;
  for (size_t first = 0; first < rate; first += chunk) {
    if (setup) setup(conv);
    const auto data = sine_s16(rate, channels, first, chunk, 1000, 0.5);
    auto got = conv.convert(static_cast<uint32_t>(chunk), data);
    EXPECT_TRUE(got) << got.error().message();
    if (got) out.insert(out.end(), got->begin(), got->end());
  }
  return out;
}

TEST(AudioConverter, S16StereoBecomesFloatAtTheSameLevelAndCount) {
  auto conv = AudioConverter::open(format(proto::SampleFormat::s16, 48000, 2), 48000, 2);
  ASSERT_TRUE(conv) << conv.error().message();
  const auto out = one_second(**conv, 48000, 2);
  // The resampler holds back its filter's few samples; nothing else is lost or added.
  EXPECT_NEAR(double(out.size()) / 2, 48000, 64);
  float peak = 0;
  for (float v : out) peak = std::max(peak, std::abs(v));
  EXPECT_NEAR(peak, 0.5, 0.01);
  EXPECT_NE((*conv)->describe().find("s16 48000 Hz 2 ch -> f32 48000 Hz"), std::string::npos)
      << (*conv)->describe();
}

TEST(AudioConverter, CompensationPlaysOnePercentMore) {
  auto conv = AudioConverter::open(format(proto::SampleFormat::s16, 48000, 2), 48000, 2);
  ASSERT_TRUE(conv);
  // 1% more over every 20 ms chunk: 9.6 samples a chunk, 480 over the second.
  const auto out =
      one_second(**conv, 48000, 2, [](AudioConverter& c) { ASSERT_TRUE(c.compensate(10, 960)); });
  EXPECT_NEAR(double(out.size()) / 2, 48500, 80);
  auto fewer = AudioConverter::open(format(proto::SampleFormat::s16, 48000, 2), 48000, 2);
  ASSERT_TRUE(fewer);
  const auto less =
      one_second(**fewer, 48000, 2, [](AudioConverter& c) { ASSERT_TRUE(c.compensate(-10, 960)); });
  EXPECT_NEAR(double(less.size()) / 2, 47500, 80);
}

// A sender may send one sample a packet, and a clock that follows it asks for a sample more
// or fewer over a distance of one: libswresample divided by zero there (SIGFPE). Any chunk
// size and any request is valid; what a packet too short to stretch cannot take is carried.
TEST(AudioConverter, OneSamplePacketsWithCompensationConvertEverySample) {
  auto conv = AudioConverter::open(format(proto::SampleFormat::s16, 48000, 2), 48000, 2);
  ASSERT_TRUE(conv) << conv.error().message();
  size_t out = 0;
  for (size_t i = 0; i < 4800; ++i) {
    ASSERT_TRUE((*conv)->compensate(i % 2 ? 1 : -1, 1));
    const auto data = sine_s16(48000, 2, i, 1, 1000, 0.5);
    auto got = (*conv)->convert(1, data);
    ASSERT_TRUE(got) << got.error().message();
    out += got->size() / 2;
  }
  EXPECT_NEAR(double(out), 4800, 64);
  // What was carried is applied once packets are long enough: 1% over 20 ms chunks.
  const auto longer =
      one_second(**conv, 48000, 2, [](AudioConverter& c) { ASSERT_TRUE(c.compensate(10, 960)); });
  EXPECT_NEAR(double(longer.size()) / 2, 48500, 80);
  EXPECT_FALSE((*conv)->compensate(1, 0));
}

TEST(AudioConverter, ResamplesToTheDeviceRate) {
  auto conv = AudioConverter::open(format(proto::SampleFormat::s16, 44100, 1), 48000, 2);
  ASSERT_TRUE(conv);
  const auto out = one_second(**conv, 44100, 1);
  EXPECT_NEAR(double(out.size()) / 2, 48000, 64);
}

TEST(AudioConverter, SixPlanarChannelsMixDownToStereo) {
  auto from = format(proto::SampleFormat::f32p, 48000, 6);
  from.channel_layout = 0x3f;  // 5.1: FL FR FC LFE BL BR
  auto conv = AudioConverter::open(from, 48000, 2);
  ASSERT_TRUE(conv) << conv.error().message();
  EXPECT_NE((*conv)->describe().find("5.1 -> stereo"), std::string::npos) << (*conv)->describe();
  // A tone on the centre channel only is heard on both sides.
  const uint32_t n = 4800;
  std::vector<float> planes(size_t{n} * 6, 0.0f);
  for (uint32_t i = 0; i < n; ++i)
    planes[2 * n + i] = 0.5f * float(std::sin(2 * std::numbers::pi * 1000 * i / 48000.0));
  auto got = (*conv)->convert(n, std::as_bytes(std::span(planes)));
  ASSERT_TRUE(got);
  ASSERT_GT(got->size(), 2u * 4000);
  float left = 0, right = 0;
  for (size_t i = 0; i < got->size(); i += 2) {
    left = std::max(left, std::abs((*got)[i]));
    right = std::max(right, std::abs((*got)[i + 1]));
  }
  EXPECT_GT(left, 0.2f);
  EXPECT_NEAR(left, right, 0.01f);
}

TEST(AudioConverter, SkipLeavesOutTheFirstSamples) {
  auto conv = AudioConverter::open(format(proto::SampleFormat::s16, 48000, 2), 48000, 2);
  ASSERT_TRUE(conv);
  const auto data = sine_s16(48000, 2, 0, 4800, 1000, 0.5);
  auto got = (*conv)->convert(4800, data, 4000);
  ASSERT_TRUE(got);
  EXPECT_LE(got->size() / 2, 800u);
  auto none = (*conv)->convert(4800, data, 4800);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

// The composite's mixer (amix): two stereo inputs, each at half (amix normalises by the
// count), every sample out for every sample in, across calls.
TEST(AudioMixer, MixesEachInputAtHalfSampleForSample) {
  auto mixer = AudioMixer::open(2, 48000, 2);
  ASSERT_TRUE(mixer) << mixer.error().message();
  size_t out = 0;
  for (int call = 0; call < 10; ++call) {
    std::vector<float> a(960 * 2, 0.5f), b(960 * 2, -0.25f);
    if (call == 3) std::fill(b.begin(), b.end(), 0.0f);  // an input with nothing there: silence
    auto mixed = (*mixer)->mix({a, b}, 960);
    ASSERT_TRUE(mixed) << mixed.error().message();
    for (size_t i = 0; i < mixed->size(); i += 97) {
      EXPECT_NEAR((*mixed)[i], call == 3 ? 0.25f : 0.125f, 0.01f)
          << "call " << call << " sample " << i;
    }
    out += mixed->size() / 2;
  }
  EXPECT_EQ(out, 9600u);
  auto wrong = (*mixer)->mix({std::vector<float>(4)}, 2);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("1 inputs where it mixes 2"), std::string::npos);
}

}  // namespace
}  // namespace rdmavideo::av
