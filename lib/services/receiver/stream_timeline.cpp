// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/stream_timeline.hpp"

#include <algorithm>
#include <cstdlib>

#include "rdmavideo/audio_placement.hpp"

namespace rdmavideo {
namespace {

// Every time here is held within about 36 years either side of 0 (a peer's timestamps, and
// what offsets and sums of them make), so no sum or difference of two of them overflows.
constexpr int64_t kLimitNs = int64_t{1} << 60;
int64_t bounded(__int128 ns) {
  return static_cast<int64_t>(std::clamp<__int128>(ns, -kLimitNs, kLimitNs));
}

}  // namespace

int64_t StreamTimeline::Track::ns_of(uint64_t samples) const {
  // In 128 bits: an hour of 768 kHz sound times 1e9 is beyond 64.
  return bounded(static_cast<unsigned __int128>(samples) * 1'000'000'000u / rate);
}

uint64_t StreamTimeline::Track::samples_of(int64_t ns) const {
  if (ns <= 0) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ns) * rate + 500'000'000u) /
                               1'000'000'000u);
}

int64_t StreamTimeline::Track::next_ns() const {
  return bounded(static_cast<__int128>(base_ns) + ns_of(count));
}

int64_t StreamTimeline::map(int64_t pts_ns, int64_t offset_ns, int64_t arrival_ns) {
  const int64_t raw = bounded(static_cast<__int128>(pts_ns) + offset_ns);
  if (with_clock(arrival_ns)) {
    if (!delay_ns_) {
      delay_ns_ = bounded(static_cast<__int128>(arrival_ns) - raw);
      last_raw_ns_ = raw;
    }
    return bounded(static_cast<__int128>(raw) + *delay_ns_);
  }
  if (!origin_ns_) origin_ns_ = raw;
  return bounded(static_cast<__int128>(raw) - *origin_ns_);
}

int64_t StreamTimeline::move(int source, Source& from, int64_t s, int64_t by_ns) {
  from.offset_ns = bounded(static_cast<__int128>(from.offset_ns) + by_ns);
  if (std::llabs(from.offset_ns) <= kApartNs) {
    // Back where the stream's own mapping puts it (a jump there and back): exactly.
    by_ns -= from.offset_ns;
    from.offset_ns = 0;
  }
  ++jumps_;
  new_jumps_.push_back({source, by_ns});
  return bounded(static_cast<__int128>(s) + by_ns);
}

int64_t StreamTimeline::live_check(int source, int64_t s, int64_t raw_ns, int64_t arrival_ns,
                                   Source& from) {
  const int64_t late = arrival_ns - s;
  if (std::llabs(late) > kApartNs) {
    // This source alone goes back to where it arrives as it did before (its usual lateness
    // behind the stream's latency), and the stream's latency stays.
    return move(source, from, s, late - from.late_ns);
  }
  int64_t moved = 0;
  if (late < 0) {
    moved = late;  // a new smallest delay: never stamped after it arrived
  } else {
    // A receiver clock running faster than the sender's: follow it, slowly.
    const int64_t gone = std::max<int64_t>(raw_ns - last_raw_ns_, 0);
    moved = std::min<int64_t>(late, gone / 1000);
  }
  *delay_ns_ = bounded(static_cast<__int128>(*delay_ns_) + moved);
  from.late_ns = late - moved;
  last_raw_ns_ = raw_ns;
  return bounded(static_cast<__int128>(raw_ns) + *delay_ns_);
}

int64_t StreamTimeline::sound_end() const {
  int64_t end = -1;
  for (const auto& [n, t] : tracks_) {
    if (t.placed) end = std::max(end, t.next_ns());
  }
  return end;
}

int64_t StreamTimeline::picture(int64_t pts_ns, int64_t duration_ns, int64_t arrival_ns,
                                int64_t now_ns) {
  heard(now_ns);
  pictures_heard_ns_ = now_ns;
  pts_ns = bounded(pts_ns);
  arrival_ns = std::min(arrival_ns, kLimitNs);
  duration_ns = std::clamp<int64_t>(duration_ns, 0, kApartNs);
  int64_t s = map(pts_ns, pictures_.offset_ns, arrival_ns);
  if (with_clock(arrival_ns)) {
    s = live_check(kPictures, s, bounded(static_cast<__int128>(pts_ns) + pictures_.offset_ns),
                   arrival_ns, pictures_);
  } else {
    // Where the pictures belong: where they left off, or (the first) beside the sound.
    const int64_t expected = last_picture_ns_ >= 0 ? picture_end_ns_ : sound_end();
    if (expected >= 0 && std::llabs(s - expected) > kApartNs) {
      bool stays = false;
      if (last_picture_ns_ >= 0) {
        // A hole the sound went through too is the stream's, and so is one forward with no
        // sound to keep beside.
        bool any_sound = false;
        for (const auto& [n, t] : tracks_) {
          if (!t.placed) continue;
          any_sound = true;
          stays = stays || std::llabs(s - t.next_ns()) <= kApartNs;
        }
        stays = stays || (!any_sound && s > expected);
      }
      if (!stays) s = move(kPictures, pictures_, s, expected - s);
    }
  }
  s = std::max<int64_t>({s, last_picture_ns_, 0});
  last_picture_ns_ = s;
  picture_end_ns_ = s + duration_ns;
  return s;
}

void StreamTimeline::heard(int64_t now_ns) {
  if (!first_heard_ns_) first_heard_ns_ = now_ns;
}

void StreamTimeline::start_track(uint32_t track, uint32_t sample_rate, int64_t now_ns) {
  heard(now_ns);
  Track t;
  t.rate = sample_rate ? sample_rate : 1;
  t.since_ns = last_picture_ns_;
  t.heard_ns = now_ns;
  tracks_[track] = t;
}

void StreamTimeline::end_track(uint32_t track) { tracks_.erase(track); }

StreamTimeline::Sound StreamTimeline::sound(uint32_t track, int64_t pts_ns, uint32_t samples,
                                            int64_t arrival_ns, int64_t now_ns) {
  pts_ns = bounded(pts_ns);
  arrival_ns = std::min(arrival_ns, kLimitNs);
  auto found = tracks_.find(track);
  if (found == tracks_.end()) {
    start_track(track, 48000, now_ns);
    found = tracks_.find(track);
  }
  Track& t = found->second;
  heard(now_ns);
  t.heard_ns = now_ns;
  Sound out;
  int64_t s = map(pts_ns, t.offset_ns, arrival_ns);
  if (with_clock(arrival_ns)) {
    s = live_check(static_cast<int>(track), s, bounded(static_cast<__int128>(pts_ns) + t.offset_ns),
                   arrival_ns, t);
  } else {
    // A sender may send its sound behind its pictures (a file, as fast as it goes): that
    // is kept. What strays is sound ahead of everything, or behind where the track already
    // is (silence it was given while it said nothing, or a jump back).
    int64_t ahead_of = std::max(t.placed ? t.next_ns() : -1, picture_end_ns_);
    if (ahead_of < 0) ahead_of = sound_end();
    if (ahead_of >= 0 && s > ahead_of + kApartNs) {
      const int64_t target = t.placed               ? t.next_ns()
                             : picture_end_ns_ >= 0 ? picture_end_ns_
                                                    : ahead_of;
      s = move(static_cast<int>(track), t, s, target - s);
    } else if (t.placed && s < t.next_ns() - kApartNs) {
      // Where it left off, but no further behind the pictures than half the distance that
      // would stray again.
      const int64_t target = std::max(t.next_ns(), picture_end_ns_ - kApartNs / 2);
      s = move(static_cast<int>(track), t, s, target - s);
    }
  }

  if (!t.placed) {
    if (s < 0) {
      // Before the stream's start: cut.
      out.skip = static_cast<uint32_t>(std::min<uint64_t>(t.samples_of(-s) + 1, samples));
      while (out.skip > 0 && s + t.ns_of(out.skip - 1) >= 0) --out.skip;
      if (out.skip >= samples) {
        cut_samples_ += samples;
        out.keep = false;
        return out;
      }
      cut_samples_ += out.skip;
    }
    t.placed = true;
    t.base_ns = s + t.ns_of(out.skip);
    t.count = samples - out.skip;
    out.at_ns = t.base_ns;
    return out;
  }
  const int64_t next = t.next_ns();
  const int64_t apart = s - next;
  switch (continuity(apart, kToleranceNs, kMostSilenceNs, kApartNs)) {
    case Continuity::follows: break;
    case Continuity::gap:
      out.silence_at_ns = next;
      out.silence_samples = t.samples_of(apart);
      t.count += out.silence_samples;
      silence_samples_ += out.silence_samples;
      break;
    case Continuity::overlap:
      out.skip = static_cast<uint32_t>(std::min<uint64_t>(t.samples_of(-apart), samples));
      cut_samples_ += out.skip;
      if (out.skip >= samples) {
        out.keep = false;
        return out;
      }
      break;
    case Continuity::jump:
      if (apart > 0) {
        // Far ahead of where it left off, though where it belongs (a hole of more silence
        // than is made at once): placed anew there.
        t.base_ns = s;
        t.count = samples;
        out.at_ns = s;
        return out;
      }
      // Far behind where it left off: it goes on from there.
      s = move(static_cast<int>(track), t, s, -apart);
      if (const int64_t now = s - t.next_ns(); now > kToleranceNs) {
        // Back on the stream's mapping, a little after where it left off.
        out.silence_at_ns = t.next_ns();
        out.silence_samples = t.samples_of(now);
        t.count += out.silence_samples;
        silence_samples_ += out.silence_samples;
      }
      break;
  }
  out.at_ns = t.next_ns();
  t.count += samples - out.skip;
  return out;
}

std::vector<StreamTimeline::Silence> StreamTimeline::idle(int64_t now_ns) {
  std::vector<Silence> owed;
  if (last_picture_ns_ < 0) return owed;
  const int64_t until = last_picture_ns_ - kApartNs;
  for (auto& [n, t] : tracks_) {
    // Sound that comes, however far behind the pictures, is the sender's to send.
    if (now_ns - t.heard_ns < kApartNs) continue;
    if (!t.placed) {
      if (t.since_ns < 0) t.since_ns = last_picture_ns_;
      if (last_picture_ns_ < t.since_ns + kApartNs) continue;
      t.placed = true;
      t.base_ns = t.since_ns;
      t.count = 0;
    }
    const int64_t next = t.next_ns();
    if (until <= next) continue;
    if (until - next > 2 * kApartNs) {
      // Silent for long with no picture either: not that much silence, it starts anew nearer.
      t.base_ns = until - 2 * kApartNs;
      t.count = 0;
    }
    const uint64_t samples = t.samples_of(until - t.next_ns());
    if (samples == 0) continue;
    owed.push_back({n, t.next_ns(), samples});
    t.count += samples;
    silence_samples_ += samples;
  }
  return owed;
}

std::optional<std::pair<int64_t, int64_t>> StreamTimeline::picture_gap(int64_t now_ns) {
  const int64_t end = sound_end();
  if (end < 0) return std::nullopt;
  // Pictures that come, however far behind the sound, are the sender's to send.
  const int64_t quiet_since =
      pictures_heard_ns_ ? *pictures_heard_ns_ : first_heard_ns_.value_or(now_ns);
  if (now_ns - quiet_since < kApartNs) return std::nullopt;
  const int64_t from = std::max<int64_t>({picture_end_ns_, gap_end_ns_, 0});
  const int64_t until = end - kApartNs;
  if (until <= from) return std::nullopt;
  gap_end_ns_ = until;
  return std::make_pair(from, until);
}

}  // namespace rdmavideo
