// SPDX-License-Identifier: Apache-2.0
// What the compositor's rooms share (compositor.cpp: tiles and the canvas's tick;
// compositor_sound.cpp: the canvas's track, one tile's or mixed; compositor_report.cpp): a
// tile's state, and the canvas's sound format.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "composite_canvas.hpp"
#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/media/compositor.hpp"
#include "rdmavideo/media/tile_clock.hpp"

namespace rdmavideo::media {

inline constexpr uint32_t kAudioRate = 48000;  // the canvas's sound
inline constexpr uint16_t kAudioChannels = 2;
// Mixed sound: how old canvas time is before it is mixed (a track's samples that
// arrive later than this are silence there), and how far ahead a track may be buffered.
inline constexpr int64_t kMixLatencyNs = 200'000'000;
inline constexpr int64_t kMixAheadSamples = 10 * kAudioRate;
/// A packet of the canvas's track (interleaved float at kAudioRate, kAudioChannels) at `pts_ns`.
AudioPacket canvas_packet(int64_t pts_ns, std::span<const float> samples);

struct Compositor::Tile {
  // Three frames held of `held` bytes, fitted from frames of `source` bytes where they are
  // (the CPU canvas): the fitter's scratch picture, the copy of a source that ends near the
  // end of its memory (libswscale reads past a row's end), and libswscale's own filters and
  // lines.
  static uint64_t bytes_held(uint64_t held, uint64_t source) {
    constexpr uint64_t kScalerBytes = 1ull << 20;  // libswscale's context, beside its lines
    const uint64_t fitting = source == 0 ? 0 : held + source + source / 8 + kScalerBytes;
    return 3 * held + fitting;
  }
  // A frame copied out of its ring slot on arrival (the slot goes back at once), with its
  // time on the canvas's clock.
  struct Held {
    enum class State { free, writing, ready, reading } state = State::free;
    std::shared_ptr<memory::Region> copy;  // in the canvas's memory, made on first need
    size_t bytes = 0;                      // the frame size it was made for
    std::shared_ptr<const proto::StreamStart> format;
    int64_t canvas_ns = 0;
  };
  TileSpec spec;
  // Under the compositor's mu_.
  bool taken = false;        // a stream is in it now
  bool drawn_empty = false;  // the no-signal picture is on the canvas for what it holds now
  std::array<Held, 3> held;  // the newest frames, each shown one canvas period after its time
  std::shared_ptr<const void> reservation;  // their memory, in the receiver's budget
  std::shared_ptr<memory::Budget> budget;   // the receiver's (null: none)
  size_t reserved_frame_bytes = 0;          // the reservation is for frames held of this size
  size_t reserved_source_bytes = 0;         // fitted from frames of this size (0: as they came)
  std::string name;                         // the stream's, or the last one's
  uint64_t stream = 0;
  uint64_t received = 0, composited = 0, sampled = 0, repeats = 0;
  uint64_t uploads = 0, downloads = 0;  // frames copied between host and GPU memory on arrival
  CompositeCanvas::Copier copier;       // its stream's connection thread
  // What its stream's frames are held as where the canvas is drawn by the CPU (scaled to
  // their picture on arrival, CompositeCanvas::held_as), for the format they came in.
  std::shared_ptr<const proto::StreamStart> held_for;
  std::shared_ptr<const proto::StreamStart> held_as;  // null: as they came
  bool warned = false;                                // a frame it could not place was said once
  int64_t last_shown_ns = 0;   // canvas time its stream's newest frame was first shown
  int64_t quiet_after_ns = 0;  // its stream's quiet: no new frame for this long is marked
  bool marked_quiet = false;   // the "NO FRAMES" mark is on its picture (until a frame comes)
  uint64_t stalls = 0;         // times it was marked
  av::Rect picture{};          // compositor thread: where its last frame was placed
  // The stream's clock on the canvas's (tile_clock.hpp): its frames' times, and where its
  // sound's samples go.
  TileClock clock{0, kAudioRate};
  // How long after its time a frame is shown (a period and the wait for the next tick),
  // smoothed: its sound is placed that much later too, so that it stays with its picture.
  std::optional<double> shown_after_ns;
  // The shift its sound is placed with: predicted from the tick its first frame is shown at,
  // and taken again from the smoothed value above only when the two part by more than a
  // quarter period, so that samples follow one another without the recording filling or
  // trimming between them.
  std::optional<int64_t> audio_shift_ns;
  // Its stream's sound, where the canvas carries it: converted to the canvas's track.
  std::unique_ptr<av::AudioConverter> converter;
  uint32_t audio_rate = 0;  // the track's, before conversion
  uint64_t audio_samples = 0;
  // Mixed sound: its converted samples by canvas sample, from `mix_start` on.
  std::vector<float> mixing;
  int64_t mix_start = 0;
};

}  // namespace rdmavideo::media
