// SPDX-License-Identifier: Apache-2.0
// The codecs layer's messages name what was wrong in plain words (the output, the codec, the
// input, the audio input), never a command line's flag: rdmasrc, rdmasink and OBS users read
// them too. A front end that has flags gives them as the setting names.
#include <gtest/gtest.h>

#include <string>

#include "rdmavideo/av/audio_capture.hpp"
#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/av/source.hpp"

namespace rdmavideo::av {
namespace {

// A message is in plain words: it names no flag ("--codec", "-i ").
void expect_plain(const std::string& message) {
  EXPECT_EQ(message.find("--"), std::string::npos) << message;
  EXPECT_NE(message.rfind("-i ", 0), 0u) << message;
  EXPECT_EQ(message.find(" -i "), std::string::npos) << message;
}

TEST(SettingNames, ARecordingsChoicesAreNamedInPlainWords) {
  RecorderOptions o;
  o.path = "out.mov";
  o.codec = "nonsense";
  auto codec = check_recorder_options(o);
  ASSERT_FALSE(codec);
  EXPECT_EQ(codec.error().message().rfind("the codec \"nonsense\" unknown", 0), 0u)
      << codec.error().message();
  expect_plain(codec.error().message());

  o.path = "out.nonsense";
  o.codec.clear();
  auto container = check_recorder_options(o);
  ASSERT_FALSE(container);
  EXPECT_EQ(container.error().message().rfind("the output out.nonsense", 0), 0u)
      << container.error().message();
  expect_plain(container.error().message());

  // The command line's names, where it gives them, are what its users read.
  o.setting = "--output";
  auto flagged = check_recorder_options(o);
  ASSERT_FALSE(flagged);
  EXPECT_EQ(flagged.error().message().rfind("--output out.nonsense", 0), 0u)
      << flagged.error().message();
}

TEST(SettingNames, AnEncoderThatIsNotTheCodecsIsNamedInPlainWords) {
  RecorderOptions o;
  o.path = "out.mov";
  o.codec = "ffv1";
  o.encoder = "prores_aw";
  auto checked = check_recorder_options(o);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message(),
            "the encoder prores_aw encodes prores, not ffv1 (the codec ffv1)");
}

TEST(SettingNames, AnInputsMistakesAreNamedInPlainWords) {
  SourceOptions o;
  o.input_format = "lavfi";
  o.input = "testsrc2=size=64x48:rate=25:duration=1";
  o.audio = SourceOptions::Audio::listed;
  o.audio_streams = {3};
  auto audio = Source::open(o);
  ASSERT_FALSE(audio);
  EXPECT_NE(audio.error().message().find("audio stream 3: the input has 0 audio streams"),
            std::string::npos)
      << audio.error().message();
  EXPECT_EQ(audio.error().message().rfind("the input format lavfi the input testsrc2", 0), 0u)
      << audio.error().message();
  expect_plain(audio.error().message());

  o.audio = SourceOptions::Audio::none;
  o.pixel_format = PixelFormat::v210;
  auto v210 = Source::open(o);
  ASSERT_FALSE(v210);
  EXPECT_NE(v210.error().message().find("the pixel format v210 is not available"),
            std::string::npos)
      << v210.error().message();
  expect_plain(v210.error().message());

  // With the command line's names, the same mistake reads as its flags.
  o.names.pixel_format = "--pix-fmt";
  o.names.input = "-i";
  o.names.input_format = "-f";
  auto flagged = Source::open(o);
  ASSERT_FALSE(flagged);
  EXPECT_EQ(flagged.error().message().rfind("-f lavfi -i testsrc2", 0), 0u)
      << flagged.error().message();
  EXPECT_NE(flagged.error().message().find("--pix-fmt v210 is not available"), std::string::npos);
}

TEST(SettingNames, AnAudioInputsMistakeIsNamedInPlainWords) {
  auto capture = AudioCapture::open("default", "no_such_device_kind");
  ASSERT_FALSE(capture);
  EXPECT_NE(capture.error().message().find(
                "the audio input's format no_such_device_kind is not an input format"),
            std::string::npos)
      << capture.error().message();
  expect_plain(capture.error().message());
}

}  // namespace
}  // namespace rdmavideo::av
