// SPDX-License-Identifier: Apache-2.0
// A picture made of other pictures: the receiver's composite (rdmavideo-recv --composite).
//
// A Canvas is one frame in a carried format, laid out as a stream's frames are, so it goes to
// the same writers as any stream (raw, recording, display). Frames are scaled into it with
// libswscale, each into a rectangle with its aspect ratio kept; rectangles are filled with a
// colour, and lines of the library's bitmap font (rdmavideo/glyphs.hpp) are drawn onto it as
// labels. Every pixel format knowledge is libswscale's: fills and labels are drawn in BGRA and
// converted into the canvas, so any format it writes is a canvas format (v210, which FFmpeg
// has no pixel format for, is not).
//
// Rectangles are snapped to even coordinates and sizes, so that they start and end on whole
// chroma samples in every 4:2:0 and 4:2:2 format. One thread uses a canvas.
//
// A build without FFmpeg has the same API (src/unavailable.cpp): create() fails with
// `unsupported`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::av {

/// A rectangle of a picture, in pixels.
struct Rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  bool operator==(const Rect&) const = default;
  bool empty() const { return width <= 0 || height <= 0; }
};

/// An sRGB colour.
struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

/// The largest rectangle of `width` x `height`'s aspect ratio inside `area`, centred, on
/// even coordinates (the whole of `area` when either size is 0).
Rect fit(Rect area, uint32_t width, uint32_t height);

/// `r` grown to even corners and clipped to a `width` x `height` canvas.
Rect clip(Rect r, uint32_t width, uint32_t height);

/// What `area` has beside `picture` (inside it): above, below, left, right; some empty.
std::array<Rect, 4> bars(Rect area, Rect picture);

/// What a canvas says of its colour when nothing else is said: RGB full-range sRGB; YUV
/// limited range, BT.709 from 720 lines up, else BT.601.
Colour canvas_colour(PixelFormat format, uint32_t height);

/// A label as gray levels (0 black, 255 white): a line of text in white, on a dark band
/// whose top left is (x, y), `scale` canvas pixels a font pixel, clipped to a `width` x
/// `height` canvas. The band's rectangle and its pixels, row by row.
struct Band {
  Rect rect;
  std::vector<uint8_t> gray;
};
Band label_band(int x, int y, std::string_view text, int scale, uint32_t width, uint32_t height);

/// How the front end spells a canvas's size and format, which the errors about each begin
/// with.
struct CanvasSettingNames {
  std::string_view size = "the canvas's size";
  std::string_view format = "the canvas's format";
};

class Canvas {
 public:
  /// A black canvas of `width` x `height` in `format` at `rate`, whose frames say `colour`
  /// (YUV: limited range, BT.709 from 720 lines up, else BT.601, unless said otherwise).
  /// `unsupported`, naming it, for a format libswscale cannot write; `invalid_argument` for a
  /// size that is odd or out of the protocol's range.
  static Result<std::unique_ptr<Canvas>> create(PixelFormat format, uint32_t width, uint32_t height,
                                                Rational rate, Colour colour = {},
                                                CanvasSettingNames names = {});
  ~Canvas();
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;

  /// The canvas as a stream's frame describes itself: format, size, rate, layout, colour.
  const proto::StreamStart& format() const;
  /// Its bytes, in format()'s layout.
  std::span<const std::byte> frame() const;

  /// `frame` (host memory, laid out as `format` says) scaled into `area` with its aspect ratio
  /// kept; what `area` has beside it is filled black. Returns where the picture went.
  /// `unsupported` naming the format where libswscale cannot read it (v210).
  Result<Rect> place(const proto::StreamStart& format, std::span<const std::byte> frame, Rect area);
  /// `area` (clipped to the canvas) filled with `colour`.
  Result<void> fill(Rect area, Rgb colour);
  /// A line of text in white on a dark band whose top left is (x, y), `scale` canvas pixels a
  /// font pixel, clipped to the canvas. Returns the band's rectangle.
  Result<Rect> label(int x, int y, std::string_view text, int scale);

  /// What a frame of `format` becomes once fitted into `area`: the canvas's pixel format and
  /// colour at the size place() gives its picture there (the rest of `format` kept). Placing a
  /// frame of it into `area` is a copy. `invalid_argument` for an area outside the canvas.
  Result<proto::StreamStart> fitted(const proto::StreamStart& format, Rect area) const;

  /// Scales frames into fitted() formats on a thread of its own (a tile's connection thread),
  /// so that a frame much larger than its tile is scaled at its own stream's cost and the
  /// canvas's thread only copies it. The scaling place() would do, the same bytes. One thread
  /// uses one; it outlives nothing of the canvas's.
  class Fitter {
   public:
    ~Fitter();
    Fitter(const Fitter&) = delete;
    Fitter& operator=(const Fitter&) = delete;
    /// `frame` (host memory, laid out as `format` says) scaled into `into`, laid out as `to`
    /// (fitted()) says. `unsupported` naming the format where libswscale cannot read it.
    Result<void> fit(const proto::StreamStart& format, std::span<const std::byte> frame,
                     const proto::StreamStart& to, std::span<std::byte> into);
    struct Impl;

   private:
    friend class Canvas;
    explicit Fitter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
  };
  /// A fitter for this canvas's format and colour.
  std::unique_ptr<Fitter> fitter() const;

  struct Impl;

 private:
  explicit Canvas(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::av
