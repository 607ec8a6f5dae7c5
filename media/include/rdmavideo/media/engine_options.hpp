// SPDX-License-Identifier: Apache-2.0
// What the media engine is asked to do, in its own words: each front end (rdmavideo-recv's
// flags, rdmasrc's properties, an OBS setting) fills these, and adds its own spelling of a
// setting to the errors the layer returns, which name the setting in neutral words ("the
// output", "the canvas's size").
#pragma once

#include <cstdint>
#include <string>

#include "rdmavideo/format.hpp"
#include "rdmavideo/media/composite_layout.hpp"
#include "rdmavideo/memory.hpp"

namespace rdmavideo::media {

/// How the front end spells each setting in what the layer says (errors, warnings): neutral
/// words by default; rdmavideo-recv puts its flags here.
struct SettingNames {
  std::string output = "the output";
  std::string audio_output = "the audio output";
  std::string codec = "the codec";
  std::string encoder = "the encoder";
  std::string monitor = "a monitor";  ///< what would play a stream's sound as it arrives
  std::string canvas_size = "the canvas's size";
  std::string canvas_format = "the canvas's format";
  std::string audio_mix = "the canvas's mixed sound";
};

/// Where a stream's frames and sound go (StreamWriter).
struct WriterOptions {
  /// "" nowhere (frames counted, then let go), "-" raw frames to stdout, a .yuv/.raw file of
  /// raw frames, else a recording (its container from the extension); may be a template
  /// ({name}, {n}, {peer}, {date}, {time}: output_template.hpp).
  std::string output;
  std::string audio_output;  ///< a .wav per audio track beside raw frames; a template
  std::string codec;         ///< a recording's codec; empty: the container's default
  std::string encoder;       ///< a recording's encoder (prores_aw, prores_ks); empty: default
  bool verify = false;       ///< check every frame against the test pattern (Verifier)
  bool monitored = false;    ///< a monitor shows a stream (not said as a way to hear one)
  SettingNames names;
};

/// The composite's canvas and what it carries (Compositor).
struct CompositeOptions {
  uint32_t width = 1920, height = 1080;
  Rational rate{30, 1};
  PixelFormat format = PixelFormat::nv12;
  memory::MemorySpec memory;  ///< where frames are received: a GPU puts the canvas there too
  CompositeKind kind = CompositeKind::grid;
  uint32_t tiles = 1;       ///< a built-in layout's tiles, one a stream
  std::string layout_name;  ///< where `layout` was read from; empty: the built-in one
  CompositeLayout layout;   ///< with `layout_name`: its tiles
  uint32_t audio_tile = 1;  ///< the tile whose first track the canvas carries; 0: none
  bool audio_mix = false;   ///< every tile's first track, mixed, instead
  WriterOptions writer;     ///< where the canvas goes
};

}  // namespace rdmavideo::media
