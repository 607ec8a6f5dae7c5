// SPDX-License-Identifier: Apache-2.0
// --memory cuda with the real binaries over 127.0.0.1 TCP: GPU -> GPU, GPU -> host and
// host -> GPU streams verified frame by frame, raw frames through GPU memory on both ends
// byte for byte, what each end reports (gpu_path, copies), and the errors: no driver, no such
// device, a forced path that cannot work, a GPU ring beyond the budget.
//
// Built twice. gpu_memory_test runs against the stand-in CUDA driver (tests/fakecuda), whose
// device memory the CPU cannot touch, everywhere. gpu_memory_gpu_test (RDMAVIDEO_REAL_GPU,
// label `gpu`) runs the same streams against NVIDIA's driver and skips, saying why, where
// there is no GPU; the stand-in's own facts (its device count, its memory) are not asked of
// a real GPU. scripts/gpu-check.sh runs it on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "process.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

#ifdef RDMAVIDEO_REAL_GPU
#define GPU_MEMORY_SUITE GpuMemoryOnGpu  // CTest names must differ from the stand-in's
constexpr bool kRealGpu = true;
// NVIDIA's driver, as the programs load it: nothing to set up.
struct Driver {
  Driver() {}  // user-provided: a Driver in a test is not an unused variable
};
#define REQUIRE_GPU()                                                                \
  if (auto driver = cuda::Driver::load(); !driver || (*driver)->device_count() == 0) \
  GTEST_SKIP() << "no GPU here: "                                                    \
               << (driver ? "the CUDA driver sees no device" : driver.error().message())
#define STAND_IN_ONLY() GTEST_SKIP() << "asks the stand-in driver's own facts"
#else
#define GPU_MEMORY_SUITE GpuMemory
constexpr bool kRealGpu = false;
using Driver = WithFakeCuda;
#define REQUIRE_GPU() \
  Driver fake;        \
  static_cast<void>(fake)
#define STAND_IN_ONLY() static_cast<void>(0)
#endif

std::vector<std::string> sender(const std::string& address, std::vector<std::string> extra) {
  std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", address, "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The lines a process printed at error level.
std::vector<std::string> error_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("error:") || line.starts_with("rdmavideo-")) lines.push_back(line);
  }
  return lines;
}

struct Ends {
  nlohmann::json sent;
  nlohmann::json received;
};

// One verified test-pattern stream of `frames` frames, each end's memory as given; every
// frame carries its checksum unless `checksum` is false.
Ends verified_stream(const std::string& send_memory, const std::string& recv_memory, int frames,
                     bool checksum = true) {
  TempDir dir;
  Receiver recv(dir, {"--verify", "--frames", std::to_string(frames), "--memory", recv_memory,
                      "--stats-json", (dir / "recv.json").string()});
  std::vector<std::string> args{"--testsrc",
                                "-s",
                                "640x360",
                                "--pix-fmt",
                                "nv12",
                                "--frames",
                                std::to_string(frames),
                                "--memory",
                                send_memory,
                                "--stats-json",
                                (dir / "send.json").string()};
  if (checksum) args.push_back("--checksum");
  Process send(sender(recv.address(), args), dir / "send.stderr");
  EXPECT_EQ(send.wait(60s), 0) << send.stderr_text();
  EXPECT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  return {read_json(dir / "send.json"), read_json(dir / "recv.json")};
}

TEST(GPU_MEMORY_SUITE, GpuTestPatternIntoAGpuRingIsVerifiedFrameByFrame) {
  REQUIRE_GPU();
  const Ends e = verified_stream("cuda", "cuda:0", 40);
  EXPECT_EQ(e.received.at("frames"), 40);
  EXPECT_EQ(e.received.at("checksum_failures"), 0);
  EXPECT_EQ(e.sent.at("memory"), "cuda:0");
  EXPECT_EQ(e.sent.at("gpu_path"), "staged (TCP copies through host memory)");
  EXPECT_EQ(e.sent.at("gpu_copies"), 40);  // one download a frame into a pinned slot
  EXPECT_EQ(e.received.at("memory"), "cuda:0");
  EXPECT_EQ(e.received.at("gpu_copies"), 40);  // one upload a frame from the host ring
  // Whether the NIC's writes into this GPU would need a flush, and whether it can make one.
  const auto& writes = e.received.at("gpu_rdma_writes");
  if (kRealGpu) {
    EXPECT_EQ(writes.at("flush_needed"), writes.at("ordering").get<int>() < 100) << writes;
  } else {
    EXPECT_EQ(writes, nlohmann::json(
                          {{"ordering", 100}, {"flush_needed", false}, {"flush_supported", true}}));
  }
  EXPECT_FALSE(e.sent.contains("gpu_rdma_writes")) << "the NIC only reads a sender's memory";
}

// Fan-out from GPU memory over TCP: both destinations stage, and the frame is copied out of
// the GPU once for both (one download a frame, not one per receiver); each verifies every frame.
TEST(GPU_MEMORY_SUITE, FanOutFromGpuMemoryCopiesEachFrameOutOnceForEveryReceiver) {
  REQUIRE_GPU();
  TempDir dir;
  constexpr int kFrames = 30;
  Receiver a(
      dir,
      {"--verify", "--frames", std::to_string(kFrames), "--stats-json", (dir / "a.json").string()},
      Redirect{}, "a");
  Receiver b(
      dir,
      {"--verify", "--frames", std::to_string(kFrames), "--stats-json", (dir / "b.json").string()},
      Redirect{}, "b");
  Process send(
      {RDMAVIDEO_SEND_BIN, "--connect", a.address(), "--connect", b.address(), "--quiet",
       "--testsrc", "-s", "640x360", "--pix-fmt", "nv12", "--frames", std::to_string(kFrames),
       "--checksum", "--memory", "cuda", "--stats-json", (dir / "send.json").string()},
      dir / "send.stderr");
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  for (auto* r : {&a, &b}) ASSERT_EQ(r->process().wait(60s), 0) << r->process().stderr_text();
  for (const char* name : {"a.json", "b.json"}) {
    const auto r = read_json(dir / name);
    EXPECT_EQ(r.at("frames"), kFrames) << name;
    EXPECT_EQ(r.at("checksum_failures"), 0) << name;
  }
  const auto s = read_json(dir / "send.json");
  EXPECT_EQ(s.at("gpu_copies"), kFrames) << s.dump(2);  // once a frame, for both destinations
  ASSERT_EQ(s.at("destinations").size(), 2u);
  for (const auto& d : s.at("destinations")) {
    EXPECT_EQ(d.at("frames"), kFrames) << d.dump();
    EXPECT_EQ(d.at("gpu_path"), "staged (TCP copies through host memory)") << d.dump();
  }
}

// Without checksums, the test pattern is compared on the GPU by a kernel and no frame comes
// down to the host; with them (above), each frame is downloaded for XXH3.
TEST(GPU_MEMORY_SUITE, AGpuRingIsVerifiedOnTheGpuWithoutDownloadingFrames) {
  REQUIRE_GPU();
  const Ends e = verified_stream("cuda", "cuda", 30, false);
  const auto& stream = e.received.at("streams").at(0);
  EXPECT_EQ(e.received.at("checksum_failures"), 0);
  EXPECT_EQ(e.received.at("frames"), 30);
  if (RDMAVIDEO_CUDA_KERNELS) {
    EXPECT_EQ(stream.at("verify"), "gpu");
    EXPECT_EQ(stream.at("downloads"), 0);
  } else {
    EXPECT_EQ(stream.at("verify"), "download");
    EXPECT_EQ(stream.at("downloads"), 30);
  }
  const Ends checksummed = verified_stream("cuda", "cuda", 10);
  EXPECT_EQ(checksummed.received.at("streams").at(0).at("downloads"), 10);
}

TEST(GPU_MEMORY_SUITE, WhereTheGpuCannotRunTheKernelsFramesAreDownloadedToVerify) {
  STAND_IN_ONLY();
  REQUIRE_GPU();
  setenv("FAKE_CUDA_KERNELS", "0", 1);
  const Ends e = verified_stream("cuda", "cuda", 20, false);
  unsetenv("FAKE_CUDA_KERNELS");
  const auto& stream = e.received.at("streams").at(0);
  EXPECT_EQ(e.received.at("checksum_failures"), 0);
  EXPECT_EQ(stream.at("verify"), "download");
  EXPECT_EQ(stream.at("downloads"), 20);
}

TEST(GPU_MEMORY_SUITE, GpuToHostAndHostToGpuAreVerified) {
  REQUIRE_GPU();
  const Ends to_host = verified_stream("cuda", "host", 30);
  EXPECT_EQ(to_host.received.at("checksum_failures"), 0);
  EXPECT_EQ(to_host.received.at("frames"), 30);
  EXPECT_EQ(to_host.received.at("memory"), "host");
  EXPECT_FALSE(to_host.received.contains("gpu_path"));
  const Ends to_gpu = verified_stream("host", "cuda", 30);
  EXPECT_EQ(to_gpu.received.at("checksum_failures"), 0);
  EXPECT_EQ(to_gpu.received.at("frames"), 30);
  EXPECT_EQ(to_gpu.sent.at("memory"), "host");
  EXPECT_EQ(to_gpu.received.at("gpu_copies_per_frame"), 1.0);
}

TEST(GPU_MEMORY_SUITE, RawFramesThroughGpuMemoryOnBothEndsArriveByteForByte) {
  REQUIRE_GPU();
  TempDir dir;
  // 24 frames of 64x36 rgba noise: any byte lost or moved shows.
  std::vector<char> input(64 * 36 * 4 * 24);
  std::mt19937 random(7);
  for (auto& c : input) c = static_cast<char>(random());
  std::ofstream(dir / "in.rgba", std::ios::binary)
      .write(input.data(), static_cast<std::streamsize>(input.size()));
  Receiver recv(dir,
                {"--frames", "24", "--memory", "cuda", "--output", (dir / "out.raw").string()});
  Redirect redirect;
  redirect.stdin_path = (dir / "in.rgba").string();
  Process send(
      sender(recv.address(), {"-i", "-", "-s", "64x36", "--pix-fmt", "rgba", "--memory", "cuda"}),
      dir / "send.stderr", redirect);
  ASSERT_EQ(send.wait(60s), 0) << send.stderr_text();
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_TRUE(read_file(dir / "out.raw") == std::string(input.begin(), input.end()));
}

TEST(GPU_MEMORY_SUITE, NoDriverIsOneLineAndExit1OnEitherEndAndNoStreamIsStarted) {
  if (kRealGpu) GTEST_SKIP() << "a machine with NVIDIA's driver has one";
  TempDir dir;
  Receiver recv(dir, {"--serve"});
  Process send(sender(recv.address(), {"--testsrc", "--frames", "10", "--memory", "cuda"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(30s), 1) << send.stderr_text();
  const auto lines = error_lines(send.stderr_text());
  ASSERT_EQ(lines.size(), 1u) << send.stderr_text();
  EXPECT_NE(lines[0].find("frames in cuda:0: no CUDA driver (libcuda.so.1"), std::string::npos)
      << lines[0];
  // The sender gave up before connecting: the receiver saw no one.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(recv.process().stderr_text().find("stream 1"), std::string::npos)
      << recv.process().stderr_text();
  recv.process().signal(SIGTERM);
  recv.process().wait(30s);

  Process r(
      std::vector<std::string>{RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0", "--memory", "cuda:1"},
      dir / "recv2.stderr");
  ASSERT_EQ(r.wait(30s), 1) << r.stderr_text();
  const auto recv_lines = error_lines(r.stderr_text());
  ASSERT_EQ(recv_lines.size(), 1u) << r.stderr_text();
  EXPECT_NE(recv_lines[0].find("frames in cuda:1: no CUDA driver"), std::string::npos)
      << recv_lines[0];
}

TEST(GPU_MEMORY_SUITE, ADeviceThatIsNotThereIsNamedWithTheOnesThatAre) {
  STAND_IN_ONLY();
  TempDir dir;
  Driver fake;
  Process send(sender("127.0.0.1:9", {"--testsrc", "--memory", "cuda:3"}), dir / "send.stderr");
  ASSERT_EQ(send.wait(30s), 1) << send.stderr_text();
  EXPECT_NE(
      send.stderr_text().find("frames in cuda:3: no CUDA device 3: the driver sees 1 (cuda:0)"),
      std::string::npos)
      << send.stderr_text();
}

TEST(GPU_MEMORY_SUITE, AForcedPathThatCannotWorkIsRefusedNotFallenBackFrom) {
  REQUIRE_GPU();
  TempDir dir;
  Receiver recv(dir, {"--serve"});
  Process send(sender(recv.address(),
                      {"--testsrc", "--frames", "10", "--memory", "cuda", "--gpu-path", "dmabuf"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(30s), 1) << send.stderr_text();
  EXPECT_NE(send.stderr_text().find("--gpu-path dmabuf: TCP copies through host memory"),
            std::string::npos)
      << send.stderr_text();
  // staged, forced, works and says it was forced.
  Process staged(
      sender(recv.address(), {"--testsrc", "-s", "320x240", "--frames", "10", "--memory", "cuda",
                              "--gpu-path", "staged", "--stats-json", (dir / "s.json").string()}),
      dir / "staged.stderr");
  ASSERT_EQ(staged.wait(30s), 0) << staged.stderr_text();
  EXPECT_EQ(read_json(dir / "s.json").at("gpu_path"), "staged (forced by --gpu-path staged)");
  recv.process().signal(SIGTERM);
  recv.process().wait(30s);
}

TEST(GPU_MEMORY_SUITE, BadValuesAreUsageErrors) {
  TempDir dir;
  auto usage = [&](std::vector<std::string> argv, const std::string& expected) {
    Process p(argv, dir / "p.stderr");
    EXPECT_EQ(p.wait(30s), 2) << p.stderr_text();
    EXPECT_NE(p.stderr_text().find(expected), std::string::npos) << p.stderr_text();
  };
  usage({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:9", "--testsrc", "--memory", "gpu"},
        "--memory \"gpu\" unknown (host, or cuda[:N] for GPU N)");
  usage({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:9", "--testsrc", "--memory", "cuda:x"},
        "--memory \"cuda:x\" unknown");
  usage({RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:9", "--testsrc", "--gpu-path", "staged"},
        "--gpu-path applies to GPU memory: give --memory cuda too");
  usage({RDMAVIDEO_RECV_BIN, "--listen", "127.0.0.1:0", "--memory", "cuda", "--gpu-path", "nvlink"},
        "--gpu-path \"nvlink\" unknown (auto, dmabuf, peermem or staged)");
}

TEST(GPU_MEMORY_SUITE, AGpuRingCountsAgainstTheBudgetWithItsStagingRing) {
  REQUIRE_GPU();
  TempDir dir;
  // 1280x720 uyvy: 8 slots of 1.8 MiB (64 KiB aligned), twice over, beyond 16 MiB.
  Receiver recv(dir, {"--serve", "--memory", "cuda", "--max-memory", "16M"});
  Process send(sender(recv.address(), {"--testsrc", "-s", "1280x720", "--frames", "10"}),
               dir / "send.stderr");
  ASSERT_EQ(send.wait(30s), 1) << send.stderr_text();
  EXPECT_NE(send.stderr_text().find("in cuda:0 and its host staging ring needs 29 MiB, beyond the "
                                    "receiver's memory budget of 16 MiB"),
            std::string::npos)
      << send.stderr_text();
  recv.process().signal(SIGTERM);
  recv.process().wait(30s);
}

}  // namespace
}  // namespace rdmavideo::testing

namespace rdmavideo::testing {
namespace {

// ---- NVDEC: -i FILE --hwaccel cuda

// A clip made with our own tools (they record through FFmpeg's encoders, which the GPU
// machine has only as the libraries carried there): `frames` frames of the test pattern.
std::filesystem::path record_clip(const TempDir& dir, const std::string& name,
                                  const std::string& codec, const std::string& pix_fmt, int frames,
                                  const std::string& size = "320x240") {
  const auto path = dir / name;
  Receiver recv(dir,
                {"--frames", std::to_string(frames), "--output", path.string(), "--codec", codec});
  Process send(sender(recv.address(), {"--testsrc", "-s", size, "--pix-fmt", pix_fmt, "--frames",
                                       std::to_string(frames)}),
               dir / (name + ".send.stderr"));
  EXPECT_EQ(send.wait(300s), 0) << send.stderr_text();
  EXPECT_EQ(recv.process().wait(300s), 0) << recv.process().stderr_text();
  return path;
}

// ---- NVENC: recording a GPU ring with h264_nvenc / hevc_nvenc

struct Recorded {
  int recv_exit;
  std::string recv_stderr;
  std::filesystem::path file;
};

// A test-pattern stream of `frames` frames into a GPU ring, recorded with `encoder`.
Recorded record_from_gpu(const TempDir& dir, const std::string& codec, const std::string& encoder,
                         const std::string& pix_fmt, int frames) {
  const auto file = dir / (encoder + ".mkv");
  Receiver recv(dir, {"--memory", "cuda", "--frames", std::to_string(frames), "--output",
                      file.string(), "--codec", codec, "--encoder", encoder});
  Process send(sender(recv.address(), {"--testsrc", "-s", "320x240", "--pix-fmt", pix_fmt,
                                       "--frames", std::to_string(frames)}),
               dir / (encoder + ".send.stderr"));
  send.wait(60s);
  const int rc = recv.process().wait(60s).value_or(-1);
  return {rc, recv.process().stderr_text(), file};
}

#ifdef RDMAVIDEO_REAL_GPU
std::string received_raw(const TempDir& dir, const std::string& name,
                         const std::filesystem::path& input, std::vector<std::string> extra,
                         const std::string& recv_memory);

// NVENC reads the frames on the GPU (one copy there into FFmpeg's CUDA frame pool) and the
// file holds every frame, decoded back by our own source. H100 and H200 have no NVENC: the
// encoder cannot open there, and the test says so and skips.
TEST(GPU_MEMORY_SUITE, NvencRecordsAGpuRingWithoutDownloadingIt) {
  REQUIRE_GPU();
  if (!RDMAVIDEO_HAVE_FFMPEG) GTEST_SKIP() << "built without FFmpeg";
  TempDir dir;
  const Recorded r = record_from_gpu(dir, "h264", "h264_nvenc", "nv12", 30);
  for (const char* none :
       {"no encode device", "NV_ENC_ERR_NO_ENCODE_DEVICE", "OpenEncodeSessionEx failed"}) {
    if (r.recv_exit != 0 && r.recv_stderr.find(none) != std::string::npos) {
      GTEST_SKIP() << "this GPU has no NVENC: " << error_lines(r.recv_stderr).front();
    }
  }
  ASSERT_EQ(r.recv_exit, 0) << r.recv_stderr;
  EXPECT_NE(r.recv_stderr.find("from GPU memory on cuda:0"), std::string::npos) << r.recv_stderr;
  const std::string raw = received_raw(dir, "decoded", r.file, {"--pix-fmt", "nv12"}, "host");
  EXPECT_EQ(raw.size(), size_t{30} * 320 * 240 * 3 / 2);
}

// The raw frames a receiver writes for `input` sent with `extra`, in a file.
std::filesystem::path received_raw_file(const TempDir& dir, const std::string& name,
                                        const std::filesystem::path& input,
                                        std::vector<std::string> extra,
                                        const std::string& recv_memory) {
  const auto out = dir / (name + ".raw");
  Receiver recv(dir, {"--memory", recv_memory, "--output", out.string()});  // one stream, then exit
  std::vector<std::string> args{"-i", input.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  Process send(sender(recv.address(), args), dir / (name + ".send.stderr"));
  const auto sent = send.wait(300s);
  EXPECT_EQ(sent, 0) << send.stderr_text();
  // A sender that failed before its stream began leaves the receiver waiting: not for long.
  EXPECT_EQ(recv.process().wait(sent == 0 ? 300s : 5s), 0) << recv.process().stderr_text();
  return out;
}

std::string received_raw(const TempDir& dir, const std::string& name,
                         const std::filesystem::path& input, std::vector<std::string> extra,
                         const std::string& recv_memory) {
  return read_file(received_raw_file(dir, name, input, std::move(extra), recv_memory));
}

// Compares two files of raw frames frame by frame: "" where they hold the same `frames`
// frames, else the first frame that differs (and where in it), or the count that is wrong.
std::string first_difference(const std::filesystem::path& a, const std::filesystem::path& b,
                             size_t frame_bytes, int frames) {
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::vector<char> x(frame_bytes), y(frame_bytes);
  for (int f = 0;; ++f) {
    fa.read(x.data(), static_cast<std::streamsize>(frame_bytes));
    fb.read(y.data(), static_cast<std::streamsize>(frame_bytes));
    const auto got_a = static_cast<size_t>(fa.gcount()), got_b = static_cast<size_t>(fb.gcount());
    if (got_a == 0 && got_b == 0) {
      return f == frames ? "" : fmt::format("{} frames where {} were sent", f, frames);
    }
    if (got_a != frame_bytes || got_b != frame_bytes) {
      return fmt::format("frame {}: {} holds {} bytes of it, {} holds {}", f, a.filename().string(),
                         got_a, b.filename().string(), got_b);
    }
    if (x != y) {
      const auto at = std::mismatch(x.begin(), x.end(), y.begin()).first - x.begin();
      return fmt::format("frame {} differs from byte {} on", f, at);
    }
  }
}

// NVDEC's frames, copied on the GPU into the sender's GPU buffers and received into GPU
// memory, are byte for byte what FFmpeg's software decoder gives in the same format (H.264
// and HEVC decoders are exact), frame by frame over 600 frames of 1280x720: h264 8-bit as
// nv12, hevc 10-bit 4:2:0 as p010. A copy that ran before NVDEC had written its picture
// (on another CUDA stream) shows as a stale or torn frame.
void expect_nvdec_matches_the_cpu(const std::string& codec, const std::string& pix_fmt) {
  if (!RDMAVIDEO_HAVE_FFMPEG) GTEST_SKIP() << "built without FFmpeg";
  constexpr int kFrames = 600;
  TempDir dir;
  const auto clip = record_clip(dir, codec + ".mkv", codec, pix_fmt, kFrames, "1280x720");
  const size_t frame_bytes = size_t{1280} * 720 * 3 / 2 * (pix_fmt == "p010" ? 2 : 1);
  const auto cpu = received_raw_file(dir, "cpu", clip, {"--pix-fmt", pix_fmt}, "host");
  const auto gpu =
      received_raw_file(dir, "gpu", clip, {"--hwaccel", "cuda", "--memory", "cuda"}, "cuda");
  const auto down =
      received_raw_file(dir, "down", clip, {"--hwaccel", "cuda", "--pix-fmt", pix_fmt}, "host");
  EXPECT_EQ(std::filesystem::file_size(cpu), frame_bytes * kFrames);
  EXPECT_EQ(first_difference(gpu, cpu, frame_bytes, kFrames), "")
      << "NVDEC into GPU memory against the CPU's decode";
  EXPECT_EQ(first_difference(down, cpu, frame_bytes, kFrames), "")
      << "NVDEC downloaded against the CPU's decode";
}

TEST(GPU_MEMORY_SUITE, NvdecH264IntoGpuMemoryMatchesTheCpuDecoder) {
  REQUIRE_GPU();
  expect_nvdec_matches_the_cpu("h264", "nv12");
}

TEST(GPU_MEMORY_SUITE, NvdecHevc10BitIntoGpuMemoryMatchesTheCpuDecoder) {
  REQUIRE_GPU();
  expect_nvdec_matches_the_cpu("hevc", "p010");
}
#else
// Where NVDEC cannot run, each way it fails is one line naming what: no driver; NVDEC not
// starting (FFmpeg opens libcuda.so.1 itself and finds the stand-in, but there is no
// libnvcuvid beside it); a conversion asked of frames that stay in GPU memory. Usage errors
// exit 2.
TEST(GPU_MEMORY_SUITE, NvdecAndNvencWithoutAGpuNameWhatIsMissing) {
  if (!RDMAVIDEO_HAVE_FFMPEG) GTEST_SKIP() << "built without FFmpeg";
  TempDir dir;
  const auto clip = record_clip(dir, "clip.mkv", "h264", "nv12", 3);
  auto run = [&](std::vector<std::string> args, int want) {
    std::vector<std::string> a{RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:9", "-i", clip.string()};
    a.insert(a.end(), args.begin(), args.end());
    Process send(a, dir / "send.stderr");
    EXPECT_EQ(send.wait(30s), want) << send.stderr_text();
    const auto lines = error_lines(send.stderr_text());
    EXPECT_EQ(lines.size(), 1u) << send.stderr_text();
    return lines.empty() ? std::string() : lines[0];
  };
  EXPECT_NE(run({"--hwaccel", "cuda"}, 1).find("--hwaccel cuda: no CUDA driver (libcuda.so.1"),
            std::string::npos);
  EXPECT_NE(run({"--hwaccel", "vaapi"}, 2).find("--hwaccel \"vaapi\" unknown (cuda or cuda:N"),
            std::string::npos);
  EXPECT_NE(
      run({"--hwaccel", "cuda:1", "--memory", "cuda:0"}, 2)
          .find("--hwaccel cuda:1 decodes on another GPU than --memory cuda:0 holds the frames in"),
      std::string::npos);
  Driver fake;
  {
    // FFmpeg's CUDA device opens on the stand-in (our context and stream); NVDEC itself does
    // not start, as on a machine without the driver's video library, and FFmpeg's words say so.
    Receiver recv(dir, {"--output", (dir / "nvdec.raw").string()});
    Process send(sender(recv.address(), {"-i", clip.string(), "--hwaccel", "cuda"}),
                 dir / "nvdec.stderr");
    EXPECT_EQ(send.wait(30s), 1) << send.stderr_text();
    const auto lines = error_lines(send.stderr_text());
    ASSERT_EQ(lines.size(), 1u) << send.stderr_text();
    EXPECT_NE(
        lines[0].find("NVDEC on cuda:0 (Fake GPU 0) could not start (Cannot load libnvcuvid.so.1"),
        std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("): leave out --hwaccel to decode on the CPU"), std::string::npos)
        << lines[0];
  }
  EXPECT_NE(
      run({"--hwaccel", "cuda", "--memory", "cuda", "--pix-fmt", "rgba"}, 1)
          .find("decoded by NVDEC into GPU memory, frames stay 320x240 nv12 (nothing converts them "
                "there): leave out -s and --pix-fmt, or use --memory host"),
      std::string::npos);
  // NVENC from GPU memory: a format it does not take is named before any CUDA is opened;
  // NVENC failing to open is named with what FFmpeg said (here: no libnvidia-encode).
  const Recorded v210 = record_from_gpu(dir, "h264", "h264_nvenc", "v210", 3);
  EXPECT_EQ(v210.recv_exit, 1);
  EXPECT_NE(v210.recv_stderr.find(
                "h264_nvenc does not take v210 frames from GPU memory, and nothing here "
                "converts them on the GPU"),
            std::string::npos)
      << v210.recv_stderr;
  // uyvy is converted to nv12 on the GPU, by a kernel this build may lack.
  const Recorded uyvy = record_from_gpu(dir, "h264", "h264_nvenc", "uyvy", 3);
  EXPECT_EQ(uyvy.recv_exit, 1);
  EXPECT_NE(uyvy.recv_stderr.find(
                RDMAVIDEO_CUDA_KERNELS
                    ? "(Cannot load libnvidia-encode.so.1"
                    : "uyvy422 frames need converting to nv12 on the GPU for h264_nvenc: this "
                      "build has no CUDA kernels"),
            std::string::npos)
      << uyvy.recv_stderr;
  const Recorded nv12 = record_from_gpu(dir, "h264", "h264_nvenc", "nv12", 3);
  EXPECT_EQ(nv12.recv_exit, 1);
  EXPECT_NE(nv12.recv_stderr.find("avcodec_open2(h264_nvenc 320x240 nv12) failed: "),
            std::string::npos)
      << nv12.recv_stderr;
  EXPECT_NE(nv12.recv_stderr.find("(Cannot load libnvidia-encode.so.1"), std::string::npos)
      << "FFmpeg's words are kept";
  Process testsrc(
      {RDMAVIDEO_SEND_BIN, "--connect", "127.0.0.1:9", "--testsrc", "--hwaccel", "cuda"},
      dir / "testsrc.stderr");
  EXPECT_EQ(testsrc.wait(30s), 2);
  EXPECT_NE(testsrc.stderr_text().find("--hwaccel apply to FFmpeg inputs"), std::string::npos);
}
#endif

}  // namespace
}  // namespace rdmavideo::testing
