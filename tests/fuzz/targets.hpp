// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets run, as plain functions: libFuzzer's entry points (fuzz_*.cpp) call
// them with generated inputs, and fuzz_corpus_test calls them with every file of the seed
// corpus and every crash input kept in tests/fuzz/regressions, under the sanitizers, in every CI
// run. Each aborts (a finding) when an invariant breaks; bad input itself is no finding.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmavideo::fuzz {

/// The message decoder: decode_header() and decode() on any bytes; whatever decodes must
/// encode to bytes that decode to the same encoding (and the sealed form must open).
void decode_one(const uint8_t* data, size_t size);

/// One receiver connection (the receiver core, receiver/connection.cpp) driven by a byte
/// stream as a TCP peer would send it: messages and frame payloads from the input, in
/// order, until it runs out (the peer closes). The first byte picks the configuration (a
/// key, a small memory budget, a frame limit, a sink that holds frames, the front end's check
/// of each StreamStart, a host that sheds the connection once it waits for StreamStart).
/// Returns the frames the sink was given.
uint64_t receive_stream(const uint8_t* data, size_t size);

/// The sinks' sound (media_targets.cpp; built with FFmpeg): a track of any format the
/// protocol carries, its chunks of any size (one sample too) and pts, frames of any pts,
/// through what the canvas and the display do with them (a tile's clock, the drift
/// compensation, the conversion) and through a recording (pts repairs, placement, gaps,
/// jumps, AudioEnd, the end padded). A finding: sound grown beyond what compensation allows,
/// a track grown by more than the longest gap a file keeps per message, a file larger than
/// its tracks and frames. Says how far it went.
struct SoundRun {
  uint64_t converted = 0;  ///< samples the canvas's converter made
  uint64_t frames = 0;     ///< frames recorded
  uint64_t recorded = 0;   ///< samples in the recording's tracks (silence included)
};
SoundRun place_sound(const uint8_t* data, size_t size);

/// The compositor's tile placement: canvases of every drawn format and size, areas anywhere
/// (outside the canvas too), frames of every carried format and size, placed as they came or
/// fitted first on another thread. A finding: a picture outside its area or the canvas, a
/// byte written beside the area.
void place_tiles(const uint8_t* data, size_t size);

/// A received stream's time line (StreamTimeline: what rdmasrc's picture and audio pads are
/// given), live or not, driven by pictures and chunks of any pts, size and arrival, tracks
/// started and ended, time passing: a finding is a picture stamped before the one ahead of
/// it or before 0, a track's sound going back over itself, more silence at once than the
/// bounds allow, or a gap in the pictures overlapping one given before. Returns the
/// operations it ran.
uint64_t place_stream(const uint8_t* data, size_t size);

}  // namespace rdmavideo::fuzz
