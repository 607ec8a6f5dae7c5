// SPDX-License-Identifier: Apache-2.0
// The sinks' fuzz targets (targets.hpp): where a stream's sound and pictures go once the
// receiver core has let them through. The input is read as a small program: a format, a count
// of operations, then each operation, a byte that picks it and the bytes it takes (`Input`
// runs out into zeros, so every input is a whole program). make_corpus.cpp writes seeds in
// this form.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "guarded.hpp"
#include "input.hpp"
#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/media/tile_clock.hpp"
#include "targets.hpp"

namespace rdmavideo::fuzz {
namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

// A track's format as a peer may send it: every sample format, a rate and channel count in the
// protocol's ranges (at most `most_rate` and `most_channels`), a layout of that many channels
// or none.
proto::AudioStart audio_format(Input& in, uint32_t most_rate, uint16_t most_channels) {
  proto::AudioStart a;
  a.stream_id = 2;
  a.sample_format = static_cast<proto::SampleFormat>(in.in(1, 6));
  a.sample_rate = in.in(proto::kMinSampleRate, most_rate);
  a.channels = static_cast<uint16_t>(in.in(1, most_channels));
  if (in.get<uint8_t>() & 1) {
    // The first `channels` bits of a mask from the input, filled up from bit 0.
    uint64_t mask = in.get<uint64_t>(), layout = 0;
    for (int bit = 0; bit < 64 && std::popcount(layout) < a.channels; ++bit) {
      if (mask & (uint64_t{1} << bit)) layout |= uint64_t{1} << bit;
    }
    for (int bit = 0; bit < 64 && std::popcount(layout) < a.channels; ++bit)
      layout |= uint64_t{1} << bit;
    a.channel_layout = layout;
  }
  a.name = "fuzz";
  return a;
}

// A pts step: mostly small (either way), sometimes any int64 (a seek, a restarted source, a
// hostile peer).
int64_t pts_step(Input& in) {
  const uint8_t kind = in.get<uint8_t>();
  if (kind < 200) return static_cast<int64_t>(in.get<int16_t>()) * 1'000'000;
  return in.get<int64_t>();
}

// What a recording reserves in the budget (av::recorder_memory()) for a stream of any carried
// format and size, any codec and container: known wherever the recording's checks pass, at
// least the frame it copies, never less with more encoder threads, and never wrapped around.
void check_recording_memory(Input& in) {
  static const char* const kPaths[] = {"a.mov", "a.mkv", "a.mp4", "a.nut", "a.y4m"};
  av::RecorderOptions options;
  options.path = kPaths[in.in(0, 4)];
  const auto& codecs = av::recorder_codecs();
  const uint32_t pick = in.in(0, static_cast<uint32_t>(codecs.size()));
  if (pick < codecs.size()) options.codec = codecs[pick];  // else the container's own
  if (in.get<uint8_t>() % 4 == 0) options.encoder = av::kOwnProresEncoder;
  options.threads = static_cast<int>(in.in(0, 64));
  const auto pixel_format = static_cast<PixelFormat>(in.in(1, 16));
  auto stream = proto::make_stream_start(pixel_format, in.in(1, 16384), in.in(1, 16384),
                                         {in.in(1, 240), in.in(1, 1001)});
  if (!stream || !av::check_recorder_format(options, *stream)) return;
  const auto memory = av::recorder_memory(options, *stream);
  if (!memory) finding("a recording the checks let through has no memory estimate");
  if (memory->threads < 1) finding("a recording's encoder reserved for no thread");
  if (memory->bytes(1) < stream->layout.frame_bytes) {
    finding("a recording reserved less than the frame it copies");
  }
  if (memory->bytes(memory->threads) < memory->bytes(1) || memory->bytes(1) > (1ull << 62)) {
    finding("a recording's memory estimate wrapped around");
  }
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

std::vector<std::byte> samples_of(const proto::AudioStart& a, uint32_t samples) {
  std::vector<std::byte> data(size_t{samples} * a.channels *
                              proto::bytes_per_sample(a.sample_format));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 37 + 11);
  return data;
}

}  // namespace

SoundRun place_sound(const uint8_t* data, size_t size) {
  Input in(data, size);
  SoundRun run;

  // ---- The canvas and the display: a tile's clock, the drift compensation, the conversion
  // into the canvas's (or a sound device's) 48 kHz stereo float.
  {
    const auto format = audio_format(in, proto::kMaxSampleRate, proto::kMaxAudioChannels);
    auto converter = av::AudioConverter::open(format, 48000, 2);  // refused: the tile has no sound
    media::TileClock clock(static_cast<int64_t>(in.in(1'000'000, 1'000'000'000)), 48000);
    int64_t frame_pts = 0, audio_pts = 0, arrival = 0;
    uint64_t scaled_in = 0, packets = 0;
    const int ops = in.get<uint8_t>() % 65;
    for (int op = 0; op < ops; ++op) {
      if (in.get<uint8_t>() & 1) {
        frame_pts = saturating_add(frame_pts, pts_step(in));
        arrival += in.in(0, 200'000'000);
        (void)clock.frame(frame_pts, arrival);
        continue;
      }
      const uint32_t samples = in.get<uint8_t>() & 1 ? in.in(1, 4) : in.in(1, 9600);
      audio_pts = saturating_add(audio_pts, pts_step(in));
      const auto bytes = samples_of(format, samples);
      const auto shift = static_cast<int64_t>(in.get<int32_t>());
      if (!converter || !clock.tied()) continue;
      const int64_t expected = static_cast<int64_t>(samples) * 48000 / format.sample_rate;
      const auto place = clock.audio(audio_pts, shift, expected);
      if (expected > 0) (void)(*converter)->compensate(place.delta, static_cast<int>(expected));
      auto out = (*converter)->convert(samples, bytes);
      if (!out) continue;
      if (out->size() % 2 != 0) finding("the converter made half a stereo sample");
      const auto n = static_cast<int64_t>(out->size() / 2);
      clock.placed(place.at, n);
      run.converted += static_cast<uint64_t>(n);
      scaled_in += static_cast<uint64_t>(samples) * 48000 / format.sample_rate + 1;
      ++packets;
    }
    // Compensation stretches by at most a 50th and carries at most 4,800 samples; the
    // resampler keeps a little back and rounds each packet.
    if (run.converted > scaled_in + scaled_in / 25 + 4800 + 64 * packets + 256) {
      finding("the canvas's sound grew more than its compensation allows");
    }
  }

  // ---- A recording: the picture's pts repaired, each track placed on its timeline, gaps
  // filled with silence up to the bound, the end padded or trimmed.
  av::RecorderOptions options;
  options.path = (std::filesystem::temp_directory_path() /
                  ("rdmavideo-fuzz-" + std::to_string(getpid()) + ".nut"))
                     .string();
  options.codec = "rawvideo";
  const int tracks = static_cast<int>(in.in(1, 2));
  for (int t = 0; t < tracks; ++t) options.audio.push_back(audio_format(in, 48000, 2));
  const uint32_t rate_num = in.in(1, 60), rate_den = in.in(1, 1001);
  auto stream = proto::make_stream_start(PixelFormat::uyvy, 16, 16, {rate_num, rate_den});
  if (!stream || !av::check_recorder_format(options, *stream)) return run;
  for (const auto& a : options.audio) {
    if (!av::check_recorder_audio(options, a)) return run;
  }
  auto recorder = av::Recorder::open(options, *stream);
  if (!recorder) finding("a recording the checks let through did not open");
  const std::vector<std::byte> picture(stream->layout.frame_bytes, std::byte{0x80});
  int64_t frame_pts = 0;
  std::vector<int64_t> audio_pts(options.audio.size(), 0);
  uint64_t frames = 0;
  // What each track may grow by: what it received, and per frame and per chunk at most the
  // longest gap a file keeps (10 s) and the lead a track may have on its picture (2 s).
  std::vector<uint64_t> steps(options.audio.size(), 0), received(options.audio.size(), 0);
  const int ops = in.get<uint8_t>() % 49;
  for (int op = 0; op < ops; ++op) {
    const uint8_t what = in.get<uint8_t>();
    if (what % 4 == 0) {
      frame_pts = saturating_add(frame_pts, pts_step(in));
      if (frames < 6 && (*recorder)->write(picture, frame_pts)) {
        ++frames;
        for (auto& n : steps) ++n;
      }
    } else if (what % 4 == 3) {
      (*recorder)->end_audio(what / 4 % tracks);
    } else {
      const auto track = static_cast<uint32_t>(what / 4 % tracks);
      const auto& format = options.audio[track];
      const uint32_t samples = in.get<uint8_t>() & 1 ? in.in(1, 4) : in.in(1, 4800);
      audio_pts[track] = saturating_add(audio_pts[track], pts_step(in));
      // After the first frame only, as the receiver's recording sink gives them.
      if (frames > 0 &&
          (*recorder)->write_audio(track, audio_pts[track], samples, samples_of(format, samples))) {
        ++steps[track];
        received[track] += samples;
      }
    }
  }
  const auto finished = (*recorder)->finish();
  const auto audio = (*recorder)->audio();
  recorder->reset();
  check_recording_memory(in);
  struct stat st {};
  const bool written = ::stat(options.path.c_str(), &st) == 0;
  std::filesystem::remove(options.path);
  if (!finished) return run;
  if (!written) finding("a finished recording has no file");
  // No message made a track grow by more than the bound (an hour's jump wrote a gigabyte).
  uint64_t most_bytes = 1 << 20;
  for (size_t t = 0; t < audio.size(); ++t) {
    const auto& format = options.audio[t];
    const uint64_t most = received[t] + (steps[t] + 1) * 12 * uint64_t{format.sample_rate} + 8192;
    if (audio[t].written > most) finding("a track grew by more than the longest gap a file keeps");
    most_bytes += audio[t].written * format.channels * 4;
  }
  most_bytes += frames * stream->layout.frame_bytes * 2;
  if (static_cast<uint64_t>(st.st_size) > most_bytes)
    finding("a recording grew beyond its picture's length");
  run.frames = frames;
  for (const auto& track : audio) run.recorded += track.written;
  return run;
}

void place_tiles(const uint8_t* data, size_t size) {
  Input in(data, size);
  static constexpr PixelFormat kCanvasFormats[] = {PixelFormat::nv12, PixelFormat::i420,
                                                   PixelFormat::uyvy, PixelFormat::yuv422p10,
                                                   PixelFormat::p010, PixelFormat::rgba};
  static constexpr PixelFormat kFrameFormats[] = {
      PixelFormat::nv12,      PixelFormat::i420,    PixelFormat::p010,      PixelFormat::uyvy,
      PixelFormat::yuy2,      PixelFormat::rgba,    PixelFormat::bgra,      PixelFormat::rgb24,
      PixelFormat::yuv422p10, PixelFormat::yuv444p, PixelFormat::yuv444p10, PixelFormat::yuv444p12,
      PixelFormat::v210};
  const PixelFormat canvas_format = kCanvasFormats[in.get<uint8_t>() % std::size(kCanvasFormats)];
  const uint32_t cw = in.in(1, 200) * 2, ch = in.in(1, 120) * 2;
  auto canvas = av::Canvas::create(canvas_format, cw, ch, {30, 1});
  if (!canvas) return;
  auto fitter = (*canvas)->fitter();
  const int ops = in.get<uint8_t>() % 9;
  for (int op = 0; op < ops; ++op) {
    const av::Rect area{in.get<int16_t>(), in.get<int16_t>(), in.get<int16_t>(), in.get<int16_t>()};
    const PixelFormat frame_format = kFrameFormats[in.get<uint8_t>() % std::size(kFrameFormats)];
    const uint32_t width = in.in(1, 300), height = in.in(1, 300);
    auto frame = proto::make_stream_start(frame_format, width, height, {30, 1});
    if (!frame) continue;
    // Ending where its memory does: a read past its end faults.
    testing::Guarded guarded(frame->layout.frame_bytes);
    const auto bytes = guarded.bytes();
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 13 + op);

    // Where it may land: the area, grown to even corners and clipped to the canvas.
    const av::Rect allowed = av::clip(area, cw, ch);
    const av::Rect picture = av::fit(allowed, frame->width, frame->height);
    if (!allowed.empty()) {
      if (picture.x < allowed.x || picture.y < allowed.y ||
          picture.x + picture.width > allowed.x + allowed.width ||
          picture.y + picture.height > allowed.y + allowed.height) {
        finding("fit() put a picture outside its area");
      }
      for (const av::Rect& bar : av::bars(allowed, picture)) {
        if (bar.width < 0 || bar.height < 0) finding("bars() made a rectangle of negative size");
      }
    }
    const std::vector<std::byte> before((*canvas)->frame().begin(), (*canvas)->frame().end());
    const bool fitted_first = in.get<uint8_t>() & 1;
    Result<av::Rect> placed = av::Rect{};
    if (fitted_first) {
      auto as = (*canvas)->fitted(*frame, area);
      if (!as) continue;
      std::vector<std::byte> held(as->layout.frame_bytes);
      if (!fitter->fit(*frame, bytes, *as, held)) continue;
      placed = (*canvas)->place(*as, held, area);
    } else {
      placed = (*canvas)->place(*frame, bytes, area);
    }
    if (!placed) continue;
    if (placed->empty()) continue;
    if (placed->x < 0 || placed->y < 0 || placed->x + placed->width > static_cast<int>(cw) ||
        placed->y + placed->height > static_cast<int>(ch)) {
      finding("a picture placed outside the canvas");
    }
    // Nothing changed outside the allowed rectangle: checked on the first plane's rows, which
    // every format has, a whole row of pixels being row_bytes / width bytes each.
    const auto& plane = (*canvas)->format().layout.planes[0];
    const size_t row_bytes = min_row_bytes(canvas_format, cw, 0);
    const size_t px = row_bytes / cw;
    const auto after = (*canvas)->frame();
    for (uint32_t y = 0; y < ch; ++y) {
      const size_t row = plane.offset + size_t{y} * plane.stride;
      const bool inside_rows =
          static_cast<int>(y) >= allowed.y && static_cast<int>(y) < allowed.y + allowed.height;
      for (size_t b = 0; b < row_bytes; ++b) {
        const int x = static_cast<int>(b / px);
        const bool inside = inside_rows && x >= allowed.x && x < allowed.x + allowed.width;
        if (!inside && after[row + b] != before[row + b])
          finding("a placed picture wrote beside its area");
      }
    }
  }
}

}  // namespace rdmavideo::fuzz
