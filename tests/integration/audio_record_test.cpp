// SPDX-License-Identifier: Apache-2.0
// Audio beside video, checked as a person would hear it: the real binaries over 127.0.0.1
// (and over verbs with a key in the Soft-RoCE lab, the rxe_audio_record test), recordings
// decoded with ffmpeg, and tests/support/av_sync.py measuring every beep against its flash
// and the tone's frequency. The sources are rdmavideo-send --testsrc --tone (the pattern
// flashes on the first frame at or after each whole second, the tone beeps on the second)
// and a clip made with ffmpeg the same way, measured first as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "output_checks.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> sender(const Receiver& recv, std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

struct Container {
  const char* extension;
  const char* video;
  const char* audio;
  double extra_s;  // the audio codec's padding at the end
};
void PrintTo(const Container& c, std::ostream* os) { *os << c.extension; }

class ToneInto : public ::testing::TestWithParam<Container> {};

// 60 s of 29.97 fps (whole seconds fall between frames there) with the tone, into each
// container, --verify checking every frame (flashes included).
TEST_P(ToneInto, EveryBeepOnItsFlashAtTheRightPitch) {
  const Container c = GetParam();
  TempDir dir;
  const auto out = dir / (std::string("tone") + c.extension);
  const auto stats = dir / "stats.json";
  Receiver recv(dir, {"--output", out.string(), "--verify", "--stats-json", stats.string()});
  Process send(sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30000/1001",
                             "--pix-fmt", "yuv420p", "--tone", "1000", "--frames", "1800"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(stream_codecs(out),
            std::string(c.video) + ",video\n" + c.audio + ",audio\n" +
                (std::string(c.extension) == ".mov" || std::string(c.extension) == ".mp4"
                     ? "unknown,data\n"  // the timecode track
                     : ""));
  expect_in_sync(av_sync(out), 60, 1000, c.extra_s);
  const auto summary = read_json(stats);
  const auto& stream = summary["streams"][0];
  EXPECT_EQ(stream["protocol_version"], 3);
  ASSERT_EQ(stream["audio"].size(), 1u) << stream.dump();
  const auto& track = stream["audio"][0];
  EXPECT_EQ(track["name"], "tone 1000 Hz");
  EXPECT_EQ(track["samples"], uint64_t{1800} * 48000 * 1001 / 30000);
  EXPECT_EQ(track["dropped_samples"], 0);
  EXPECT_EQ(track["recorded"], true);
  EXPECT_EQ(track["gaps_filled_ms"], 0.0);
}

INSTANTIATE_TEST_SUITE_P(Containers, ToneInto,
                         ::testing::Values(Container{".mov", "prores", "pcm_s24le", 0},
                                           Container{".mkv", "ffv1", "flac", 0},
                                           Container{".nut", "ffv1", "pcm_s24le", 0},
                                           Container{".mp4", "h264", "aac", 1024.0 / 48000}),
                         [](const auto& p) { return std::string(p.param.extension + 1); });

// The clip of the acceptance check: H.264 and AAC in MP4, 20 s, a white flash and a 1 kHz
// beep at every whole second, 48 kHz stereo; measured as it is, then sent with -i.
std::filesystem::path flash_clip(const TempDir& dir) {
  const auto clip = dir / "flashes.mp4";
  const std::string make =
      "ffmpeg -nostdin -v error -y -f lavfi -i \"color=c=black:s=320x180:r=30,format=yuv420p,"
      "geq=lum='if(lt(mod(N\\,30)\\,1)\\,235\\,16)':cb=128:cr=128\" -f lavfi -i "
      "\"aevalsrc='if(lt(mod(t\\,1)\\,0.1)\\,0.5\\,0.01)*sin(2*PI*1000*t)|"
      "if(lt(mod(t\\,1)\\,0.1)\\,0.5\\,0.01)*sin(2*PI*1000*t)':s=48000\" -t 20 -c:v libx264 "
      "-preset "
      "ultrafast -c:a aac -b:a 192k '" +
      clip.string() + "'";
  EXPECT_EQ(shell(make), 0) << make;
  return clip;
}

TEST(AudioRecord, AClipSentWithItsSoundIsRecordedInSyncAsTheSourceIs) {
  TempDir dir;
  const auto clip = flash_clip(dir);
  const auto source = av_sync(clip);
  expect_in_sync(source, 20, 1000, 1024.0 / 48000);
  for (const char* extension : {".mov", ".mkv", ".mp4"}) {
    SCOPED_TRACE(extension);
    const auto out = dir / (std::string("clip") + extension);
    Receiver recv(dir, {"--output", out.string()});
    Process send(sender(recv, {"--transport", "tcp", "-i", clip.string()}), dir / "send.stderr");
    ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
    ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    const auto got = av_sync(out);
    expect_in_sync(got, 20, 1000, std::string(extension) == ".mp4" ? 1024.0 / 48000 : 0);
    // As the source: each beep where it was against its flash, within a sample or two.
    ASSERT_EQ(got["offsets_ms"].size(), source["offsets_ms"].size());
    for (size_t i = 0; i < got["offsets_ms"].size(); ++i) {
      EXPECT_NEAR(got["offsets_ms"][i].get<double>(), source["offsets_ms"][i].get<double>(), 0.1)
          << i;
    }
  }
}

// Three audio streams with their titles: --audio all records three named tracks; --audio 2
// only the third.
TEST(AudioRecord, EveryAudioStreamOfAFileBecomesANamedTrack) {
  TempDir dir;
  const auto clip = dir / "three.mkv";
  const std::string make =
      "ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=160x90:rate=25 -f lavfi -i "
      "sine=frequency=440 "
      "-f lavfi -i sine=frequency=880 -f lavfi -i sine=frequency=1760 -map 0 -map 1 -map 2 -map 3 "
      "-t 4 "
      "-c:v libx264 -preset ultrafast -c:a flac -metadata:s:a:0 title=Program -metadata:s:a:1 "
      "title=Commentary "
      "-metadata:s:a:2 title=Music '" +
      clip.string() + "'";
  ASSERT_EQ(shell(make), 0) << make;
  auto record = [&](const std::string& choice, const std::string& name) {
    const auto out = dir / name;
    Receiver recv(dir, {"--output", out.string()});
    Process send(sender(recv, {"--transport", "tcp", "-i", clip.string(), "--audio", choice}),
                 dir / "send.stderr");
    EXPECT_EQ(send.wait(60s), 0) << send.stderr_text();
    EXPECT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
    return capture(
        "ffprobe -v error -select_streams a -show_entries stream_tags=title -of csv=p=0 '" +
        out.string() + "'");
  };
  EXPECT_EQ(record("all", "all.mkv"), "Program\nCommentary\nMusic\n");
  EXPECT_EQ(record("2", "third.mkv"), "Music\n");
  // A stream that is not there is named with how many there are.
  Receiver recv(dir, {"--output", (dir / "none.mkv").string()});
  Process send(sender(recv, {"--transport", "tcp", "-i", clip.string(), "--audio", "3"}),
               dir / "bad.stderr");
  EXPECT_EQ(send.wait(60s), 1);
  EXPECT_NE(send.stderr_text().find("--audio 3: the input has 3 audio streams (0..2)"),
            std::string::npos)
      << send.stderr_text();
  recv.process().signal(SIGINT);
  recv.process().wait(30s);
}

// A live sender killed mid-recording: every track plays to the last frame, in sync.
TEST(AudioRecord, ASenderKilledMidRecordingLeavesEveryTrackToTheEndInSync) {
  TempDir dir;
  const auto out = dir / "killed.mov";
  Receiver recv(dir, {"--output", out.string(), "--verify"});
  Process send(sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30",
                             "--tone", "440", "--realtime"}),
               dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(audio track 0)", 30s))
      << recv.process().stderr_text();
  std::this_thread::sleep_for(4500ms);
  send.signal(SIGKILL);
  send.wait(10s);
  ASSERT_TRUE(recv.process().wait(60s)) << recv.process().stderr_text();
  EXPECT_EQ(capture("ffmpeg -nostdin -v error -i '" + out.string() + "' -f null - 2>&1"), "");
  expect_in_sync(av_sync(out), 4, 440);
}

// SIGINT to the receiver mid-recording: the file is finalised, every track plays to the last
// frame, in sync.
TEST(AudioRecord, SigintToTheReceiverFinalisesEveryTrack) {
  TempDir dir;
  const auto out = dir / "stopped.mkv";
  Receiver recv(dir, {"--output", out.string()});
  Process send(sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30",
                             "--pix-fmt", "yuv420p", "--tone", "800", "--realtime"}),
               dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(audio track 0)", 30s))
      << recv.process().stderr_text();
  std::this_thread::sleep_for(3500ms);
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  send.wait(20s);
  EXPECT_EQ(capture("ffmpeg -nostdin -v error -i '" + out.string() + "' -f null - 2>&1"), "");
  expect_in_sync(av_sync(out), 3, 800);
}

// Four cameras with sound into one receiver: four streams (tracks count against nothing),
// four files, each in sync at its own pitch.
TEST(AudioRecord, FourSendersWithSoundMakeFourFilesEachInSync) {
  TempDir dir;
  const auto stats = dir / "stats.json";
  Receiver recv(dir, {"--max-streams", "4", "--output", (dir / "cam{n}.mkv").string(),
                      "--stats-json", stats.string()});
  std::vector<std::unique_ptr<Process>> senders;
  const int pitches[] = {500, 1000, 1500, 2000};
  for (int i = 0; i < 4; ++i) {
    senders.push_back(std::make_unique<Process>(
        sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30", "--pix-fmt",
                      "yuv420p", "--tone", std::to_string(pitches[i]), "--frames", "300", "--name",
                      "cam" + std::to_string(i)}),
        dir / ("send" + std::to_string(i) + ".stderr")));
  }
  for (auto& s : senders) ASSERT_EQ(s->wait(120s), 0) << s->stderr_text();
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto summary = read_json(stats);
  ASSERT_EQ(summary["streams"].size(), 4u);
  std::set<double> heard;
  for (int n = 1; n <= 4; ++n) {
    const auto m = av_sync(dir / ("cam" + std::to_string(n) + ".mkv"));
    SCOPED_TRACE(n);
    EXPECT_EQ(m["beeps"], 10) << m.dump();
    EXPECT_EQ(m["beeps"], m["flashes"]);
    EXPECT_LE(m["max_abs_offset_ms"].get<double>(), m["frame_ms"].get<double>() + 0.5) << m.dump();
    heard.insert(std::round(m["tone_hz"].get<double>() / 10) * 10);
  }
  EXPECT_EQ(heard, (std::set<double>{500, 1000, 1500, 2000}));
}

// An audio input of its own (--audio-f lavfi --audio-i ...: a beep at every whole second at
// 700 Hz, 44.1 kHz mono) beside the test pattern and its tone: its beeps land on the flashes
// as the tone's do, as a second track.
TEST(AudioRecord, AnAudioInputOfItsOwnIsPlacedOnThePicturesClock) {
  TempDir dir;
  const auto out = dir / "input.mov";
  Receiver recv(dir, {"--output", out.string()});
  Process send(
      sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "-r", "30", "--realtime",
                    "--duration", "5", "--tone", "1000", "--audio-f", "lavfi", "--audio-i",
                    "aevalsrc=if(lt(mod(t\\,1)\\,0.1)\\,0.5\\,0.01)*sin(2*PI*700*t):s=44100"}),
      dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  expect_in_sync(av_sync(out, 0), 4, 1000);
  const auto input = av_sync(out, 1);
  expect_in_sync(input, 4, 700);
  EXPECT_EQ(capture("ffprobe -v error -select_streams a:1 -show_entries "
                    "stream=sample_rate,channels -of csv=p=0 '" +
                    out.string() + "'"),
            "44100,1\n");
}

// Raw frames hold no audio: dropped, said once, counted; the picture is written as ever.
TEST(AudioRecord, RawOutputDropsTheAudioSayingSoOnce) {
  TempDir dir;
  const auto stats = dir / "stats.json";
  Receiver recv(dir, {"--output", (dir / "frames.yuv").string(), "--stats-json", stats.string()});
  Process send(sender(recv, {"--transport", "tcp", "--testsrc", "-s", "64x36", "--tone", "1000",
                             "--frames", "60"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const std::string text = recv.process().stderr_text();
  const auto first = text.find("audio dropped");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("audio dropped", first + 1), std::string::npos) << "said more than once:\n"
                                                                      << text;
  const auto summary = read_json(stats);
  const auto& track = summary["streams"][0]["audio"][0];
  EXPECT_EQ(track["dropped_samples"], track["samples"]);
  EXPECT_GT(track["samples"].get<uint64_t>(), 0u);
  EXPECT_EQ(std::filesystem::file_size(dir / "frames.yuv"), 60u * 64 * 36 * 2);
}

// --audio-output beside .y4m frames: a .wav per track that starts with the first frame and
// lasts as long as the frames; put together as a user would (ffmpeg -i x.y4m -i x.wav) every
// beep is on its flash. A template names the files per stream.
TEST(AudioRecord, AudioOutputBesideY4mIsAWavInSync) {
  TempDir dir;
  Receiver recv(dir, {"--output", (dir / "cam-{n}.y4m").string(), "--audio-output",
                      (dir / "cam-{n}.wav").string()});
  Process send(
      sender(recv, {"--transport", "tcp", "--testsrc", "-s", "320x180", "--pix-fmt", "yuv420p",
                    "-r", "30000/1001", "--tone", "1000", "--realtime", "--duration", "8"}),
      dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto wav = dir / "cam-1.wav";
  ASSERT_TRUE(std::filesystem::exists(wav)) << recv.process().stderr_text();
  EXPECT_EQ(stream_codecs(wav), "pcm_s24le,audio\n");
  const auto joined = dir / "joined.mkv";
  const std::string join = "ffmpeg -nostdin -v error -y -i '" + (dir / "cam-1.y4m").string() +
                           "' -i '" + wav.string() + "' -map 0:v -map 1:a -c:v ffv1 -c:a copy '" +
                           joined.string() + "'";
  ASSERT_EQ(shell(join), 0) << join;
  expect_in_sync(av_sync(joined), 7, 1000);
}

// Raw frames with two tracks: the second goes to "-track2.wav"; both as long as the frames.
TEST(AudioRecord, AudioOutputBesideRawFramesWritesEveryTrack) {
  TempDir dir;
  const auto clip = dir / "two.mkv";
  const std::string make =
      "ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=160x90:rate=25 -f lavfi -i "
      "sine=frequency=440 "
      "-f lavfi -i sine=frequency=880 -map 0 -map 1 -map 2 -t 3 -c:v libx264 -preset ultrafast "
      "-c:a flac '" +
      clip.string() + "'";
  ASSERT_EQ(shell(make), 0) << make;
  const auto stats = dir / "stats.json";
  Receiver recv(dir, {"--output", (dir / "frames.yuv").string(), "--audio-output",
                      (dir / "sound.wav").string(), "--stats-json", stats.string()});
  Process send(sender(recv, {"--transport", "tcp", "-i", clip.string(), "--audio", "all"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  const auto frames = read_json(stats)["frames"].get<uint64_t>();
  EXPECT_EQ(frames, 75u);
  for (const char* name : {"sound.wav", "sound-track2.wav"}) {
    const auto duration = capture("ffprobe -v error -show_entries format=duration -of csv=p=0 '" +
                                  (dir / name).string() + "'");
    ASSERT_FALSE(duration.empty()) << name << "\n" << recv.process().stderr_text();
    EXPECT_NEAR(std::stod(duration), frames / 25.0, 1.0 / 25) << name;
  }
  const auto summary = read_json(stats);
  for (const auto& track : summary["streams"][0]["audio"]) {
    EXPECT_TRUE(track["recorded"].get<bool>()) << track;
    EXPECT_EQ(track["dropped_samples"].get<uint64_t>(), 0u) << track;
  }
}

// A receiver killed outright: the .wav's header says no size, yet it decodes to within the
// last 64 KiB written (0.2 s of 48 kHz stereo) of the moment of the kill.
TEST(AudioRecord, AudioOutputOfAKilledReceiverStillDecodes) {
  TempDir dir;
  const auto wav = dir / "kill.wav";
  Receiver recv(dir, {"--audio-output", wav.string()});
  Process send(sender(recv, {"--transport", "tcp", "--testsrc", "-s", "160x90", "-r", "30",
                             "--tone", "1000", "--realtime", "--duration", "30"}),
               dir / "send.stderr");
  ASSERT_TRUE(recv.process().wait_for_stderr(R"(audio track 0 to )", 20s))
      << recv.process().stderr_text();
  std::this_thread::sleep_for(4s);
  recv.process().signal(SIGKILL);
  recv.process().wait(10s);
  send.signal(SIGINT);
  send.wait(30s);
  const auto duration =
      capture("ffprobe -v error -show_entries format=duration -of csv=p=0 '" + wav.string() + "'");
  ASSERT_FALSE(duration.empty());
  EXPECT_GT(std::stod(duration), 3.5) << duration;
  EXPECT_EQ(shell("ffmpeg -nostdin -v quiet -i '" + wav.string() + "' -f null -"), 0);
}

// A wrong --audio-output is a usage error naming what is wrong.
TEST(AudioRecord, AudioOutputUsageErrors) {
  TempDir dir;
  auto refused = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0"});
    Process recv(args, dir / "usage.stderr");
    EXPECT_EQ(recv.wait(10s), 2);
    return recv.stderr_text();
  };
  EXPECT_NE(
      refused({"--audio-output", "x.mp3"}).find("--audio-output \"x.mp3\" must name a .wav file"),
      std::string::npos);
  EXPECT_NE(refused({"--output", "x.mov", "--audio-output", "x.wav"})
                .find("records every audio track itself"),
            std::string::npos);
  EXPECT_NE(refused({"--max-streams", "2", "--output", "a-{n}.yuv", "--audio-output", "x.wav"})
                .find("--audio-output"),
            std::string::npos);
}

// Over verbs, with a key (every chunk tagged and split to the control buffer): the same
// sync, pitch and --verify. Runs in the Soft-RoCE lab (rxe_audio_record).
TEST(AudioRecord, OverVerbsWithAKeyTheToneStaysInSync) {
  if (!std::filesystem::exists("/sys/class/infiniband/rxe0")) {
    GTEST_SKIP() << "no Soft-RoCE lab here (rxe0 missing): ctest -L rxe runs this in it";
  }
  TempDir dir;
  const auto key = dir / "key";
  ASSERT_EQ(shell(std::string(RDMAVIDEO_RECV_BIN) + " --help >/dev/null"), 0);
  ASSERT_EQ(shell("head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > '" + key.string() +
                  "' && chmod 600 '" + key.string() + "'"),
            0);
  const auto out = dir / "verbs.mov";
  Receiver recv(
      dir,
      {"--transport", "verbs", "--key-file", key.string(), "--output", out.string(), "--verify"},
      {}, "recv", "10.99.0.1");
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--transport", "verbs",
                "--key-file", key.string(), "--testsrc", "-s", "320x180", "-r", "30", "--tone",
                "1000", "--frames", "300"},
               dir / "send.stderr");
  ASSERT_EQ(send.wait(120s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  expect_in_sync(av_sync(out), 10, 1000);
}

}  // namespace
}  // namespace rdmavideo::testing
