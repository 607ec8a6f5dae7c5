// SPDX-License-Identifier: Apache-2.0
// The stream time line's fuzz target (targets.hpp): the program is a mode byte (live or not),
// then operations, each a byte that picks it and the values it takes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "input.hpp"
#include "rdmavideo/stream_timeline.hpp"
#include "targets.hpp"

namespace rdmavideo::fuzz {
namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

// A pts: mostly near where the source was (either way), sometimes anywhere in int64.
int64_t pts_near(Input& in, int64_t was) {
  if (in.get<uint8_t>() < 220) {
    int64_t out = 0;
    const int64_t step = static_cast<int64_t>(in.get<int16_t>()) * 1'000'000;
    return __builtin_add_overflow(was, step, &out) ? was : out;
  }
  return in.get<int64_t>();
}

// Where `samples` at `rate` from `at` end, as the time line holds times: within 2^60 ns.
int64_t end_of(int64_t at, uint64_t samples, uint32_t rate) {
  const __int128 end = at + static_cast<__int128>(samples) * 1'000'000'000 / rate;
  return static_cast<int64_t>(std::min<__int128>(end, __int128{1} << 60));
}

// How many samples `ns` is at `rate`, and one more for rounding.
uint64_t samples_in(int64_t ns, uint32_t rate) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * rate / 1'000'000'000u) + 1;
}

}  // namespace

uint64_t place_stream(const uint8_t* data, size_t size) {
  Input in(data, size);
  const bool live = in.get<uint8_t>() & 1;
  StreamTimeline line(live);
  struct Track {
    uint32_t rate = 48000;
    int64_t pts = 0;   // the sender's pts so far
    int64_t end = -1;  // where what it was given ends
  };
  std::map<uint32_t, Track> tracks;
  int64_t now = 0, arrival = 0, picture_pts = 0, last_picture = -1, gap_end = -1;
  uint64_t ops = 0;
  while (!in.empty() && ops < 400) {
    ++ops;
    now += in.in(0, 300'000'000);
    arrival += in.in(0, 300'000'000);
    const int64_t arrives = live && (in.get<uint8_t>() & 7) ? arrival : -1;
    switch (in.get<uint8_t>() % 6) {
      case 0: {  // a picture
        picture_pts = pts_near(in, picture_pts);
        const int64_t at = line.picture(picture_pts, in.in(0, 100'000'000), arrives, now);
        if (at < 0) finding("a picture stamped before 0");
        if (at < last_picture) finding("a picture stamped before the one ahead of it");
        last_picture = at;
        for (const auto& s : line.idle(now)) {
          auto t = tracks.find(s.track);
          if (t == tracks.end()) finding("silence for a track that is not there");
          if (s.samples > samples_in(2 * StreamTimeline::kApartNs, t->second.rate))
            finding("more silence at once for an idle track than the bound");
          if (t->second.end >= 0 && s.at_ns < t->second.end - 1'000)
            finding("silence over a track's own sound");
          t->second.end = end_of(s.at_ns, s.samples, t->second.rate);
        }
        break;
      }
      case 1: {  // a track starts
        const uint32_t n = in.in(0, 3);
        Track t;
        t.rate = in.in(1000, 768000);
        t.pts = picture_pts;
        tracks[n] = t;
        line.start_track(n, t.rate, now);
        break;
      }
      case 2: {  // a track ends
        const uint32_t n = in.in(0, 3);
        tracks.erase(n);
        line.end_track(n);
        break;
      }
      default: {  // a chunk
        if (tracks.empty()) break;
        auto t = tracks.begin();
        std::advance(t, in.in(0, static_cast<uint32_t>(tracks.size() - 1)));
        Track& track = t->second;
        const uint32_t samples = in.get<uint8_t>() & 1 ? in.in(1, 4) : in.in(1, 9600);
        track.pts = pts_near(in, track.pts);
        const auto placed = line.sound(t->first, track.pts, samples, arrives, now);
        if (placed.silence_samples > samples_in(StreamTimeline::kMostSilenceNs, track.rate))
          finding("more silence at once for a hole than the bound");
        if (placed.silence_samples > 0 && track.end >= 0 &&
            placed.silence_at_ns < track.end - 1'000)
          finding("silence over a track's own sound");
        if (!placed.keep) break;
        if (placed.at_ns < 0) finding("sound stamped before 0");
        if (placed.skip >= samples) finding("a kept chunk with nothing kept");
        if (track.end >= 0 && placed.at_ns < track.end - 1'000)
          finding("a track's sound went back over itself");
        track.end = end_of(placed.at_ns, samples - placed.skip, track.rate);
        if (auto gap = line.picture_gap(now)) {
          if (gap->second <= gap->first) finding("an empty gap in the pictures");
          if (gap->first < gap_end) finding("a gap in the pictures over one given before");
          gap_end = gap->second;
        }
        break;
      }
    }
  }
  return ops;
}

}  // namespace rdmavideo::fuzz
