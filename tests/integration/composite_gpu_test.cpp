// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv --composite --memory cuda: the canvas in GPU memory, drawn by the library's
// kernels. Senders of solid colours, each in another pixel format (so the kernels read each
// layout), into a grid written raw and read back: each colour in its quadrant, each tile labelled,
// what the receiver says of where the canvas is, and no frame downloaded on its way in. A --pix-fmt
// the GPU canvas does not draw puts it in host memory, saying why.
//
// Built twice, as gpu_memory_test is: composite_gpu_test runs against the stand-in CUDA
// driver (tests/fakecuda), which runs the kernels' own arithmetic on the CPU, everywhere;
// composite_gpu_gpu_test (RDMAVIDEO_REAL_GPU, label `gpu`) runs the same on NVIDIA's driver
// and skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "process.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

#ifdef RDMAVIDEO_REAL_GPU
#define COMPOSITE_GPU_SUITE CompositeOnGpu
#define REQUIRE_GPU()                                                                \
  if (auto driver = cuda::Driver::load(); !driver || (*driver)->device_count() == 0) \
  GTEST_SKIP() << "no GPU here: "                                                    \
               << (driver ? "the CUDA driver sees no device" : driver.error().message())
#else
#define COMPOSITE_GPU_SUITE CompositeGpu
#define REQUIRE_GPU() \
  WithFakeCuda fake;  \
  static_cast<void>(fake)
#endif

struct Rgb {
  int r, g, b;
};

// A live sender of a solid colour in `pix_fmt`, named after the colour.
Process colour_sender(const TempDir& dir, const std::string& address, const std::string& name,
                      Rgb c, const std::string& pix_fmt, double seconds) {
  return Process(
      {RDMAVIDEO_SEND_BIN, "--connect", address, "--quiet", "--name", name, "-f", "lavfi", "-i",
       fmt::format("color=c=0x{:02X}{:02X}{:02X}:s=320x180:r=30", c.r, c.g, c.b), "--pix-fmt",
       pix_fmt, "--realtime", "--duration", std::to_string(seconds)},
      dir / (name + ".stderr"));
}

// A canvas written raw (--output FILE.yuv: no FFmpeg needed to read it back, so the test
// runs as it is on a GPU machine without FFmpeg's programs): frame `n`, nv12 or uyvy422, its
// samples at a pixel.
struct Frame {
  std::string bytes;
  int width = 0, height = 0;
  bool nv12 = true;
  std::array<int, 3> yuv(int x, int y) const {
    const auto at = [&](size_t i) {
      return i < bytes.size() ? static_cast<int>(static_cast<uint8_t>(bytes[i])) : -1;
    };
    const size_t w = static_cast<size_t>(width), h = static_cast<size_t>(height);
    const size_t ux = static_cast<size_t>(x), uy = static_cast<size_t>(y);
    if (nv12) {
      const size_t c = w * h + uy / 2 * w + ux / 2 * 2;
      return {at(uy * w + ux), at(c), at(c + 1)};
    }
    const size_t pair = uy * w * 2 + ux / 2 * 4;
    return {at(pair + 1 + (ux & 1) * 2), at(pair), at(pair + 2)};
  }
};
Frame frame_of(const std::filesystem::path& file, int n, int width, int height, bool nv12) {
  Frame f{{}, width, height, nv12};
  const size_t bytes =
      static_cast<size_t>(width) * static_cast<size_t>(height) * (nv12 ? 3 : 4) / 2;
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(bytes) * n);
  f.bytes.resize(bytes);
  in.read(f.bytes.data(), static_cast<std::streamsize>(bytes));
  f.bytes.resize(static_cast<size_t>(in.gcount()));
  return f;
}

// sRGB as limited-range BT.601 YUV (a canvas under 720 lines).
std::array<int, 3> bt601(Rgb c) {
  const double r = c.r / 255.0, g = c.g / 255.0, b = c.b / 255.0;
  const double y = 0.299 * r + 0.587 * g + 0.114 * b;
  return {static_cast<int>(std::lround(16 + 219 * y)),
          static_cast<int>(std::lround(128 + 224 * (b - y) / 1.772)),
          static_cast<int>(std::lround(128 + 224 * (r - y) / 1.402))};
}

::testing::AssertionResult near(const Frame& f, int x, int y, std::array<int, 3> want,
                                const std::string& what) {
  const auto got = f.yuv(x, y);
  for (int i = 0; i < 3; ++i) {
    if (std::abs(got[i] - want[i]) > 10) {
      return ::testing::AssertionFailure()
             << what << " at (" << x << ", " << y << "): got YUV " << got[0] << "," << got[1] << ","
             << got[2] << " want " << want[0] << "," << want[1] << "," << want[2];
    }
  }
  return ::testing::AssertionSuccess();
}

struct Sender {
  std::string name;
  Rgb colour;
  std::string pix_fmt;
};

// Senders one after another into a grid on `canvas_args`, recorded; the summary, the
// recording, and the receiver's log.
struct Composited {
  nlohmann::json canvas;
  std::filesystem::path wall;
  std::string log;
};
Composited composite(const TempDir& dir, const std::vector<Sender>& senders,
                     std::vector<std::string> canvas_args) {
  Composited run;
  run.wall = dir / "wall.yuv";
  std::vector<std::string> args{"--memory",      "cuda",
                                "--composite",   "grid",
                                "--canvas",      "640x360@30",
                                "--max-streams", std::to_string(senders.size()),
                                "--output",      run.wall.string(),
                                "--stats-json",  (dir / "recv.json").string()};
  args.insert(args.end(), canvas_args.begin(), canvas_args.end());
  Receiver recv(dir, args);
  std::vector<std::unique_ptr<Process>> running;
  for (const Sender& s : senders) {
    running.push_back(std::unique_ptr<Process>(
        new Process(colour_sender(dir, recv.address(), s.name, s.colour, s.pix_fmt, 3))));
    // One at a time, so each takes the next tile in arrival order.
    EXPECT_TRUE(recv.process().wait_for_stderr("stream \\d+ \\(\"" + s.name + "\"\\) in tile", 20s))
        << s.name;
  }
  for (auto& p : running) EXPECT_EQ(p->wait(30s), 0) << p->stderr_text();
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
  run.log = recv.process().stderr_text();
  run.canvas = read_json(dir / "recv.json").at("canvas");
  return run;
}

// Four colours in four formats on the GPU: each in its quadrant, labelled, nothing downloaded.
TEST(COMPOSITE_GPU_SUITE, FourFormatsComposedInGpuMemoryEachInItsQuadrant) {
  REQUIRE_GPU();
  TempDir dir;
  const std::vector<Sender> senders{{"red", {255, 0, 0}, "uyvy422"},
                                    {"green", {0, 255, 0}, "nv12"},
                                    {"blue", {0, 0, 255}, "bgra"},
                                    {"yellow", {255, 255, 0}, "yuv422p10le"}};
  const Composited run = composite(dir, senders, {});
  if (RDMAVIDEO_CUDA_KERNELS) {
    EXPECT_NE(run.log.find("in GPU memory (cuda:0 ("), std::string::npos) << run.log;
    EXPECT_EQ(run.canvas.at("memory"), "cuda:0");
  } else {
    // A build without nvcc has no kernels: the canvas is drawn on the CPU, saying so.
    EXPECT_NE(run.log.find("the canvas is in host memory: this build has no CUDA kernels"),
              std::string::npos)
        << run.log;
    EXPECT_EQ(run.canvas.at("memory"), "host");
  }
  EXPECT_EQ(run.canvas.at("pix_fmt"), "nv12");
  ASSERT_EQ(run.canvas.at("tiles").size(), 4u) << run.canvas;
  const Frame frame = frame_of(run.wall, run.canvas.at("written").get<int>() / 2, 640, 360, true);
  ASSERT_EQ(frame.bytes.size(), 640u * 360 * 3 / 2);
  const std::array<std::pair<int, int>, 4> centres{{{160, 90}, {480, 90}, {160, 270}, {480, 270}}};
  for (size_t i = 0; i < 4; ++i) {
    const auto& tile = run.canvas.at("tiles")[i];
    ASSERT_EQ(tile.at("name"), senders[i].name);
    EXPECT_TRUE(near(frame, centres[i].first, centres[i].second, bt601(senders[i].colour),
                     senders[i].pix_fmt));
    // Frames reach the canvas all along (its rate is the benchmark's to measure: with the
    // stand-in driver on a loaded machine the canvas can fall to half its rate, letting the
    // rest go as "sampled").
    EXPECT_GT(tile.at("composited").get<int>(), 10) << tile;
    EXPECT_GE(tile.at("composited").get<int>() + tile.at("sampled").get<int>(),
              tile.at("received").get<int>() - 3)
        << "every frame received is composited or let go, counted: " << tile;
    if (RDMAVIDEO_CUDA_KERNELS) {
      EXPECT_EQ(tile.at("downloads"), 0) << "a GPU ring's frames stay in the GPU";
    }
    // The label's dark band, inside its padding.
    const int x0 = centres[i].first - 160, y0 = centres[i].second - 90;
    EXPECT_TRUE(
        near(frame, x0 + 3, y0 + 3, bt601({24, 24, 24}), "the label band of " + senders[i].name));
  }
}

// A canvas format the kernels do not draw: in host memory, saying why, the GPU's frames
// downloaded into its tiles.
TEST(COMPOSITE_GPU_SUITE, ACanvasFormatTheKernelsDoNotDrawIsInHostMemorySayingWhy) {
  REQUIRE_GPU();
  TempDir dir;
  const std::vector<Sender> senders{{"red", {255, 0, 0}, "nv12"}, {"blue", {0, 0, 255}, "rgba"}};
  const Composited run = composite(dir, senders, {"--pix-fmt", "uyvy422"});
  EXPECT_NE(run.log.find("the canvas is in host memory: a canvas in GPU memory is nv12, and "
                         "--pix-fmt asks for uyvy"),
            std::string::npos)
      << run.log;
  EXPECT_EQ(run.canvas.at("memory"), "host");
  const Frame frame = frame_of(run.wall, run.canvas.at("written").get<int>() / 2, 640, 360, false);
  for (size_t i = 0; i < 2; ++i) {
    const auto& tile = run.canvas.at("tiles")[i];
    EXPECT_EQ(tile.at("downloads"), tile.at("received")) << tile;
    // Two tiles side by side, 320x360 each, the pictures letterboxed in them.
    EXPECT_TRUE(near(frame, 160 + 320 * static_cast<int>(i), 180, bt601(senders[i].colour),
                     senders[i].name));
  }
}

}  // namespace
}  // namespace rdmavideo::testing
