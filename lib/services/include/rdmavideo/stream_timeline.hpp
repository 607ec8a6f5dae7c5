// SPDX-License-Identifier: Apache-2.0
// StreamTimeline: where a received stream's pictures and the samples of its audio tracks go
// on one time line, for a consumer that hands them on separately (rdmasrc's pads) to
// something that interleaves them again downstream (a muxer, a mixer, a player).
//
// A muxer takes whichever of its inputs is earliest and waits for the others, so sources that
// stray apart stall it until one input's queue is full; PCM in a .mov must also be contiguous
// (qtmux fails a track whose timestamps drift 40 ms from its sample count). So:
//
//   - Each source (the pictures, each track) keeps an offset of its own on top of the
//     stream's common mapping. A source that strays more than kApartNs from where it belongs
//     has jumped: it is moved back (its offset changed, the move counted and reported once
//     through take_jumps()), and the others are not disturbed; a move that brings it back
//     within kApartNs of the common mapping puts it exactly there. Not live, a picture
//     belongs where its pictures left off, unless the sound went there too; a track may run
//     behind the pictures (a file sent as fast as it goes) but not ahead of everything, nor
//     back behind where it already is. Live, everything belongs at its arrival: the stream's
//     latency is the smallest delay seen between a pts and its arrival, which may creep up by
//     0.1% of the time gone by (a receiver clock running faster than the sender's), and a
//     source that jumped does not move it.
//   - A track's samples are placed sample-exact where its last ones ended: a hole becomes
//     silence, an overlap is cut, so its timestamps always match its sample count.
//   - A track from which nothing has come for kApartNs (by the caller's clock: `now_ns`,
//     monotonic) gets silence up to kApartNs behind the last picture (idle()); with no
//     picture for kApartNs, sound more than kApartNs ahead of the last one asks for a gap in
//     the pictures (picture_gap()). No input of a muxer is then left empty for long, while
//     sound or pictures that do come, however far behind, are kept.
//
// Stamps are ns from the first pts (not live) or running time (live); never negative (sound
// from before 0 is cut). One thread calls everything (the stream's connection thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace rdmavideo {

class StreamTimeline {
 public:
  /// How far a source may stray from where it belongs before it is moved back.
  static constexpr int64_t kApartNs = 500'000'000;
  /// Jitter in a track's timestamps: nearer than this to where it left off, it follows on.
  static constexpr int64_t kToleranceNs = 10'000'000;
  /// The longest hole in a track filled with silence; a track further ahead of where it left
  /// off (and still beside the pictures) goes on from there, discontinuous.
  static constexpr int64_t kMostSilenceNs = 10'000'000'000;
  /// The source take_jumps() names for the pictures.
  static constexpr int kPictures = -1;

  /// `live`: stamps follow arrival (a negative arrival, no clock, falls back to pts).
  explicit StreamTimeline(bool live) : live_(live) {}

  /// A picture of `duration_ns` with pts `pts_ns`, arrived at running time `arrival_ns`
  /// (`now_ns` by the monotonic clock): its stamp, never before the picture before it.
  int64_t picture(int64_t pts_ns, int64_t duration_ns, int64_t arrival_ns, int64_t now_ns);

  void start_track(uint32_t track, uint32_t sample_rate, int64_t now_ns);
  void end_track(uint32_t track);

  /// Where a chunk of a track goes.
  struct Sound {
    int64_t silence_at_ns = 0;     ///< silence to put before the samples starts here
    uint64_t silence_samples = 0;  ///< that many samples of it (0: none)
    int64_t at_ns = 0;             ///< where the first sample kept goes
    uint32_t skip = 0;             ///< samples at the chunk's start not kept (overlap, before 0)
    bool keep = true;              ///< false: no sample of the chunk is kept
  };
  /// A chunk of `samples` of a started track with pts `pts_ns`, arrived at `arrival_ns`.
  Sound sound(uint32_t track, int64_t pts_ns, uint32_t samples, int64_t arrival_ns, int64_t now_ns);

  /// Silence owed to a track from which nothing came for kApartNs: `samples` of it at
  /// `at_ns`, up to kApartNs behind the last picture. Returned once: the track has it from
  /// then on.
  struct Silence {
    uint32_t track = 0;
    int64_t at_ns = 0;
    uint64_t samples = 0;
  };
  /// Call after each picture.
  std::vector<Silence> idle(int64_t now_ns);
  /// The pictures' gap (start, end) where no picture came for kApartNs and the sound runs
  /// more than kApartNs ahead of the last (or with none yet): what was not asked for before.
  std::optional<std::pair<int64_t, int64_t>> picture_gap(int64_t now_ns);

  /// A source moved back beside the others by `by_ns` (positive: later).
  struct Jump {
    int source = kPictures;  ///< kPictures or a track
    int64_t by_ns = 0;
  };
  /// The moves since the last call.
  std::vector<Jump> take_jumps() { return std::exchange(new_jumps_, {}); }
  uint64_t jumps() const { return jumps_; }
  /// Silence put into tracks (gaps filled and idle tracks), and samples cut (overlaps), in
  /// samples of each track's rate added up.
  uint64_t silence_samples() const { return silence_samples_; }
  uint64_t cut_samples() const { return cut_samples_; }

 private:
  // What every source keeps: its own offset on the stream's mapping, and (live) how late it
  // arrived last, behind the stream's latency, when it had not jumped.
  struct Source {
    int64_t offset_ns = 0;
    int64_t late_ns = 0;
  };
  struct Track : Source {
    uint32_t rate = 48000;
    int64_t heard_ns = 0;     // now_ns of its last chunk (or its start)
    int64_t since_ns = -1;    // the last picture when it started; -1 before any
    bool placed = false;      // base_ns/count hold where its sound ends
    int64_t base_ns = 0;      // where it was last placed anew
    uint64_t count = 0;       // samples placed since
    int64_t next_ns() const;  // where its sound so far ends
    int64_t ns_of(uint64_t samples) const;
    uint64_t samples_of(int64_t ns) const;  // rounded to the nearest sample
  };
  int64_t map(int64_t pts_ns, int64_t offset_ns, int64_t arrival_ns);
  // Live: the source's stamp `s` against its arrival; moves the source where it strayed,
  // else follows the stream's latency. Returns the stamp.
  int64_t live_check(int source, int64_t s, int64_t raw_ns, int64_t arrival_ns, Source& from);
  bool with_clock(int64_t arrival_ns) const { return live_ && arrival_ns >= 0; }
  // Moves a source that jumped by `by_ns` (its stamp `s`, returned moved), counted; where
  // that brings it within kApartNs of the stream's own mapping, exactly onto it.
  int64_t move(int source, Source& from, int64_t s, int64_t by_ns);
  // The furthest a placed track's sound reaches; -1 with none.
  int64_t sound_end() const;
  void heard(int64_t now_ns);

  bool live_;
  std::optional<int64_t> origin_ns_;  // not live: the first pts
  std::optional<int64_t> delay_ns_;   // live: running time minus pts, the stream's latency
  int64_t last_raw_ns_ = 0;           // live: the last pts seen (with its source's offset)
  Source pictures_;
  int64_t last_picture_ns_ = -1;              // the last picture's stamp
  int64_t picture_end_ns_ = -1;               // and where it ends
  int64_t gap_end_ns_ = -1;                   // the pictures' gap asked for so far
  std::optional<int64_t> first_heard_ns_;     // now_ns of the first call
  std::optional<int64_t> pictures_heard_ns_;  // now_ns of the last picture
  std::map<uint32_t, Track> tracks_;
  std::vector<Jump> new_jumps_;
  uint64_t jumps_ = 0;
  uint64_t silence_samples_ = 0;
  uint64_t cut_samples_ = 0;
};

}  // namespace rdmavideo
