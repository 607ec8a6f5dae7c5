// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv --display under Xvfb: screenshots of the window show the test pattern's
// colour bars and grey ramp for every pixel format (native SDL textures and our conversions),
// q in the window stops the receiver cleanly with its recording whole, and f makes the window
// the screen, letterboxed, and back, with a window manager (openbox) and without one.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "process.hpp"
#include "raw_peer.hpp"
#include "rdmavideo/glyphs.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

bool have(const std::string& program) {
  return shell("command -v " + program + " >/dev/null 2>&1") == 0;
}

// Openbox on the virtual screen: on X11 the window manager is what makes a window fullscreen
// (SDL2 asks it with a _NET_WM_STATE_FULLSCREEN message). Ready once it has announced itself
// on the root window (_NET_SUPPORTING_WM_CHECK, EWMH).
class WindowManager {
 public:
  explicit WindowManager(const TempDir& dir)
      : wm_({"openbox", "--sm-disable"}, dir / "openbox.stderr") {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (capture("xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null").find("window id") ==
           std::string::npos) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("openbox did not start: " + wm_.stderr_text());
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  ~WindowManager() {
    wm_.signal(SIGTERM);
    wm_.wait(5s);
  }

 private:
  Process wm_;
};

// The size of X window `id` as the X server has it (xdotool getwindowgeometry).
std::optional<std::pair<int, int>> window_size(const std::string& id) {
  const std::string text = capture("xdotool getwindowgeometry --shell " + id + " 2>/dev/null");
  std::smatch w, h;
  if (!std::regex_search(text, w, std::regex(R"(WIDTH=(\d+))")) ||
      !std::regex_search(text, h, std::regex(R"(HEIGHT=(\d+))"))) {
    return std::nullopt;
  }
  return std::pair{std::stoi(w[1]), std::stoi(h[1])};
}

// Waits up to 5 s for window `id` to become `want` pixels; returns the size it has then.
std::optional<std::pair<int, int>> wait_for_size(const std::string& id, std::pair<int, int> want) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  auto size = window_size(id);
  while (size != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    size = window_size(id);
  }
  return size;
}

std::string to_string(const std::optional<std::pair<int, int>>& size) {
  return size ? fmt::format("{}x{}", size->first, size->second) : "unknown";
}

struct Rgb {
  double r = 0, g = 0, b = 0;
};

// A screenshot as 8-bit RGB, read from the PPM that ImageMagick writes.
struct Image {
  int width = 0, height = 0;
  std::string pixels;

  static std::optional<Image> load_ppm(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    // The header's four fields, each of which may be preceded by "# comment" lines.
    auto field = [&](std::string& value) {
      while (in >> std::ws && in.peek() == '#') in.ignore(1 << 20, '\n');
      return static_cast<bool>(in >> value);
    };
    std::string magic, width, height, maxval;
    if (!field(magic) || !field(width) || !field(height) || !field(maxval) || magic != "P6" ||
        maxval != "255") {
      return std::nullopt;
    }
    Image image;
    image.width = std::stoi(width);
    image.height = std::stoi(height);
    in.get();  // the one whitespace byte before the samples
    image.pixels.resize(size_t(image.width) * image.height * 3);
    if (!in.read(image.pixels.data(), static_cast<std::streamsize>(image.pixels.size()))) {
      return std::nullopt;
    }
    return image;
  }

  // Whether the pixel at (x, y) is white (the overlay's text).
  bool white(int x, int y) const {
    if (x < 0 || y < 0 || x >= width || y >= height) return false;
    const auto* p =
        reinterpret_cast<const unsigned char*>(pixels.data()) + (size_t(y) * width + x) * 3;
    return p[0] > 200 && p[1] > 200 && p[2] > 200;
  }

  // The mean colour of the 5x5 square around (x, y).
  Rgb mean(int x, int y) const {
    Rgb sum;
    int n = 0;
    for (int dy = -2; dy <= 2; ++dy) {
      for (int dx = -2; dx <= 2; ++dx) {
        const int px = std::clamp(x + dx, 0, width - 1), py = std::clamp(y + dy, 0, height - 1);
        const auto* p =
            reinterpret_cast<const unsigned char*>(pixels.data()) + (size_t(py) * width + px) * 3;
        sum.r += p[0], sum.g += p[1], sum.b += p[2];
        ++n;
      }
    }
    return {sum.r / n, sum.g / n, sum.b / n};
  }
};

// Takes a screenshot of window `window_id` (and a PNG of it to look at).
std::optional<Image> screenshot(const TempDir& dir, const std::string& display,
                                const std::string& window_id, const std::string& tag) {
  const auto ppm = dir / (tag + ".ppm");
  const std::string xwd = "xwd -silent -display " + display + " -id " + window_id;
  if (shell(xwd + " | convert xwd:- ppm:" + ppm.string()) != 0) return std::nullopt;
  shell(xwd + " | convert xwd:- png:" + (dir / (tag + ".png")).string());
  return Image::load_ppm(ppm);
}

// Checks the test pattern (tests/../test_pattern.cpp) in a screenshot of the whole window: the
// stream is letterboxed into it, 75% bars over the top two thirds, a grey ramp below. Points
// are chosen away from the status text (top left), the moving box (h/3 to h/2) and edges.
// Returns "" when it matches, else what did not.
std::string check_pattern(const Image& shot, int stream_w, int stream_h, double tolerance = 12) {
  const double scale = std::min(double(shot.width) / stream_w, double(shot.height) / stream_h);
  const double video_w = stream_w * scale, video_h = stream_h * scale;
  const double x0 = (shot.width - video_w) / 2, y0 = (shot.height - video_h) / 2;
  auto at = [&](double fx, double fy) {
    return shot.mean(static_cast<int>(x0 + fx * video_w), static_cast<int>(y0 + fy * video_h));
  };
  std::string problems;
  auto expect = [&](const std::string& what, Rgb got, Rgb want) {
    if (std::abs(got.r - want.r) > tolerance || std::abs(got.g - want.g) > tolerance ||
        std::abs(got.b - want.b) > tolerance) {
      problems += fmt::format("{}: got ({:.0f},{:.0f},{:.0f}) want ({:.0f},{:.0f},{:.0f}); ", what,
                              got.r, got.g, got.b, want.r, want.g, want.b);
    }
  };
  static constexpr Rgb kBars[8] = {{191, 191, 191}, {191, 191, 0}, {0, 191, 191}, {0, 191, 0},
                                   {191, 0, 191},   {191, 0, 0},   {0, 0, 191},   {0, 0, 0}};
  static constexpr const char* kNames[8] = {"white",   "yellow", "cyan", "green",
                                            "magenta", "red",    "blue", "black"};
  for (int i = 0; i < 8; ++i) {
    expect(std::string("bar ") + kNames[i], at((i + 0.5) / 8, 0.25), kBars[i]);
  }
  for (double fx : {0.25, 0.5, 0.75}) {
    const double level = 255.0 * std::floor(fx * video_w / scale) / (stream_w - 1);
    expect(fmt::format("ramp at {:.0f}%", fx * 100), at(fx, 0.85), {level, level, level});
  }
  return problems;
}

struct Displayed {
  std::string window_id;  // "0x200008"
  Image shot;
  std::string problems;  // what check_pattern found in the last screenshot
};

// Waits for the receiver's window to show a frame, then takes screenshots until the pattern
// is there (or the deadline passes; the last screenshot's problems are returned).
std::optional<Displayed> wait_for_pattern(Receiver& recv, const TempDir& dir,
                                          const std::string& display, int w, int h,
                                          const std::string& tag) {
  auto id = recv.process().wait_for_stderr(R"(x11 window (0x[0-9a-f]+))", 10s);
  if (!id) return std::nullopt;
  if (!recv.process().wait_for_stderr(R"(\[display\] showing)", 15s)) return std::nullopt;
  Displayed out{*id, {}, "no screenshot"};
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(300ms);
    auto shot = screenshot(dir, display, *id, tag);
    if (!shot) continue;
    out.shot = std::move(*shot);
    out.problems = check_pattern(out.shot, w, h);
    if (out.problems.empty()) break;
  }
  return out;
}

std::optional<std::pair<uint64_t, uint64_t>> display_counts(const std::string& text) {
  std::smatch m;
  static const std::regex re(R"(display: (\d+) frames shown, (\d+) dropped)");
  if (!std::regex_search(text, m, re)) return std::nullopt;
  return std::pair{std::stoull(m[1]), std::stoull(m[2])};
}

class DisplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Under ASan, LeakSanitizer reports allocations made inside libdbus and inside libraries
    // SDL and X11 load and unload again (stacks ending in an unknown module, which no
    // suppression can name). The receivers started here keep ASan's error checks; only their
    // leak report is off.
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    for (const char* tool : {"Xvfb", "xwd", "convert"}) {
      if (!have(tool))
        GTEST_SKIP() << tool << " not installed (apt-get install xvfb x11-apps imagemagick)";
    }
  }
};

TEST_F(DisplayTest, ShowsTheTestPatternAndQuitsWithTheRecordingWhole) {
  TempDir dir;
  VirtualScreen screen(dir);
  const auto out = dir / "out.yuv";
  Receiver recv(dir, {"--display", "--output", out.string(), "--quiet", "--stats-json",
                      (dir / "recv.json").string()});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--testsrc", "-s",
                "640x360", "--pix-fmt", "uyvy422", "--realtime", "-r", "30"},
               dir / "send.stderr");
  auto shown = wait_for_pattern(recv, dir, screen.name(), 640, 360, "uyvy422");
  ASSERT_TRUE(shown) << recv.process().stderr_text();
  EXPECT_EQ(shown->problems, "") << "screenshot " << shown->shot.width << "x" << shown->shot.height;
  // No window manager: the window is the stream's size, centred.
  EXPECT_EQ(shown->shot.width, 640);
  EXPECT_EQ(shown->shot.height, 360);

  // q in the window stops the receiver as SIGINT would; without xdotool, SIGINT itself.
  if (have("xdotool")) {
    EXPECT_EQ(shell("xdotool key --window " + shown->window_id + " q"), 0);
  } else {
    recv.process().signal(SIGINT);
  }
  ASSERT_EQ(recv.process().wait(15s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(15s), 0) << send.stderr_text();
  const std::string log = recv.process().stderr_text();
  if (have("xdotool")) {
    EXPECT_NE(log.find("[display] quit requested"), std::string::npos) << log;
  }

  const auto frames = read_json(dir / "recv.json")["frames"].get<uint64_t>();
  EXPECT_GT(frames, 0u);
  EXPECT_EQ(std::filesystem::file_size(out), frames * 640 * 360 * 2);  // every frame, whole
  const auto counts = display_counts(log);
  ASSERT_TRUE(counts) << log;
  EXPECT_GT(counts->first, 0u);
  EXPECT_EQ(counts->first + counts->second, frames);  // each frame shown or dropped, once
}

// Display and recording at once: q finalises the .mov, which holds every frame received (the
// display may skip frames; the recording never does).
TEST_F(DisplayTest, QuitFinalisesARecording) {
  if (!RDMAVIDEO_TEST_HAVE_FFMPEG) GTEST_SKIP() << "this build has no FFmpeg recordings";
  for (const char* tool : {"ffprobe", "xdotool"}) {
    if (!have(tool)) GTEST_SKIP() << tool << " not installed";
  }
  TempDir dir;
  VirtualScreen screen(dir);
  const auto out = dir / "out.mov";
  Receiver recv(dir, {"--display", "--output", out.string(), "--quiet", "--stats-json",
                      (dir / "recv.json").string()});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--testsrc", "-s",
                "640x360", "--pix-fmt", "uyvy422", "--realtime", "-r", "30"},
               dir / "send.stderr");
  auto shown = wait_for_pattern(recv, dir, screen.name(), 640, 360, "recording");
  ASSERT_TRUE(shown) << recv.process().stderr_text();
  EXPECT_EQ(shown->problems, "");
  EXPECT_EQ(shell("xdotool key --window " + shown->window_id + " q"), 0);
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(15s), 0) << send.stderr_text();

  const auto frames = read_json(dir / "recv.json")["frames"].get<uint64_t>();
  const auto probe = dir / "probe.txt";
  ASSERT_EQ(shell("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                  "stream=codec_name,width,height,nb_read_frames -of default=nw=1 " +
                  out.string() + " > " + probe.string()),
            0)
      << "ffprobe rejects the recording (not finalised?)";
  const std::string facts = read_file(probe);
  EXPECT_NE(facts.find("codec_name=prores"), std::string::npos) << facts;
  EXPECT_NE(facts.find("width=640"), std::string::npos) << facts;
  EXPECT_NE(facts.find("nb_read_frames=" + std::to_string(frames) + "\n"), std::string::npos)
      << facts << "received " << frames;
  const auto counts = display_counts(recv.process().stderr_text());
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->first + counts->second, frames);
}

// Asserts the mean colour around (x, y) is `want` within 12 per channel; `what` names the spot.
void expect_colour(const Image& shot, int x, int y, Rgb want, const std::string& what) {
  const Rgb got = shot.mean(x, y);
  EXPECT_TRUE(std::abs(got.r - want.r) <= 12 && std::abs(got.g - want.g) <= 12 &&
              std::abs(got.b - want.b) <= 12)
      << what << " at (" << x << "," << y << "): got (" << got.r << "," << got.g << "," << got.b
      << ") want (" << want.r << "," << want.g << "," << want.b << ")";
}

// --display with --composite: the window shows the canvas, each colour in its quadrant with
// its label drawn from the glyph table the overlay uses (read back here for the bottom tiles,
// which the overlay's lines do not reach).
TEST_F(DisplayTest, ACompositeShowsEveryTileWithItsLabel) {
  if (!RDMAVIDEO_TEST_HAVE_FFMPEG) GTEST_SKIP() << "the senders are FFmpeg's lavfi colour sources";
  TempDir dir;
  VirtualScreen screen(dir);
  Receiver recv(dir, {"--display", "--composite", "grid", "--canvas", "640x360@30", "--max-streams",
                      "4", "--quiet"});
  const std::array<std::pair<const char*, const char*>, 4> colours{
      {{"red", "0xFF0000"}, {"green", "0x00FF00"}, {"blue", "0x0000FF"}, {"yellow", "0xFFFF00"}}};
  std::vector<std::unique_ptr<Process>> senders;
  for (const auto& [name, hex] : colours) {
    senders.push_back(std::unique_ptr<Process>(new Process(
        {RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--name", name, "-f", "lavfi",
         "-i", std::string("color=c=") + hex + ":s=320x180:r=30", "--realtime", "--duration", "30"},
        dir / (std::string(name) + ".stderr"))));
    ASSERT_TRUE(recv.process().wait_for_stderr(std::string("\\(\"") + name + "\"\\) in tile", 20s))
        << name;
  }
  auto id = recv.process().wait_for_stderr(R"(x11 window (0x[0-9a-f]+))", 10s);
  ASSERT_TRUE(id) << recv.process().stderr_text();
  const std::array<std::pair<int, int>, 4> centres{
      {{160, 100}, {480, 100}, {160, 280}, {480, 280}}};
  const std::array<Rgb, 4> want{{{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}}};
  std::string problems = "no screenshot";
  std::optional<Image> shot;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline && !problems.empty()) {
    std::this_thread::sleep_for(300ms);
    shot = screenshot(dir, screen.name(), *id, "composite");
    if (!shot) continue;
    problems.clear();
    for (size_t i = 0; i < 4; ++i) {
      const Rgb got = shot->mean(centres[i].first, centres[i].second);
      if (std::abs(got.r - want[i].r) + std::abs(got.g - want[i].g) + std::abs(got.b - want[i].b) >
          40) {
        problems += fmt::format("{} at ({}, {}) is {},{},{}; ", colours[i].first, centres[i].first,
                                centres[i].second, got.r, got.g, got.b);
      }
    }
    // The bottom tiles' labels: glyphs from (4, 184) and (324, 184), 6 pixels apart.
    for (size_t i = 2; i < 4; ++i) {
      const std::string label = colours[i].first;
      for (size_t c = 0; c < label.size(); ++c) {
        const glyphs::Glyph g = glyphs::glyph(label[c]);
        const int x0 = (i == 2 ? 4 : 324) + static_cast<int>(c) * glyphs::kAdvance, y0 = 184;
        for (int row = 0; row < glyphs::kHeight; ++row) {
          for (int col = 0; col < glyphs::kWidth; ++col) {
            if (shot->white(x0 + col, y0 + row) != ((g[row] & (0x10 >> col)) != 0)) {
              problems +=
                  fmt::format("label \"{}\" character {} row {} column {}; ", label, c, row, col);
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(problems, "") << "see composite.png";
  EXPECT_EQ(shot ? shot->width : 0, 640);
  recv.process().signal(SIGINT);
  EXPECT_EQ(recv.process().wait(15s), 0) << recv.process().stderr_text();
}

// The overlay's text read back from a screenshot at 2 screen pixels a font pixel (a window
// 560 to 1799 pixels wide): per character of line `line` (0: the status, 1: the format), one
// 5-bit mask per font row, top first, bit 4 the left column. The layout is draw_text's in
// receiver/display.cpp: bands from (8, 8), 24 pixels high, glyphs 4 pixels in, 12 apart.
std::vector<std::array<uint8_t, 8>> overlay_glyphs(const Image& shot, int line, size_t count) {
  std::vector<std::array<uint8_t, 8>> glyphs(count);
  for (size_t i = 0; i < count; ++i) {
    const int x0 = 12 + static_cast<int>(i) * 12, y0 = 12 + line * 24;
    for (int row = 0; row < 8; ++row) {
      for (int col = 0; col < 5; ++col) {
        if (shot.white(x0 + 2 * col, y0 + 2 * row)) glyphs[i][row] |= 0x10 >> col;
      }
    }
  }
  return glyphs;
}

// Checks the format line "640x480 uyvy422" is drawn with lowercase glyphs: x, u, v and y sit
// below the capitals' top (rows 0-1 empty), y has a descender (row 7) where no capital or
// digit reaches, and the digits start at the top. Returns "" or what is wrong.
std::string check_lowercase_overlay(const Image& shot) {
  const std::string text = "640x480 uyvy422";
  const auto glyphs = overlay_glyphs(shot, 1, text.size());
  std::string problems;
  auto mask = [](const std::array<uint8_t, 8>& g) {
    std::string rows;
    for (uint8_t r : g) rows += fmt::format("{:05b} ", r);
    return rows;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto& g = glyphs[i];
    bool ok = true;
    if (c >= '0' && c <= '9') ok = g[0] != 0 && g[7] == 0;
    if (c == 'x' || c == 'u' || c == 'v') ok = g[0] == 0 && g[1] == 0 && g[2] != 0 && g[7] == 0;
    if (c == 'y') ok = g[0] == 0 && g[1] == 0 && g[2] != 0 && g[7] != 0;
    if (c == ' ') ok = g == std::array<uint8_t, 8>{};
    if (!ok) problems += fmt::format("'{}' (character {}) drawn as {}; ", c, i, mask(g));
  }
  return problems;
}

// f makes the window the screen (1280x720), the 4:3 stream filling its height, pillarboxed in
// black on both sides; f again gives back the 640x480 window. Under a window manager (openbox)
// SDL asks it for fullscreen; on a bare X server the window covers the screen itself.
class DisplayFullscreen : public DisplayTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DisplayFullscreen, FTogglesFullscreenLetterboxedAndBack) {
  const bool with_window_manager = GetParam();
  for (const char* tool : {"xdotool", "xprop"}) {
    if (!have(tool)) GTEST_SKIP() << tool << " not installed (apt-get install xdotool x11-utils)";
  }
  if (with_window_manager && !have("openbox")) GTEST_SKIP() << "openbox not installed";
  TempDir dir;
  VirtualScreen screen(dir);
  std::optional<WindowManager> wm;
  if (with_window_manager) wm.emplace(dir);
  Receiver recv(dir, {"--display", "--quiet"});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--testsrc", "-s",
                "640x480", "--pix-fmt", "uyvy422", "--realtime", "-r", "30"},
               dir / "send.stderr");
  auto shown = wait_for_pattern(recv, dir, screen.name(), 640, 480, "windowed");
  ASSERT_TRUE(shown) << recv.process().stderr_text();
  const std::string id = shown->window_id;
  const std::pair windowed{640, 480};
  ASSERT_EQ(wait_for_size(id, windowed), windowed) << "window before f";
  EXPECT_EQ(shown->problems, "");

  ASSERT_EQ(shell("xdotool key --window " + id + " f"), 0);
  const std::pair full{1280, 720};
  const auto size = wait_for_size(id, full);
  ASSERT_EQ(size, full) << "window after f is " << to_string(size) << ", not the screen\n"
                        << recv.process().stderr_text();
  auto fullscreen = wait_for_pattern(recv, dir, screen.name(), 640, 480, "fullscreen");
  ASSERT_TRUE(fullscreen);
  EXPECT_EQ(fullscreen->shot.width, 1280);
  EXPECT_EQ(fullscreen->shot.height, 720);
  EXPECT_EQ(fullscreen->problems, "");  // the bars and ramp where a 960x720 picture puts them
  // The picture spans x 160..1119: black outside, the white bar and the ramp's light end just
  // inside.
  expect_colour(fullscreen->shot, 155, 180, {0, 0, 0}, "left pillarbox");
  expect_colour(fullscreen->shot, 165, 180, {191, 191, 191}, "white bar's left edge");
  expect_colour(fullscreen->shot, 1124, 612, {0, 0, 0}, "right pillarbox");
  expect_colour(fullscreen->shot, 1115, 612, {253, 253, 253}, "ramp's right end");
  expect_colour(fullscreen->shot, 40, 700, {0, 0, 0}, "bottom left of the screen");
  // The overlay, over the black pillarbox here, in lowercase where the text is.
  EXPECT_EQ(check_lowercase_overlay(fullscreen->shot), "");

  ASSERT_EQ(shell("xdotool key --window " + id + " f"), 0);
  const auto back = wait_for_size(id, windowed);
  ASSERT_EQ(back, windowed) << "window after the second f is " << to_string(back);
  auto again = wait_for_pattern(recv, dir, screen.name(), 640, 480, "windowed_again");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->shot.width, 640);
  EXPECT_EQ(again->problems, "");

  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(15s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(15s), 0) << send.stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_NE(log.find("[display] fullscreen on"), std::string::npos) << log;
  EXPECT_NE(log.find("[display] fullscreen off"), std::string::npos) << log;
  EXPECT_EQ(log.find("no window manager") == std::string::npos, with_window_manager) << log;
  EXPECT_EQ(log.find("warn"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(WindowManager, DisplayFullscreen, ::testing::Values(true, false),
                         [](const auto& param_info) {
                           return param_info.param ? "Openbox" : "None";
                         });

class DisplayEveryFormat : public DisplayTest, public ::testing::WithParamInterface<const char*> {};

// Each texture path: native NV12, IYUV, UYVY, YUY2, RGBA, BGRA, RGB24 and the converted
// p010le (to NV12), yuv422p10le and v210 (to YUY2), and the 4:4:4 formats (to IYUV).
TEST_P(DisplayEveryFormat, ShowsTheBars) {
  const std::string pix_fmt = GetParam();
  TempDir dir;
  VirtualScreen screen(dir);
  Receiver recv(dir, {"--display", "--quiet"});
  Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--testsrc", "-s",
                "640x360", "--pix-fmt", pix_fmt, "--realtime", "-r", "30"},
               dir / "send.stderr");
  auto shown = wait_for_pattern(recv, dir, screen.name(), 640, 360, pix_fmt);
  ASSERT_TRUE(shown) << recv.process().stderr_text();
  EXPECT_EQ(shown->problems, "") << pix_fmt;
  recv.process().signal(SIGINT);
  ASSERT_EQ(recv.process().wait(15s), 0) << recv.process().stderr_text();
  ASSERT_EQ(send.wait(15s), 0) << send.stderr_text();
  const std::string log = recv.process().stderr_text();
  EXPECT_EQ(log.find("warn"), std::string::npos) << log;  // no texture or upload failure
}

INSTANTIATE_TEST_SUITE_P(Formats, DisplayEveryFormat,
                         ::testing::Values("nv12", "yuv420p", "p010le", "uyvy422", "yuyv422",
                                           "rgba", "bgra", "rgb24", "yuv422p10le", "v210",
                                           "yuv444p", "yuv444p10le", "yuv444p12le"));

// ---- Sound: --display plays the stream's first track through SDL, and the picture follows it.
// SDL's disk audio driver stands in for a sound card: it takes the device's buffers at the
// card's pace (a little slower than real time, as a real card may be) and writes them to a
// file, which is then listened to here: the tone's frequency and a beep every second.

// What the disk driver wrote: 48 kHz stereo float, the left channel's beep onsets (a sample
// above 0.2 after half a second below) and the beeps' frequency from their zero crossings.
struct Heard {
  size_t samples = 0;
  std::vector<size_t> beeps;
  double tone_hz = 0;
};

Heard listen(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  const size_t frames = bytes.size() / (2 * sizeof(float));
  std::vector<float> left(frames);
  for (size_t i = 0; i < frames; ++i)
    std::memcpy(&left[i], bytes.data() + i * 2 * sizeof(float), sizeof(float));
  Heard heard{frames, {}, 0};
  constexpr size_t kQuiet = 24000;
  size_t since_loud = 0;  // a file that begins loud begins mid-beep: not an onset
  for (size_t i = 0; i < frames; ++i) {
    if (std::abs(left[i]) > 0.2f) {
      if (since_loud >= kQuiet) heard.beeps.push_back(i);
      since_loud = 0;
    } else {
      ++since_loud;
    }
  }
  size_t crossings = 0, counted = 0;
  for (size_t onset : heard.beeps) {
    const size_t a = onset + 240, b = onset + 4080;  // 5 to 85 ms into the 100 ms beep
    if (b >= frames) continue;
    for (size_t j = a; j < b; ++j) crossings += (left[j] < 0) != (left[j + 1] < 0);
    counted += b - a;
  }
  heard.tone_hz = counted ? crossings / 2.0 / (counted / 48000.0) : 0;
  return heard;
}

class DisplaySound : public DisplayTest {
 protected:
  void SetUp() override {
    DisplayTest::SetUp();
    if (IsSkipped()) return;
    sound_ = dir_ / "sound.f32";
    setenv("SDL_AUDIODRIVER", "disk", 1);
    setenv("SDL_DISKAUDIOFILE", sound_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SDL_AUDIODRIVER");
    unsetenv("SDL_DISKAUDIOFILE");
  }

  // Sends the test pattern with its tone at 60 fps for `seconds` (the sender's clock
  // `readrate` times real time) into a receiver with a window; returns its summary's
  // "display" object.
  nlohmann::json run(double seconds, const std::string& readrate,
                     std::vector<std::string> recv_extra = {}) {
    VirtualScreen screen(dir_);
    std::vector<std::string> args{"--display", "--quiet", "--stats-json",
                                  (dir_ / "recv.json").string()};
    args.insert(args.end(), recv_extra.begin(), recv_extra.end());
    Receiver recv(dir_, args);
    Process send({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--quiet", "--testsrc", "--tone",
                  "1000", "-s", "640x360", "--pix-fmt", "uyvy422", "--realtime", "--readrate",
                  readrate, "-r", "60", "--duration", fmt::format("{}", seconds)},
                 dir_ / "send.stderr");
    const auto limit = std::chrono::seconds(static_cast<int>(seconds) + 30);
    EXPECT_EQ(send.wait(limit), 0) << send.stderr_text();
    EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
    log_ = recv.process().stderr_text();
    auto display = read_json(dir_ / "recv.json")["display"];
    std::cout << "display: " << display.dump() << "\n";  // the numbers, for the log of a soak
    return display;
  }

  TempDir dir_;
  std::filesystem::path sound_;
  std::string log_;
};

TEST_F(DisplaySound, PlaysTheToneAndThePictureFollowsIt) {
  const auto display = run(8, "1");
  ASSERT_TRUE(display.contains("audio")) << log_;
  const auto& audio = display["audio"];
  EXPECT_NE(log_.find("[display] playing audio track \"tone 1000 Hz\""), std::string::npos) << log_;
  // The picture went by the sound: nearly every frame shown was shown on its clock, within
  // one frame period (16.7 ms at 60 fps) of it.
  const auto shown = display["shown"].get<uint64_t>();
  EXPECT_GT(shown, 400u) << audio;
  EXPECT_GE(audio["paced"].get<uint64_t>(), shown * 95 / 100) << audio;
  EXPECT_LT(audio["offset_p99_ms"].get<double>(), 1000.0 / 60) << audio;
  EXPECT_EQ(audio["restarts"].get<uint64_t>(), 0u) << audio;
  // The queue is kept near its target (100 ms and SDL's buffer) by stretching the sound by
  // up to 2%. SDL's disk driver sleeps a buffer's time between buffers and, on a loaded
  // machine, oversleeps: where it ran more than 2% slow the compensation is at its limit (the
  // sound played as fast as it may) and the queue grows past the target; it is then dropped
  // back to it before it is 500 ms deeper.
  const double correction = audio["correction_ppm"].get<double>();
  const bool device_too_slow = correction <= -19'999;
  EXPECT_LT(audio["latency_ms"].get<double>(), device_too_slow ? 650.0 : 250.0) << audio;

  // What the device played: the 1 kHz tone, a beep every second of the sender's clock. The
  // receiver may stretch the sound by at most 2% to follow the sender, so beeps are 48000
  // samples apart within that.
  const Heard heard = listen(sound_);
  EXPECT_GT(heard.samples, 48000u * 6) << "the device played " << heard.samples << " samples";
  ASSERT_GE(heard.beeps.size(), 6u) << heard.samples << " samples";
  EXPECT_NEAR(heard.tone_hz, 1000, 25);
  for (size_t i = 1; i < heard.beeps.size(); ++i) {
    EXPECT_NEAR(double(heard.beeps[i] - heard.beeps[i - 1]), 48000, 48000 * 0.021) << "beep " << i;
  }
}

// --audio-delay: the picture is shown that much ahead of what is heard (the sound later).
TEST_F(DisplaySound, AudioDelayMovesThePicture) {
  const auto display = run(4, "1", {"--audio-delay", "200"});
  ASSERT_TRUE(display.contains("audio")) << log_;
  const auto& audio = display["audio"];
  EXPECT_NE(log_.find("sound 200 ms later"), std::string::npos) << log_;
  EXPECT_LT(audio["offset_p99_ms"].get<double>(), 1000.0 / 60) << audio;
  // The sound waits the delay in its queue (100 ms and a 20 ms buffer without it), so the
  // picture, shown 200 ms ahead of what is heard, is never shown before it arrived.
  EXPECT_GT(audio["latency_ms"].get<double>(), 280.0) << audio;
  EXPECT_GE(audio["paced"].get<uint64_t>(), display["shown"].get<uint64_t>() * 95 / 100) << audio;
}

// Sound in one-sample chunks (legal: the smallest the protocol takes) is played, on SDL's
// disk driver and on its dummy driver. The drift compensation divided by zero there (SIGFPE);
// and SDL 2.26, allowed to change the buffer's size, hands its callback 1,024 samples where
// it allocated the 960 asked for (its dummy driver; SDL itself wrote past them): the player
// asks for a power of two and lets SDL keep the size it asked.
class DisplayTinyChunks : public DisplayTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(DisplayTinyChunks, OneSampleChunksArePlayed) {
  TempDir dir;
  const auto sound = dir / "sound.f32";
  setenv("SDL_AUDIODRIVER", GetParam().c_str(), 1);
  setenv("SDL_DISKAUDIOFILE", sound.c_str(), 1);
  VirtualScreen screen(dir);
  Receiver recv(dir, {"--display", "--quiet", "--stats-json", (dir / "recv.json").string()});
  unsetenv("SDL_AUDIODRIVER");
  unsetenv("SDL_DISKAUDIOFILE");
  {
    MediaPeer peer(recv.port());
    peer.start_audio(MediaPeer::stereo_s16(2));
    peer.play(2, 3.0, 1);
    peer.end();
    EXPECT_FALSE(peer.raw().error_before_close());
  }
  ASSERT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  const auto display = read_json(dir / "recv.json")["display"];
  ASSERT_TRUE(display.contains("audio")) << recv.process().stderr_text();
  EXPECT_GE(display["audio"]["chunks"].get<uint64_t>(), 3u * 48000 * 9 / 10) << display.dump();
  if (GetParam() != "disk") return;
  // What the device played: the 1 kHz tone, at least a second of it. Where the receiver
  // could not keep up with 48,000 messages a second (a sanitizer build), the queue ran dry
  // and the player put silence in: the tone's pitch is measured where it sounds.
  const std::string bytes = read_file(sound);
  const size_t frames = bytes.size() / (2 * sizeof(float));
  size_t crossings = 0, silent = 0, zeros = 0;
  float peak = 0, last = 0;
  for (size_t i = 0; i < frames; ++i) {
    float v = 0;
    std::memcpy(&v, bytes.data() + i * 2 * sizeof(float), sizeof v);
    // Silence is a run of a millisecond or more of zeros (the tone passes zero now and then).
    zeros = v == 0.0f ? zeros + 1 : 0;
    if (zeros == 48) silent += 48;
    if (zeros > 48) ++silent;
    if (zeros > 0) continue;
    crossings += (v < 0) != (last < 0);
    peak = std::max(peak, std::abs(v));
    last = v;
  }
  const size_t sounding = frames - silent;
  ASSERT_GT(sounding, 48000u) << "the device played " << frames << " samples, " << sounding
                              << " of them sound";
  EXPECT_NEAR(crossings / 2.0 / (static_cast<double>(sounding) / 48000), 1000, 25);
  EXPECT_GT(peak, 0.3f);
}

INSTANTIATE_TEST_SUITE_P(SdlDrivers, DisplayTinyChunks, ::testing::Values("disk", "dummy"));

// Soak (label soak, not in the default run): a sender whose clock runs 0.1% fast for ten
// minutes. Without following it the queue would grow by 0.6 s and the sound lag the picture
// by as much; the receiver stretches the sound instead, so latency stays near its target and
// the picture stays within a frame of the sound to the end.
TEST_F(DisplaySound, DISABLED_SenderClockFastByOnePerMilleForTenMinutes) {
  const auto display = run(600, "1.001");
  ASSERT_TRUE(display.contains("audio")) << log_;
  const auto& audio = display["audio"];
  EXPECT_LT(audio["offset_p99_ms"].get<double>(), 1000.0 / 60) << audio;
  EXPECT_LT(audio["latency_ms"].get<double>(), 250.0) << audio;
  EXPECT_EQ(audio["dropped_ms"].get<uint64_t>(), 0u) << audio;
  EXPECT_EQ(audio["restarts"].get<uint64_t>(), 0u) << audio;
  const Heard heard = listen(sound_);
  EXPECT_GE(heard.beeps.size(), 590u);
}

}  // namespace
}  // namespace rdmavideo::testing
