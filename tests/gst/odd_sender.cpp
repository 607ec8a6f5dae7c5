// SPDX-License-Identifier: Apache-2.0
// odd_sender: a sender of pictures and sound that misbehaves the way real senders do, for
// the tests that point gst-launch-1.0 recipes (rdmasrc into qtmux, mp4mux, matroskamux) and
// rdmavideo-recv at it. It is the library's own session (as rdmavideo-send and OBS's output
// use it), paced in real time, so everything it sends is well-formed: only its timing and
// timestamps are odd. Its pictures flash white on every whole second of their pts and its
// sound beeps on the same instants (1 kHz, 0.1 s), so a recording's sync can be measured.
//
//   odd_sender --connect HOST:PORT --case CASE [--seconds S] [--live] [--tracks N] [--name N]
//
// Cases:
//   steady      pictures and sound as a good sender sends them
//   jump        at 2 s the pictures' pts jump 2 s ahead; the sound goes on on its own clock
//   late        each chunk of sound is sent 3 s after its pictures (its pts are right)
//   flood       200 chunks of 1 ms before the first picture, then as steady
//   no-pictures sound alone: the stream is described, but no picture is ever sent
//   pause       track 0 says nothing from 2 s to 2.5 s, then goes on
//   die         as steady until 2 s, then the process ends without EndOfStream
//   hour        at 2 s one chunk of sound, and at 3 s one picture, stamped an hour ahead
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/sender_session.hpp"

namespace {

using rdmavideo::SenderSession;

constexpr uint32_t kRate = 48000;
constexpr int64_t kSecond = 1'000'000'000;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "odd_sender: %s\n", why.c_str());
  std::exit(2);
}

struct Args {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string kase = "steady";
  std::string name;  // the stream's; "odd CASE" by default
  double seconds = 6;
  bool live = false;
  uint32_t tracks = 1;
  uint32_t fps = 30;
  uint32_t width = 320, height = 180;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--live") {
      a.live = true;
      continue;
    }
    if (i + 1 >= argc) usage(k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--connect") {
      const auto colon = v.rfind(':');
      if (colon == std::string::npos) usage("--connect HOST:PORT");
      a.host = v.substr(0, colon);
      a.port = static_cast<uint16_t>(std::stoi(v.substr(colon + 1)));
    } else if (k == "--case") {
      a.kase = v;
    } else if (k == "--seconds") {
      a.seconds = std::stod(v);
    } else if (k == "--tracks") {
      a.tracks = static_cast<uint32_t>(std::stoul(v));
    } else if (k == "--name") {
      a.name = v;
    } else if (k == "--fps") {
      a.fps = static_cast<uint32_t>(std::stoul(v));
    } else {
      usage("unknown option " + k);
    }
  }
  static const char* kCases[] = {"steady",      "jump",  "late", "flood",
                                 "no-pictures", "pause", "die",  "hour"};
  bool known = false;
  for (const char* c : kCases) known = known || a.kase == c;
  if (!known) usage("unknown case " + a.kase);
  if (a.port == 0) usage("--connect HOST:PORT is needed");
  return a;
}

// `samples` of interleaved stereo F32 starting at `at_ns` of the track's own time: a beep of
// 1 kHz in the first 0.1 s of every second, quiet between.
std::vector<float> beeps(int64_t at_ns, uint32_t samples, double hz) {
  std::vector<float> out(size_t{samples} * 2);
  for (uint32_t i = 0; i < samples; ++i) {
    const double t = static_cast<double>(at_ns) / 1e9 + static_cast<double>(i) / kRate;
    const double amplitude = std::fmod(t, 1.0) < 0.1 ? 0.5 : 0.01;
    out[2 * i] = out[2 * i + 1] = static_cast<float>(amplitude * std::sin(2 * M_PI * hz * t));
  }
  return out;
}

void check(const rdmavideo::Result<void>& r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "odd_sender: %s: %s\n", what, r.error().message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  rdmavideo::SenderSessionOptions options;
  options.transport = rdmavideo::TransportKind::tcp;
  options.connect.endpoint = rdmavideo::Endpoint{a.host, a.port};
  options.policy.live = a.live;
  auto session = SenderSession::connect(options);
  if (!session) usage("connect: " + session.error().message());
  auto format = rdmavideo::proto::make_stream_start(rdmavideo::PixelFormat::uyvy, a.width, a.height,
                                                    {a.fps, 1});
  if (!format) usage(format.error().message());
  format->name = a.name.empty() ? "odd " + a.kase : a.name;
  if (a.live) format->flags |= rdmavideo::proto::kStreamLive;
  if (auto ring = (*session)->start_stream(*format, 4); !ring) usage(ring.error().message());

  std::vector<uint32_t> tracks;
  for (uint32_t t = 0; t < a.tracks; ++t) {
    rdmavideo::proto::AudioStart stereo;
    stereo.sample_format = rdmavideo::proto::SampleFormat::f32;
    stereo.sample_rate = kRate;
    stereo.channels = 2;
    stereo.channel_layout = 3;
    stereo.name = "track " + std::to_string(t);
    auto n = (*session)->start_audio(stereo);
    if (!n) usage(n.error().message());
    tracks.push_back(*n);
  }
  const auto send_sound = [&](uint32_t track, int64_t pts, int64_t content_ns, uint32_t samples) {
    const auto pcm = beeps(content_ns, samples, 1000.0 + 500.0 * track);
    check((*session)->submit_audio(track, pts, samples, std::as_bytes(std::span(pcm))),
          "submit_audio");
  };

  const int64_t frame_ns = kSecond / a.fps;
  constexpr uint32_t kChunk = kRate / 100;  // 10 ms
  const int64_t chunk_ns = int64_t{kChunk} * kSecond / kRate;
  if (a.kase == "flood") {
    // 1 ms apart by a sample each: none follows on from the one before, so each goes alone.
    for (int i = 0; i < 200; ++i) {
      for (uint32_t t : tracks) send_sound(t, i * 1'001'000, i * 1'001'000, 48);
    }
  }
  const auto frames = static_cast<uint64_t>(a.seconds * a.fps);
  int64_t sound_at = a.kase == "flood" ? 201 * 1'001'000 : 0;  // sound sent up to here
  std::deque<std::pair<int64_t, int64_t>> held;                // late: (due, pts) of chunks
  for (uint64_t f = 0; f < frames; ++f) {
    auto pacing = (*session)->pace(f);
    if (!pacing) usage(pacing.error().message());
    const int64_t t = static_cast<int64_t>(f) * frame_ns;  // the picture's own time
    if (a.kase == "die" && t >= 2 * kSecond) {
      std::fprintf(stderr, "odd_sender: ending without EndOfStream at frame %llu\n",
                   static_cast<unsigned long long>(f));
      std::fflush(stderr);
      std::_Exit(3);
    }
    for (; sound_at < t + frame_ns; sound_at += chunk_ns) {
      const bool paused =
          a.kase == "pause" && sound_at >= 2 * kSecond && sound_at < 2 * kSecond + kSecond / 2;
      if (a.kase == "late") {
        held.emplace_back(sound_at + 3 * kSecond, sound_at);
        continue;
      }
      for (uint32_t tr : tracks) {
        if (paused && tr == 0) continue;
        int64_t pts = sound_at;
        if (a.kase == "hour" && sound_at >= 2 * kSecond && sound_at < 2 * kSecond + chunk_ns)
          pts += 3600 * kSecond;
        send_sound(tr, pts, sound_at, kChunk);
      }
    }
    while (!held.empty() && held.front().first <= t) {
      for (uint32_t tr : tracks) send_sound(tr, held.front().second, held.front().second, kChunk);
      held.pop_front();
    }
    if (a.kase == "no-pictures") continue;
    int64_t pts = t;
    if (a.kase == "jump" && t >= 2 * kSecond) pts += 2 * kSecond;
    if (a.kase == "hour" && f == 3 * a.fps) pts += 3600 * kSecond;
    auto buffer = (*session)->acquire_buffer();
    if (!buffer) usage(buffer.error().message());
    if (!*buffer) continue;  // live: none free
    // UYVY: white on the frame that starts each second of its pts, black otherwise.
    const bool white = (pts % kSecond) < frame_ns;
    auto bytes = buffer->bytes();
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      bytes[i] = std::byte{128};
      bytes[i + 1] = std::byte{static_cast<uint8_t>(white ? 235 : 16)};
    }
    auto sent = (*session)->submit(*buffer, rdmavideo::FrameMeta{f, pts});
    if (!sent) usage(sent.error().message());
    if (*sent == SenderSession::Outcome::receiver_ended) break;
  }
  for (uint32_t tr : tracks) check((*session)->end_audio(tr), "end_audio");
  check((*session)->end_stream(), "end_stream");
  return 0;
}
