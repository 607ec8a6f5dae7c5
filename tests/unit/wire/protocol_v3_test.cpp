// SPDX-License-Identifier: Apache-2.0
// Protocol version 3: the audio messages, the flash flag, and version 2 on the wire. The
// version 2 bytes below were written by the version 2 encoder (before audio): a version 3
// end that negotiated version 2 must write exactly them, and read them.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "decoding.hpp"
#include "proto/checks.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto {
namespace {

using Bytes = std::vector<std::byte>;

Bytes from_hex(std::string_view hex) {
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

using testing::decode_message;
using testing::rejection;

// Version 2 messages as the version 2 encoder wrote them.
struct Golden {
  const char* name;
  Message message;
  const char* hex;
};

std::vector<Golden> version2_goldens() {
  auto start = make_stream_start(PixelFormat::uyvy, 64, 36, Rational{30000, 1001});
  start->stream_id = 1;
  start->ring_epoch = 2;
  start->flags = kStreamLive | kStreamChecksums | kStreamTestPattern;
  start->name = "cam";
  FrameWritten frame;
  frame.ring_epoch = 2;
  frame.slot = 3;
  frame.sequence = 4;
  frame.pts_ns = -5;
  frame.sent_ns = 6;
  frame.bytes = 4608;
  frame.flags = kFrameHasChecksum;
  frame.checksum = 0x0102030405060708;
  return {
      {"StreamStart", *start,
       "5244564602000300a00000000000000001000000020000000100000004000000400000002400000030750000"
       "e903000007000000010000000000000080000000240000000000000000000000000000000000000000000000"
       "00000000000000000000000000000000001200000000000063616d0000000000000000000000000000000000"
       "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"},
      {"FrameWritten", frame,
       "5244564602000500300000000000000002000000030000000400000000000000fbffffffffffffff06000000"
       "0000000000120000010000000807060504030201"},
      {"CreditReturn", CreditReturn{2, {0, 1, 7}},
       "524456460200060014000000000000000200000003000000000000000100000007000000"},
      {"Keepalive", Keepalive{9}, "524456460200070008000000000000000900000000000000"},
      {"EndOfStream", EndOfStream{10, 11},
       "524456460200080010000000000000000a000000000000000b00000000000000"},
      {"RingInfo", RingInfo{1, 2, 8, 4608, 8192, 0x1000, 0x42},
       "5244564602000400280000000000000001000000020000000800000042000000001200000000000000200000"
       "000000000010000000000000"},
  };
}

TEST(ProtocolVersions, VersionTwoMessagesAreTheVersionTwoEncodersBytes) {
  for (const auto& golden : version2_goldens()) {
    SCOPED_TRACE(golden.name);
    const Bytes want = from_hex(golden.hex);
    EXPECT_EQ(encode(golden.message, 2), want);
    auto back = decode_message(want);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(type_of(*back), type_of(golden.message));
    // The same message negotiated at version 3 differs in the header's version alone.
    Bytes v3 = encode(golden.message, 3);
    ASSERT_EQ(v3.size(), want.size());
    EXPECT_EQ(v3[4], std::byte{3});
    v3[4] = std::byte{2};
    EXPECT_EQ(v3, want);
  }
}

TEST(ProtocolVersions, AudioMessagesNeedVersionThreeHeaders) {
  Bytes bytes = encode(AudioEnd{2}, 3);
  bytes[4] = std::byte{2};
  const std::string error = rejection(bytes, ErrorCode::unsupported);
  EXPECT_NE(error.find("Header.version 2 not spoken here (3..3 for AudioEnd)"), std::string::npos)
      << error;
  EXPECT_EQ(lowest_version(MessageType::AudioStart), 3);
  EXPECT_EQ(lowest_version(MessageType::StreamStart), 2);
  EXPECT_EQ(lowest_version(MessageType::Hello), 1);
}

TEST(ProtocolVersions, TheFlashFlagIsVersionThrees) {
  auto start = make_stream_start(PixelFormat::nv12, 64, 36, Rational{30, 1});
  start->ring_epoch = 1;
  start->flags = kStreamTestPattern | kStreamFlash;
  auto v3 = decode_message(encode(*start, 3));
  ASSERT_TRUE(v3) << v3.error().message();
  EXPECT_EQ(std::get<StreamStart>(*v3).flags, kStreamTestPattern | kStreamFlash);
  // On a version 2 connection the bit is unknown, as a version 2 end would find it.
  const std::string error = rejection(encode(*start, 2));
  EXPECT_NE(error.find("StreamStart.flags 0xc has unknown bits 0x8"), std::string::npos) << error;
}

TEST(ProtocolVersions, AReceiverOfVersionTwoAnswersVersionTwo) {
  Hello hello;
  hello.min_version = 2;
  hello.max_version = 3;
  auto ack = answer_hello(hello, 1 << 20, 8, 2);
  ASSERT_TRUE(ack) << ack.error().message();
  EXPECT_EQ(ack->version, 2);
  auto newest = answer_hello(hello, 1 << 20, 8);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->version, 3);
  hello.min_version = 3;  // a sender of version 3 only
  auto refused = answer_hello(hello, 1 << 20, 8, 2);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(), "Hello versions 3..3 do not overlap this receiver's 2..2");
}

AudioStart sample_audio_start() {
  AudioStart m;
  m.stream_id = 2;
  m.sample_format = SampleFormat::f32p;
  m.sample_rate = 48000;
  m.channels = 2;
  m.channel_layout = 0x3;  // front left, front right
  m.name = "Track 1";
  return m;
}

TEST(ProtocolAudio, AudioStartRoundTripsAndIsLaidOutAsDocumented) {
  const AudioStart m = sample_audio_start();
  const Bytes bytes = encode(m);
  // docs/protocol.md §11: header (version 3, type 11, 96 bytes), then the body.
  ASSERT_EQ(bytes.size(), kHeaderBytes + 96);
  const Bytes head = from_hex(
      "524456460300"
      "0b00"
      "60000000"
      "00000000");
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + 16), head);
  const Bytes fixed = from_hex(
      "02000000"  // stream_id 2
      "06000000"  // sample_format 6 (f32p)
      "80bb0000"  // sample_rate 48000
      "0200"
      "0000"                // channels 2, reserved
      "0300000000000000"    // channel_layout 0x3
      "0000000000000000"    // reserved
      "547261636b203100");  // "Track 1", NUL
  EXPECT_EQ(Bytes(bytes.begin() + 16, bytes.begin() + 16 + static_cast<ptrdiff_t>(fixed.size())),
            fixed);
  auto back = decode_message(bytes);
  ASSERT_TRUE(back) << back.error().message();
  const auto& got = std::get<AudioStart>(*back);
  EXPECT_EQ(got.stream_id, 2u);
  EXPECT_EQ(got.sample_format, SampleFormat::f32p);
  EXPECT_EQ(got.sample_rate, 48000u);
  EXPECT_EQ(got.channels, 2);
  EXPECT_EQ(got.channel_layout, 0x3u);
  EXPECT_EQ(got.name, "Track 1");
}

TEST(ProtocolAudio, AudioChunkRoundTripsItsSamples) {
  AudioChunk m;
  m.stream_id = 3;
  m.samples = 2;
  m.pts_ns = -1'000'000;
  for (int i = 0; i < 8; ++i) m.data.push_back(std::byte(0xa0 + i));
  const Bytes bytes = encode(m);
  ASSERT_EQ(bytes.size(), kHeaderBytes + kAudioChunkFixedBytes + 8);
  const Bytes body = from_hex(
      "03000000"          // stream_id
      "02000000"          // samples
      "c0bdf0ffffffffff"  // pts_ns -1000000
      "00000000"          // flags
      "00000000"          // reserved
      "a0a1a2a3a4a5a6a7");
  EXPECT_EQ(Bytes(bytes.begin() + 16, bytes.end()), body);
  auto back = decode_message(bytes);
  ASSERT_TRUE(back) << back.error().message();
  const auto& got = std::get<AudioChunk>(*back);
  EXPECT_EQ(got.stream_id, 3u);
  EXPECT_EQ(got.samples, 2u);
  EXPECT_EQ(got.pts_ns, -1'000'000);
  EXPECT_EQ(got.data, m.data);
}

TEST(ProtocolAudio, DecodeNamesEveryBadField) {
  auto poke32 = [](Bytes& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = std::byte((v >> (8 * i)) & 0xff);
  };
  Bytes start = encode(sample_audio_start());
  struct Case {
    size_t at;
    uint32_t value;
    const char* says;
  };
  for (const Case& c :
       {Case{16, 0, "AudioStart.stream_id is 0"}, Case{20, 7, "AudioStart.sample_format 7 unknown"},
        Case{24, 999, "AudioStart.sample_rate 999 out of range"},
        Case{28, 17, "AudioStart.channels 17 out of range (1..16)"},
        Case{28, 3, "AudioStart.channel_layout 0x3 has 2 channels, not 3"}}) {
    SCOPED_TRACE(c.says);
    Bytes bad = start;
    poke32(bad, c.at, c.value);
    const std::string error = rejection(bad);
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
  }
  AudioChunk chunk;
  chunk.stream_id = 2;
  chunk.samples = 1;
  chunk.data.resize(8);
  const Bytes good = encode(chunk);
  Bytes zero = good;
  poke32(zero, 20, 0);
  EXPECT_NE(rejection(zero).find("AudioChunk.samples is 0"), std::string::npos);
  Bytes flags = good;
  poke32(flags, 32, 4);
  EXPECT_NE(rejection(flags).find("AudioChunk.flags 0x4"), std::string::npos);
  // No samples at all: the fixed fields alone.
  Bytes empty(good.begin(), good.begin() + kHeaderBytes + kAudioChunkFixedBytes);
  poke32(empty, 8, kAudioChunkFixedBytes);
  EXPECT_NE(rejection(empty).find("AudioChunk length 24 too short"), std::string::npos);
}

TEST(ProtocolAudio, TheReceiverChecksAudioAgainstTheConnection) {
  auto video = make_stream_start(PixelFormat::nv12, 64, 36, Rational{30, 1});
  video->stream_id = 1;
  const AudioStart a = sample_audio_start();
  EXPECT_TRUE(check_audio_start(a, *video, 0, false, 3));
  auto v2 = check_audio_start(a, *video, 0, false, 2);
  ASSERT_FALSE(v2);
  EXPECT_EQ(v2.error().message(), "AudioStart on a version 2 connection (audio is version 3)");
  auto alone = check_audio_start(a, std::nullopt, 0, false, 3);
  ASSERT_FALSE(alone);
  EXPECT_EQ(alone.error().code(), ErrorCode::unsupported);
  EXPECT_NE(alone.error().message().find("audio-only connection is refused"), std::string::npos);
  AudioStart same = a;
  same.stream_id = 1;
  EXPECT_FALSE(check_audio_start(same, *video, 0, false, 3));
  auto twice = check_audio_start(a, *video, 1, true, 3);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("already started"), std::string::npos);
  auto many = check_audio_start(a, *video, kMaxAudioStreams, false, 3);
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().message().find("at most 16 audio streams"), std::string::npos);

  AudioChunk chunk;
  chunk.stream_id = 2;
  chunk.samples = 3;
  chunk.data.resize(3 * 2 * 4);
  EXPECT_TRUE(check_audio_chunk(chunk, &a));
  chunk.data.resize(20);
  auto short_chunk = check_audio_chunk(chunk, &a);
  ASSERT_FALSE(short_chunk);
  EXPECT_EQ(
      short_chunk.error().message(),
      "AudioChunk of 20 bytes of samples does not match 3 samples x 2 channels of f32p (24 bytes)");
  EXPECT_FALSE(check_audio_chunk(chunk, nullptr));
}

TEST(ProtocolAudio, SampleFormats) {
  EXPECT_EQ(bytes_per_sample(SampleFormat::s16), 2u);
  EXPECT_EQ(bytes_per_sample(SampleFormat::s16p), 2u);
  EXPECT_EQ(bytes_per_sample(SampleFormat::s32), 4u);
  EXPECT_EQ(bytes_per_sample(SampleFormat::f32p), 4u);
  EXPECT_FALSE(planar(SampleFormat::f32));
  EXPECT_TRUE(planar(SampleFormat::s32p));
  EXPECT_EQ(to_string(SampleFormat::f32p), "f32p");
}

}  // namespace
}  // namespace rdmavideo::proto
