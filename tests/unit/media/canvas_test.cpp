// SPDX-License-Identifier: Apache-2.0
// The composite's canvas (codecs: av::Canvas) and its layouts (media: composite_layout):
// frames land where they are placed with their aspect ratio, fills and labels in any format,
// the glyphs the labels and the display share, the built-in and file layouts, and how a
// tile's stream's clock is laid on the canvas's (media: tile_clock).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "guarded.hpp"
#include "process.hpp"
#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/glyphs.hpp"
#include "rdmavideo/media/composite_layout.hpp"
#include "rdmavideo/media/tile_clock.hpp"

namespace rdmavideo {
namespace {

using av::Rect;

TEST(Glyphs, TheMaskHasInkWhereTheGlyphSays) {
  const auto m = glyphs::mask("T1", 2);
  EXPECT_EQ(m.width, 2 * glyphs::kAdvance * 2);
  EXPECT_EQ(m.height, glyphs::kHeight * 2);
  // T: the whole top row, then the middle column.
  for (int x = 0; x < 10; ++x) EXPECT_TRUE(m.at(x, 0)) << x;
  EXPECT_TRUE(m.at(4, 6));
  EXPECT_FALSE(m.at(0, 6));
  EXPECT_FALSE(m.at(10, 0)) << "the space between glyphs";
  const auto blank = glyphs::mask("~", 1);  // no glyph: a space
  EXPECT_TRUE(std::none_of(blank.ink.begin(), blank.ink.end(), [](uint8_t v) { return v != 0; }));
}

TEST(CanvasFit, KeepsTheAspectRatioCentredOnEvenPixels) {
  EXPECT_EQ(av::fit({0, 0, 640, 360}, 1920, 1080), (Rect{0, 0, 640, 360}));
  EXPECT_EQ(av::fit({0, 0, 640, 360}, 720, 720), (Rect{140, 0, 360, 360}));        // pillarboxed
  EXPECT_EQ(av::fit({100, 50, 400, 400}, 1600, 900), (Rect{100, 138, 400, 224}));  // letterboxed
  EXPECT_EQ(av::fit({0, 0, 320, 180}, 0, 0), (Rect{0, 0, 320, 180}));
}

#if RDMAVIDEO_TEST_WITH_FFMPEG
// A solid frame of `format` and `rgb` made by a canvas of the frame's own size.
std::vector<std::byte> solid(PixelFormat format, uint32_t w, uint32_t h, av::Rgb rgb,
                             proto::StreamStart& out) {
  auto c = av::Canvas::create(format, w, h, {30, 1});
  EXPECT_TRUE(c) << c.error().message();
  EXPECT_TRUE((*c)->fill({0, 0, static_cast<int>(w), static_cast<int>(h)}, rgb));
  out = (*c)->format();
  return {(*c)->frame().begin(), (*c)->frame().end()};
}

// RGBA at (x, y) of an rgba canvas.
std::array<int, 3> rgba_at(const av::Canvas& c, int x, int y) {
  const auto* p =
      reinterpret_cast<const uint8_t*>(c.frame().data()) + (y * c.format().width + x) * 4;
  return {p[0], p[1], p[2]};
}

bool near(std::array<int, 3> got, std::array<int, 3> want) {
  return std::abs(got[0] - want[0]) + std::abs(got[1] - want[1]) + std::abs(got[2] - want[2]) <= 24;
}

TEST(Canvas, AFramePlacedKeepsItsAspectAndTheBarsAreBlack) {
  auto canvas = av::Canvas::create(PixelFormat::rgba, 640, 360, {30, 1});
  ASSERT_TRUE(canvas) << canvas.error().message();
  ASSERT_TRUE((*canvas)->fill({0, 0, 640, 360}, {0, 0, 255}));
  // A square red nv12 frame into the left half: pillarboxed, black beside it.
  proto::StreamStart f;
  const auto red = solid(PixelFormat::nv12, 180, 180, {255, 0, 0}, f);
  auto placed = (*canvas)->place(f, red, {0, 0, 320, 360});
  ASSERT_TRUE(placed) << placed.error().message();
  EXPECT_EQ(*placed, (Rect{0, 20, 320, 320}));
  EXPECT_TRUE(near(rgba_at(**canvas, 160, 180), {255, 0, 0}));
  EXPECT_TRUE(near(rgba_at(**canvas, 160, 4), {0, 0, 0})) << "the bar above";
  EXPECT_TRUE(near(rgba_at(**canvas, 480, 180), {0, 0, 255})) << "outside the area, untouched";
}

TEST(Canvas, EveryCarriedFormatButV210IsACanvas) {
  for (PixelFormat p : {PixelFormat::nv12, PixelFormat::i420, PixelFormat::p010, PixelFormat::uyvy,
                        PixelFormat::yuy2, PixelFormat::rgba, PixelFormat::bgra, PixelFormat::rgb24,
                        PixelFormat::yuv422p10, PixelFormat::yuv444p}) {
    auto c = av::Canvas::create(p, 64, 36, {30, 1});
    ASSERT_TRUE(c) << name(p) << ": " << c.error().message();
    // A green square into the middle, read back through an rgba canvas.
    proto::StreamStart f;
    const auto green = solid(PixelFormat::rgba, 16, 16, {0, 255, 0}, f);
    ASSERT_TRUE((*c)->place(f, green, {24, 10, 16, 16})) << name(p);
    auto back = av::Canvas::create(PixelFormat::rgba, 64, 36, {30, 1});
    ASSERT_TRUE((*back)->place((*c)->format(), (*c)->frame(), {0, 0, 64, 36}));
    EXPECT_TRUE(near(rgba_at(**back, 32, 18), {0, 255, 0})) << name(p);
    EXPECT_TRUE(near(rgba_at(**back, 4, 4), {0, 0, 0})) << name(p);
  }
  auto v210 = av::Canvas::create(PixelFormat::v210, 64, 36, {30, 1});
  ASSERT_FALSE(v210);
  EXPECT_EQ(v210.error().code(), ErrorCode::unsupported);
  auto odd = av::Canvas::create(PixelFormat::nv12, 65, 36, {30, 1});
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message().find("must be even"), std::string::npos);
}

TEST(Canvas, ALabelIsWhiteInkOnADarkBandClippedToTheCanvas) {
  auto canvas = av::Canvas::create(PixelFormat::rgba, 200, 100, {30, 1});
  ASSERT_TRUE(canvas);
  ASSERT_TRUE((*canvas)->fill({0, 0, 200, 100}, {255, 0, 0}));
  auto band = (*canvas)->label(10, 20, "T", 2);
  ASSERT_TRUE(band) << band.error().message();
  EXPECT_EQ(band->x, 10);
  EXPECT_EQ(band->y, 20);
  // The T's top bar starts `pad` (2 font pixels) inside the band.
  EXPECT_TRUE(near(rgba_at(**canvas, 10 + 4, 20 + 4), {255, 255, 255}));
  EXPECT_TRUE(near(rgba_at(**canvas, 10 + 1, 20 + 1), {24, 24, 24})) << "the band";
  EXPECT_TRUE(near(rgba_at(**canvas, 100, 80), {255, 0, 0})) << "outside it";
  auto clipped = (*canvas)->label(190, 90, "LONG TEXT", 3);
  ASSERT_TRUE(clipped);
  EXPECT_EQ(clipped->x + clipped->width, 200);
  EXPECT_EQ(clipped->y + clipped->height, 100);
}
// A frame in the canvas's own format at the size of its rectangle is copied, chroma and all
// (libswscale's unscaled NV12 to NV12 and P010 to P010 of FFmpeg 5.1 write no chroma at all:
// an orange tile came out green), into the rectangle only. (Pure green is no test of it: Y alone,
// chroma 0, clips to pure green.)
TEST(Canvas, AFrameOfTheCanvasFormatAndSizeKeepsItsColour) {
  for (PixelFormat p : {PixelFormat::nv12, PixelFormat::i420, PixelFormat::uyvy, PixelFormat::p010,
                        PixelFormat::yuv422p10, PixelFormat::rgba}) {
    auto c = av::Canvas::create(p, 640, 360, {30, 1});
    ASSERT_TRUE(c);
    proto::StreamStart f;
    const auto orange = solid(p, 320, 180, {220, 120, 40}, f);
    f.colour = {};  // as most senders' frames say nothing of it
    auto placed = (*c)->place(f, orange, {320, 0, 320, 360});
    ASSERT_TRUE(placed);
    EXPECT_EQ(*placed, (Rect{320, 90, 320, 180}));
    auto back = av::Canvas::create(PixelFormat::rgba, 640, 360, {30, 1});
    ASSERT_TRUE((*back)->place((*c)->format(), (*c)->frame(), {0, 0, 640, 360}));
    EXPECT_TRUE(near(rgba_at(**back, 480, 180), {220, 120, 40})) << name(p);
    EXPECT_TRUE(near(rgba_at(**back, 480, 40), {0, 0, 0})) << name(p) << " the bar above it";
    EXPECT_TRUE(near(rgba_at(**back, 300, 180), {0, 0, 0})) << name(p) << " beside it";
  }
}

// libswscale writes whole vectors past the end of each row it scales: not one byte of that
// may land beside the rectangle (a tile's row ends where the next tile's begins).
TEST(Canvas, NothingIsWrittenBesideTheRectangle) {
  for (PixelFormat p :
       {PixelFormat::nv12, PixelFormat::uyvy, PixelFormat::yuv422p10, PixelFormat::rgba}) {
    auto c = av::Canvas::create(p, 320, 180, {30, 1});
    ASSERT_TRUE(c);
    ASSERT_TRUE((*c)->fill({0, 0, 320, 180}, {255, 0, 0}));
    ASSERT_TRUE((*c)->fill({10, 10, 22, 10}, {0, 0, 255}));
    auto band = (*c)->label(10, 40, "ab", 1);
    ASSERT_TRUE(band);
    proto::StreamStart f;
    const auto green = solid(PixelFormat::nv12, 30, 30, {0, 255, 0}, f);
    ASSERT_TRUE((*c)->place(f, green, {10, 80, 30, 30}));
    auto back = av::Canvas::create(PixelFormat::rgba, 320, 180, {30, 1});
    ASSERT_TRUE((*back)->place((*c)->format(), (*c)->frame(), {0, 0, 320, 180}));
    EXPECT_TRUE(near(rgba_at(**back, 20, 14), {0, 0, 255})) << name(p);
    for (int x : {34, 40, 60}) {
      EXPECT_TRUE(near(rgba_at(**back, x, 14), {255, 0, 0}))
          << name(p) << " beside the fill, x " << x;
      EXPECT_TRUE(near(rgba_at(**back, band->x + band->width + x - 32, 44), {255, 0, 0}))
          << name(p) << " beside the label";
      EXPECT_TRUE(near(rgba_at(**back, x + 8, 94), {255, 0, 0}))
          << name(p) << " beside the picture, x " << x + 8;
    }
  }
}

// libswscale reads its input in whole vectors, past a row's end. A frame that ends where its
// memory does (an rgb24 1280x720 frame is 675 pages: in a ring's last slot it ends at the
// mapping's end) made the receiver fault; nv12 and uyvy of odd sizes did too. Every carried
// format, placed and fitted from memory whose next byte cannot be read, into tiles wide and
// a few pixels wide.
TEST(Canvas, NothingIsReadPastAFramesEnd) {
  auto canvas = av::Canvas::create(PixelFormat::nv12, 640, 360, {30, 1});
  ASSERT_TRUE(canvas);
  auto fitter = (*canvas)->fitter();
  const std::pair<uint32_t, uint32_t> sizes[] = {
      {1280, 720}, {30, 17}, {16, 9}, {233, 285}, {640, 480}};
  const Rect areas[] = {{0, 0, 320, 180}, {100, 0, 2, 34}, {200, 10, 4, 300}};
  for (PixelFormat p : {PixelFormat::nv12, PixelFormat::i420, PixelFormat::p010, PixelFormat::uyvy,
                        PixelFormat::yuy2, PixelFormat::rgba, PixelFormat::bgra, PixelFormat::rgb24,
                        PixelFormat::yuv422p10, PixelFormat::yuv444p, PixelFormat::yuv444p10,
                        PixelFormat::yuv444p12}) {
    for (auto [w, h] : sizes) {
      auto format = proto::make_stream_start(p, w, h, {30, 1});
      if (!format) continue;  // 4:2:0 of odd width
      testing::Guarded frame(format->layout.frame_bytes);
      for (const Rect& area : areas) {
        SCOPED_TRACE(fmt::format("{} {}x{} into {}x{}", name(p), w, h, area.width, area.height));
        ASSERT_TRUE((*canvas)->place(*format, frame.bytes(), area));
        auto fitted = (*canvas)->fitted(*format, area);
        ASSERT_TRUE(fitted);
        std::vector<std::byte> held(fitted->layout.frame_bytes);
        ASSERT_TRUE(fitter->fit(*format, frame.bytes(), *fitted, held));
      }
    }
  }
}

// A frame fitted on another thread (Canvas::Fitter, a tile's connection thread) and then
// placed is the same picture, byte for byte, as the frame placed as it came: the canvas's
// thread only copies it. A gradient, so that any other scaling or chroma siting shows.
TEST(Canvas, AFrameFittedElsewhereThenPlacedIsTheSameAsPlacedAsItCame) {
  for (PixelFormat canvas_format :
       {PixelFormat::nv12, PixelFormat::uyvy, PixelFormat::yuv422p10, PixelFormat::rgba}) {
    for (PixelFormat frame_format :
         {PixelFormat::rgba, PixelFormat::nv12, PixelFormat::yuv444p10}) {
      proto::StreamStart f;
      auto source = av::Canvas::create(frame_format, 800, 600, {30, 1});
      ASSERT_TRUE(source);
      for (int band = 0; band < 20; ++band) {
        const auto v = static_cast<uint8_t>(band * 12);
        ASSERT_TRUE(
            (*source)->fill({band * 40, 0, 40, 600}, {v, static_cast<uint8_t>(255 - v), 90}));
      }
      f = (*source)->format();
      const auto frame = (*source)->frame();
      const Rect area{100, 20, 300, 300};
      auto direct = av::Canvas::create(canvas_format, 640, 360, {30, 1});
      auto via = av::Canvas::create(canvas_format, 640, 360, {30, 1});
      ASSERT_TRUE(direct && via);
      auto placed = (*direct)->place(f, frame, area);
      ASSERT_TRUE(placed);
      auto fitted = (*via)->fitted(f, area);
      ASSERT_TRUE(fitted) << fitted.error().message();
      EXPECT_EQ(fitted->pixel_format, canvas_format);
      EXPECT_EQ(static_cast<int>(fitted->width), placed->width);
      EXPECT_EQ(static_cast<int>(fitted->height), placed->height);
      std::vector<std::byte> held(fitted->layout.frame_bytes);
      auto fitter = (*via)->fitter();
      ASSERT_TRUE(fitter->fit(f, frame, *fitted, held))
          << name(canvas_format) << " from " << name(frame_format);
      auto again = (*via)->place(*fitted, held, area);
      ASSERT_TRUE(again);
      EXPECT_EQ(*again, *placed);
      EXPECT_TRUE(
          std::equal((*via)->frame().begin(), (*via)->frame().end(), (*direct)->frame().begin()))
          << name(canvas_format) << " from " << name(frame_format);
    }
  }
  // What the fitter cannot write into, or read, is named.
  auto c = av::Canvas::create(PixelFormat::nv12, 640, 360, {30, 1});
  proto::StreamStart f;
  const auto green = solid(PixelFormat::nv12, 64, 36, {0, 255, 0}, f);
  auto fitted = (*c)->fitted(f, {0, 0, 320, 180});
  ASSERT_TRUE(fitted);
  std::vector<std::byte> small(16);
  auto refused = (*c)->fitter()->fit(f, green, *fitted, small);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("fitted nv12 picture of 16 bytes"), std::string::npos)
      << refused.error().message();
  EXPECT_FALSE((*c)->fitted(f, {700, 400, 10, 10})) << "an area outside the canvas";
}
#endif

using media::CompositeKind;
using media::CompositeLayout;

TEST(CompositeLayout, GridRowAndPip) {
  auto grid = CompositeLayout::make(CompositeKind::grid, 4, 1280, 720);
  ASSERT_EQ(grid.tiles.size(), 4u);
  EXPECT_EQ(grid.tiles[0].rect, (Rect{0, 0, 640, 360}));
  EXPECT_EQ(grid.tiles[3].rect, (Rect{640, 360, 640, 360}));
  auto three = CompositeLayout::make(CompositeKind::grid, 3, 1280, 720);
  EXPECT_EQ(three.tiles[2].rect, (Rect{0, 360, 640, 360})) << "2x2, the last cell empty";
  auto nine = CompositeLayout::make(CompositeKind::grid, 9, 1920, 1080);
  EXPECT_EQ(nine.tiles[4].rect, (Rect{640, 360, 640, 360}));
  auto row = CompositeLayout::make(CompositeKind::row, 3, 1920, 1080);
  EXPECT_EQ(row.tiles[1].rect, (Rect{640, 0, 640, 1080}));
  auto pip = CompositeLayout::make(CompositeKind::pip, 3, 1280, 720);
  EXPECT_EQ(pip.tiles[0].rect, (Rect{0, 0, 1280, 720}));
  EXPECT_EQ(pip.tiles[1].rect.width, 320);
  EXPECT_EQ(pip.tiles[1].rect.x + pip.tiles[1].rect.width, 1280 - 22);
  EXPECT_LT(pip.tiles[2].rect.x + pip.tiles[2].rect.width, pip.tiles[1].rect.x);
  EXPECT_EQ(pip.tiles[1].rect.y + pip.tiles[1].rect.height, 720 - 22);
}

TEST(CompositeLayout, AStreamTakesItsNamedTileThenItsNumberThenAnyFreeOne) {
  CompositeLayout l;
  l.tiles = {{{0, 0, 2, 2}, "", std::nullopt},
             {{2, 0, 2, 2}, "cam2", std::nullopt},
             {{4, 0, 2, 2}, "", 3}};
  const std::vector<bool> none(3, false);
  EXPECT_EQ(l.place("cam2", 1, none), 1u);
  EXPECT_EQ(l.place("other", 3, none), 2u);
  EXPECT_EQ(l.place("other", 1, none), 0u);
  EXPECT_EQ(l.place("other", 1, {true, false, false}), std::nullopt)
      << "tile 2 is cam2's, tile 3 stream 3's";
  EXPECT_EQ(l.place("cam2", 1, {false, true, false}), 0u) << "its tile taken: any free one";
}

TEST(CompositeLayout, AFileIsReadAndItsErrorsNameTheTileAndField) {
  testing::TempDir dir;
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "l.toml") << text;
    return CompositeLayout::load(dir / "l.toml", 1280, 720);
  };
  auto ok = write(
      "[[tile]]\nname = \"a\"\nx = 0\ny = 0\nwidth = 640\nheight = 720\n"
      "[[tile]]\nstream = 2\nx = 640\ny = 0\nwidth = 640\nheight = 360\n");
  ASSERT_TRUE(ok) << ok.error().message();
  ASSERT_EQ(ok->tiles.size(), 2u);
  EXPECT_EQ(ok->tiles[0].name, "a");
  EXPECT_EQ(ok->tiles[1].stream, 2u);
  EXPECT_EQ(ok->tiles[1].rect, (Rect{640, 0, 640, 360}));
  auto message = [&](const std::string& text) {
    auto r = write(text);
    return r ? std::string("loaded") : r.error().message();
  };
  EXPECT_NE(message("").find("no [[tile]] tables"), std::string::npos);
  EXPECT_NE(message("[[tile]]\nx = 0\ny = 0\nwidth = 10\n").find("tile 1: height is missing"),
            std::string::npos);
  EXPECT_NE(message("[[tile]]\nx = 700\ny = 0\nwidth = 640\nheight = 10\n")
                .find("tile 1: width 640 is outside 2..580"),
            std::string::npos);
  EXPECT_NE(message("[[tile]]\nx = 0\ny = 0\nwidth = 10\nheight = 10\ncolour = 1\n")
                .find("unknown field \"colour\""),
            std::string::npos);
  EXPECT_NE(message("[[tile]]\nx = \"left\"\n").find("tile 1: x must be an integer"),
            std::string::npos);
  EXPECT_NE(message("[[tile\n").find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace rdmavideo

// ---- A tile's stream's clock on the canvas's (media: tile_clock).
namespace rdmavideo::media {
namespace {

constexpr int64_t kPeriod = 33'333'333;  // a 30 fps canvas
constexpr uint32_t kRate = 48000;

// A sender whose clock runs fast (`rate` 1.001: 0.1%, its second is 0.999 of ours) or slow.
// Frames every 1/30 s and packets of 1024 samples by its clock arrive at its times divided by
// `rate`, 10 ms late and up to 5 ms more.
struct DriftingSender {
  double rate = 1.001;
  std::mt19937 random{7};
  int64_t arrival(int64_t pts_ns) {
    std::uniform_int_distribution<int64_t> jitter(0, 5'000'000);
    return static_cast<int64_t>(static_cast<double>(pts_ns) / rate) + 10'000'000 + jitter(random);
  }
};

// The mean of canvas time less arrival over the last 100 of a minute of frames.
double frames_for_a_minute(TileClock& tile, DriftingSender& sender) {
  double error_ms = 0;
  for (int n = 0; n < 1800; ++n) {
    const int64_t pts = n * kPeriod;
    const int64_t arrival = sender.arrival(pts);
    const int64_t canvas = tile.frame(pts, arrival);
    if (n >= 1700) error_ms += static_cast<double>(canvas - arrival) / 1e6 / 100;
  }
  return error_ms;
}

TEST(TileClock, FramesFollowASenderWhoseClockDriftsAndTieAgainWhereItsPtsJump) {
  // Tied once, frames would be 60 ms from their arrivals a minute on (0.1% of a minute). The
  // offset follows the quickest arrivals: the jitter's mean (2.5 ms) is left in, and a slow
  // clock is followed a few milliseconds behind.
  DriftingSender slow{1 / 1.001};
  TileClock slow_tile(kPeriod, kRate);
  EXPECT_NEAR(frames_for_a_minute(slow_tile, slow), -2.5 - 8.5, 4.0);
  TileClock tile(kPeriod, kRate);
  DriftingSender sender;
  EXPECT_NEAR(frames_for_a_minute(tile, sender), -2.5, 2.0);
  // Its pts jump ten seconds ahead: tied again at once.
  const int64_t pts = 1800 * kPeriod + 10'000'000'000;
  EXPECT_EQ(tile.frame(pts, 61'000'000'000), 61'000'000'000);
}

TEST(TileClock, FramesHeldUpOnTheWayMoveNothingButPtsThatWentBackTieAgain) {
  TileClock tile(kPeriod, kRate);
  for (int n = 0; n < 30; ++n) tile.frame(n * kPeriod, n * kPeriod + 1'000'000);
  // Three frames held up 100 ms, arriving in a burst: their times stay their own.
  for (int n = 30; n < 33; ++n) {
    EXPECT_EQ(tile.frame(n * kPeriod, 33 * kPeriod + 100'000'000), n * kPeriod + 1'000'000) << n;
  }
  EXPECT_EQ(tile.offset_ns(), 1'000'000);
  // The sender's pts go back a second: its frames are late by its clock, 30 in a row,
  // and the 30th ties the offset again.
  int64_t canvas = 0;
  for (int n = 0; n < 30; ++n) canvas = tile.frame(n * kPeriod, (40 + n) * kPeriod + 1'000'000);
  EXPECT_EQ(canvas, 69 * kPeriod + 1'000'000);
  EXPECT_EQ(tile.offset_ns(), 40 * kPeriod + 1'000'000);
}

// The sound of the same sender: laid one packet after another, resampled 0.1% faster toward
// where it belongs, within a few milliseconds of it a minute on, never placed again.
TEST(TileClock, SoundFollowsOnAndIsResampledTowardWhereItBelongs) {
  TileClock tile(kPeriod, kRate);
  DriftingSender sender;
  constexpr int64_t kPacket = 1024;
  const int64_t packet_ns = kPacket * 1'000'000'000 / kRate;
  int64_t next_frame = 0, made = 0, first = 0;
  for (int k = 0; k < 60 * kRate / kPacket; ++k) {
    const int64_t pts = k * packet_ns;
    for (; next_frame * kPeriod <= pts; ++next_frame)
      tile.frame(next_frame * kPeriod, sender.arrival(next_frame * kPeriod));
    const auto place = tile.audio(pts, kPeriod, kPacket);
    // Placed where it belongs while the offset settles in the first second, then never again.
    ASSERT_TRUE(k == 0 || !place.jumped || made < kRate) << k;
    if (place.jumped) first = place.at - made;
    ASSERT_EQ(place.at, first + made) << "packet " << k << " follows the one before";
    ASSERT_LE(std::abs(place.delta), kPacket / 100 + 1) << "at most 1%";
    tile.placed(place.at, kPacket + place.delta);
    made += kPacket + place.delta;
  }
  EXPECT_EQ(tile.audio_jumps(), 0u);
  EXPECT_NEAR(tile.audio_error_ms(), 0.0, 4.0);
  // 60 s of its clock made into 59.94 s of the canvas's: 0.1% fewer samples.
  EXPECT_NEAR(static_cast<double>(made), 60.0 * kRate / 1.001, 0.0003 * 60 * kRate);
}

TEST(TileClock, SoundThatJumpsIsPlacedWhereItBelongsAndCounted) {
  TileClock tile(kPeriod, kRate);
  tile.frame(0, 0);
  auto place = tile.audio(0, 0, 48000);
  EXPECT_TRUE(place.jumped);
  EXPECT_EQ(place.at, 0);
  tile.placed(place.at, 48000);
  place = tile.audio(1'000'000'000, 0, 1024);  // a second of sound laid: the next follows on
  EXPECT_FALSE(place.jumped);
  EXPECT_EQ(place.at, 48000);
  tile.placed(place.at, 1024);
  place = tile.audio(2'000'000'000, 0, 1024);  // a second later by its pts: a pause
  EXPECT_TRUE(place.jumped);
  EXPECT_EQ(place.at, 96000);
  EXPECT_EQ(tile.audio_jumps(), 1u);
  tile.reset();
  EXPECT_FALSE(tile.tied());
}

}  // namespace
}  // namespace rdmavideo::media
