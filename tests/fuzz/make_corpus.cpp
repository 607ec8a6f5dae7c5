// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of the fuzz targets (fuzz/corpus/): every message type encoded,
// receiver sessions from Hello to EndOfStream in each configuration the first byte picks, and
// programs for the sinks' targets (sound, tiles).
// The files are kept in the repository; run this again when the protocol changes:
//   fuzz_make_corpus tests/fuzz/corpus
// (v2_* are sessions of a version 2 sender, kept as that sender wrote them.)
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "rdmavideo/protocol.hpp"

namespace {

using namespace rdmavideo;
namespace fs = std::filesystem;

void write(const fs::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void append(std::vector<std::byte>& out, const proto::Message& m) { proto::encode(m, out); }

proto::StreamStart format(uint32_t epoch, uint32_t width, PixelFormat pix = PixelFormat::uyvy) {
  auto f = proto::make_stream_start(pix, width, 36, {30, 1});
  f->stream_id = 1;
  f->ring_epoch = epoch;
  f->flags = proto::kStreamChecksums;
  f->name = "seed";
  return *f;
}

proto::Hello hello(uint32_t flags = 0) {
  proto::Hello h;
  h.max_frame_bytes = 1 << 20;
  h.flags = flags;
  h.software = "corpus";
  return h;
}

// Hello, StreamStart, `frames` frames (slot i % slots), optionally a format change and more
// frames, then EndOfStream.
std::vector<std::byte> session(uint8_t mode, int frames, bool change) {
  std::vector<std::byte> out{std::byte{mode}};
  append(out, hello());
  uint64_t sequence = 0;
  const uint32_t slots = 1 + (mode & 3);
  for (uint32_t epoch = 1; epoch <= (change ? 2u : 1u); ++epoch) {
    const auto f =
        format(epoch, epoch == 1 ? 64 : 128, epoch == 1 ? PixelFormat::uyvy : PixelFormat::nv12);
    append(out, f);
    for (int i = 0; i < frames; ++i) {
      proto::FrameWritten m;
      m.ring_epoch = epoch;
      m.slot = static_cast<uint32_t>(i) % slots;
      m.sequence = sequence++;
      m.pts_ns = static_cast<int64_t>(sequence) * 33'333'333;
      m.bytes = f.layout.frame_bytes;
      append(out, m);
      out.insert(out.end(), f.layout.frame_bytes, std::byte{static_cast<uint8_t>(i)});
      if (i % 3 == 2) append(out, proto::Keepalive{sequence});
    }
  }
  append(out, proto::EndOfStream{sequence, 0});
  return out;
}

proto::AudioStart audio_track(uint32_t id, proto::SampleFormat format, uint16_t channels) {
  proto::AudioStart a;
  a.stream_id = id;
  a.sample_format = format;
  a.sample_rate = 48000;
  a.channels = channels;
  a.name = "seed track";
  return a;
}

proto::AudioChunk samples(uint32_t id, uint32_t count, uint16_t channels, uint32_t bytes_per_sample,
                          int64_t pts) {
  proto::AudioChunk c;
  c.stream_id = id;
  c.samples = count;
  c.pts_ns = pts;
  c.data.assign(size_t{count} * channels * bytes_per_sample, std::byte{0x11});
  return c;
}

// Hello (offering `max_version`), StreamStart, two audio tracks started before the frames,
// `frames` frames each followed by a chunk of each track, one track ended, EndOfStream. With
// `audio_first` the tracks start before the StreamStart: an audio-only beginning.
std::vector<std::byte> audio_session(uint8_t mode, int frames, uint16_t max_version,
                                     bool audio_first) {
  std::vector<std::byte> out{std::byte{mode}};
  auto h = hello();
  h.max_version = max_version;
  append(out, h);
  const auto f = format(1, 64);
  const auto program = audio_track(2, proto::SampleFormat::f32p, 2);
  const auto mic = audio_track(3, proto::SampleFormat::s16, 1);
  const uint16_t v = max_version;
  auto put = [&](const proto::Message& m) { proto::encode(m, out, v); };
  if (audio_first) put(program);
  put(f);
  uint64_t sequence = 0;
  for (int i = 0; i < frames; ++i) {
    if (i == 2) {
      put(program);
      put(mic);
    }
    proto::FrameWritten m;
    m.ring_epoch = 1;
    m.slot = static_cast<uint32_t>(i) % (1 + (mode & 3));
    m.sequence = sequence++;
    m.pts_ns = static_cast<int64_t>(sequence) * 33'333'333;
    m.bytes = f.layout.frame_bytes;
    put(m);
    out.insert(out.end(), f.layout.frame_bytes, std::byte{static_cast<uint8_t>(i)});
    if (i >= 2) {
      put(samples(2, 800, 2, 4, m.pts_ns));
      put(samples(3, 800, 1, 2, m.pts_ns));
    }
    if (i == frames - 2) put(proto::AudioEnd{3});
  }
  put(proto::EndOfStream{sequence, 0});
  return out;
}

}  // namespace

// A program for the sinks' targets (media_targets.cpp), value by value.
class Program {
 public:
  template <typename T>
  Program& put(T v) {
    const auto* b = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
  // A value Input::in(lo, hi) reads as `v`.
  Program& in(uint32_t lo, uint32_t v) { return put<uint32_t>(v - lo); }
  // A pts step: small (whole milliseconds) or any.
  Program& step(int64_t ns) {
    if (ns % 1'000'000 == 0 && ns / 1'000'000 >= INT16_MIN && ns / 1'000'000 <= INT16_MAX) {
      return put<uint8_t>(0).put<int16_t>(static_cast<int16_t>(ns / 1'000'000));
    }
    return put<uint8_t>(255).put<int64_t>(ns);
  }
  Program& track(proto::SampleFormat format, uint32_t rate, uint32_t channels) {
    return in(1, static_cast<uint32_t>(format)).in(1000, rate).in(1, channels).put<uint8_t>(0);
  }
  Program& samples(uint32_t n) {
    return n <= 4 ? put<uint8_t>(1).in(1, n) : put<uint8_t>(0).in(1, n);
  }
  std::vector<std::byte> bytes;
};

// The sound of a 30 fps stream in chunks of `chunk` samples: into a tile (a frame, then a
// frame's worth of chunks, each 10 ms apart on the pts clock), then into a recording (the
// same, with `tracks` tracks, the last ended halfway); `jump_ns` once, halfway, in the sound's pts.
std::vector<std::byte> sound_seed(proto::SampleFormat format, uint32_t rate, uint32_t channels,
                                  uint32_t chunk, int64_t jump_ns, uint32_t tracks) {
  Program p;
  p.track(format, rate, channels).in(1'000'000, 33'333'333).put<uint8_t>(64);
  for (int op = 0; op < 64; ++op) {
    if (op % 4 == 0) {
      p.put<uint8_t>(1).step(33'000'000).in(0, 33'333'333);
    } else {
      p.put<uint8_t>(0)
          .samples(chunk)
          .step(op == 32 ? jump_ns : 10'000'000)
          .put<int32_t>(50'000'000);
    }
  }
  p.in(1, tracks);
  for (uint32_t t = 0; t < tracks; ++t)
    p.track(format, std::min(rate, 48000u), std::min(channels, 2u));
  p.in(1, 30).in(1, 1).put<uint8_t>(48);
  for (int op = 0; op < 48; ++op) {
    if (op % 4 == 0) {
      p.put<uint8_t>(0).step(33'000'000);
    } else if (op == 24 && tracks > 1) {
      p.put<uint8_t>(static_cast<uint8_t>(4 * (tracks - 1) + 3));  // AudioEnd of the last track
    } else {
      p.put<uint8_t>(static_cast<uint8_t>(4 * (op % tracks) + 1))
          .samples(chunk)
          .step(op == 24 ? jump_ns : 10'000'000);
    }
  }
  return p.bytes;
}

// A stream's time line (stream_targets.cpp): a 48 kHz track started, then 2 s of a 30 fps
// picture each followed by three 10 ms chunks, received live or not; with `pictures` false the
// pictures are left out (sound alone); `jump_ns` (nonzero) puts one picture there, halfway.
std::vector<std::byte> stream_seed(bool live, bool pictures, int64_t jump_ns) {
  Program p;
  p.put<uint8_t>(live ? 1 : 0);
  const auto op = [&](uint32_t after_ns, uint8_t which) -> Program& {
    p.in(0, after_ns).in(0, after_ns);
    if (live) p.put<uint8_t>(1);  // it arrived at the running time
    return p.put<uint8_t>(which);
  };
  op(0, 1).in(0, 0).in(1000, 48000);
  for (int f = 0; f < 60; ++f) {
    if (pictures) {
      if (jump_ns != 0 && f == 30) {
        op(33'333'333, 0).put<uint8_t>(255).put<int64_t>(jump_ns).in(0, 33'333'333);
      } else {
        op(33'333'333, 0).step(33'000'000).in(0, 33'333'333);
      }
    }
    for (int c = 0; c < 3; ++c) op(0, 3).in(0, 0).samples(480).step(10'000'000);
  }
  return p.bytes;
}

// Frames of `formats` placed into areas of a `width` x `height` canvas of canvas format
// `canvas` (media_targets.cpp's tables), in, across and outside it, as they came and fitted.
std::vector<std::byte> tiles_seed(uint8_t canvas, uint32_t width, uint32_t height) {
  Program p;
  p.put<uint8_t>(canvas).in(1, width / 2).in(1, height / 2).put<uint8_t>(8);
  const int16_t areas[8][4] = {{0, 0, 160, 90},      {160, 0, 160, 90}, {-40, 30, 100, 100},
                               {300, 150, 100, 100}, {1, 1, 33, 17},    {0, 0, 0, 0},
                               {500, 500, 10, 10},   {10, 10, 301, 171}};
  for (uint8_t i = 0; i < 8; ++i) {
    for (int16_t v : areas[i]) p.put<int16_t>(v);
    p.put<uint8_t>(static_cast<uint8_t>(i * 3))
        .in(1, 16u + i * 37)
        .in(1, 9u + i * 29)
        .put<uint8_t>(i % 2);
  }
  return p.bytes;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(
        stderr,
        "usage: fuzz_make_corpus DIR (writes DIR/decode, receiver, sound, stream and tiles)\n");
    return 2;
  }
  const fs::path dir = argv[1];
  fs::create_directories(dir / "decode");
  fs::create_directories(dir / "receiver");
  proto::Auth auth;
  auth.nonce[0] = std::byte{1};
  const std::vector<std::pair<const char*, proto::Message>> messages = {
      {"hello", hello(proto::kCapChecksum | proto::kCapAuth)},
      {"hello_ack", proto::HelloAck{2, proto::kCapAuth, 1 << 20, 8, "corpus"}},
      {"stream_start", format(1, 64)},
      {"ring_info", proto::RingInfo{1, 1, 8, 4608, 8192, 0x1000, 0x42}},
      {"frame_written", proto::FrameWritten{1, 2, 3, 4, 5, 4608, proto::kFrameHasChecksum, 6}},
      {"credit_return", proto::CreditReturn{1, {0, 1, 2, 3}}},
      {"keepalive", proto::Keepalive{7}},
      {"end_of_stream", proto::EndOfStream{10, 1}},
      {"error", proto::ErrorMessage{ErrorCode::resource, "receiver busy"}},
      {"auth", auth},
      {"audio_start", audio_track(2, proto::SampleFormat::f32p, 2)},
      {"audio_chunk", samples(3, 4, 2, 4, 1000)},
      {"audio_end", proto::AudioEnd{2}},
  };
  for (const auto& [name, message] : messages) write(dir / "decode" / name, proto::encode(message));
  // 64: the front end's rate check; 128: shed while waiting for StreamStart.
  for (uint8_t mode : {0, 1, 3, 8, 16, 34, 35, 43, 64, 128, 201}) {
    write(dir / "receiver" / ("session_mode" + std::to_string(mode)), session(mode, 5, false));
    write(dir / "receiver" / ("format_change_mode" + std::to_string(mode)), session(mode, 4, true));
  }
  // A keyed receiver: a Hello that offers a key, then a proof that cannot be right.
  std::vector<std::byte> keyed{std::byte{4}};
  append(keyed, hello(proto::kCapAuth));
  append(keyed, auth);
  write(dir / "receiver" / "keyed_wrong_proof", keyed);
  // A frame rate the front end's check refuses (2^31 fps), first and after a good format.
  auto too_fast = format(1, 64);
  too_fast.frame_rate = {1u << 31, 1};
  std::vector<std::byte> fast{std::byte{64}};
  append(fast, hello());
  append(fast, too_fast);
  write(dir / "receiver" / "rate_refused_mode64", fast);
  std::vector<std::byte> fast_later{std::byte{64}};
  append(fast_later, hello());
  append(fast_later, format(1, 64));
  too_fast.ring_epoch = 2;
  append(fast_later, too_fast);
  write(dir / "receiver" / "rate_refused_later_mode64", fast_later);
  // Audio beside the video (version 3): tracks, chunks and an end; with a budget too small
  // for the audio queue (mode 8: dropped, the picture goes on); an audio-only beginning
  // (refused); and audio on a connection that agreed on version 2 (refused).
  for (uint8_t mode : {0, 2, 8}) {
    write(dir / "receiver" / ("audio_session_mode" + std::to_string(mode)),
          audio_session(mode, 5, 3, false));
  }
  write(dir / "receiver" / "audio_only_mode0", audio_session(0, 5, 3, true));
  write(dir / "receiver" / "audio_on_v2_mode0", audio_session(0, 5, 2, false));
  // The sinks: one-sample chunks, large planar 5.1 ones, an hour's jump, two tracks.
  fs::create_directories(dir / "sound");
  write(dir / "sound" / "one_sample_s16",
        sound_seed(proto::SampleFormat::s16, 48000, 2, 1, 10'000'000, 1));
  write(dir / "sound" / "planar_51_44k",
        sound_seed(proto::SampleFormat::f32p, 44100, 6, 4410, 10'000'000, 1));
  write(dir / "sound" / "hour_jump",
        sound_seed(proto::SampleFormat::s32, 48000, 2, 480, 3'599'000'000'000, 1));
  write(dir / "sound" / "two_tracks_one_ends",
        sound_seed(proto::SampleFormat::s16p, 8000, 1, 80, -500'000'000, 2));
  fs::create_directories(dir / "stream");
  write(dir / "stream" / "steady", stream_seed(false, true, 0));
  write(dir / "stream" / "live_picture_an_hour_ahead", stream_seed(true, true, 3'601'000'000'000));
  write(dir / "stream" / "sound_alone", stream_seed(false, false, 0));
  fs::create_directories(dir / "tiles");
  write(dir / "tiles" / "nv12_640x360", tiles_seed(0, 640, 360));
  write(dir / "tiles" / "uyvy_320x180", tiles_seed(2, 320, 180));
  write(dir / "tiles" / "p010_400x240", tiles_seed(4, 400, 240));
  write(dir / "tiles" / "rgba_98x54", tiles_seed(5, 98, 54));
  return 0;
}
