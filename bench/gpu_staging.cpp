// SPDX-License-Identifier: Apache-2.0
// rdmavideo-gpu-staging: the staged rung's copy engine alone, with no network, next to the
// copies it replaces, for 4K RGBA frames (33 MB) by default. Prints one table and, with
// --json FILE, the same figures for bench/run_gpu_bench.py.
//
//   serial      one stream, per frame: device -> pinned (D2H), then pinned -> device (H2D),
//               each waited for: what a naive staging costs.
//   staged      the engine: two pinned slots, a download stream and an upload stream; frame
//               N+1's D2H runs while frame N's H2D does (the upload waits for its download on
//               the GPU, and a slot's next download for its last upload), so the two copy
//               directions overlap.
//   d2h / h2d   one direction alone, pinned, the bounds the staged rate is read against.
//
// Rates are frame bytes per second (a frame counts once, however many copies it takes).
// Needs a GPU: without one it says why and exits 1.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"

namespace {

using rdmavideo::Result;
using Clock = std::chrono::steady_clock;
namespace cuda = rdmavideo::cuda;

struct Rate {
  std::string name;
  double gbytes_per_s = 0;
  double frames_per_s = 0;
};

// Fails the program with the error's text.
template <typename T>
T must(Result<T> result, const char* what) {
  if (!result) {
    std::fprintf(stderr, "rdmavideo-gpu-staging: %s: %s\n", what, result.error().message().c_str());
    std::exit(1);
  }
  return std::move(*result);
}
void must(Result<void> result, const char* what) {
  if (!result) {
    std::fprintf(stderr, "rdmavideo-gpu-staging: %s: %s\n", what, result.error().message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t frame_bytes = 3840ull * 2160 * 4;
  int frames = 300;
  int device_index = 0;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--frame-bytes")
      frame_bytes = std::stoull(next());
    else if (a == "--frames")
      frames = std::stoi(next());
    else if (a == "--device")
      device_index = std::stoi(next());
    else if (a == "--json")
      json_path = next();
    else {
      std::fprintf(stderr,
                   "usage: rdmavideo-gpu-staging [--frame-bytes N] [--frames N] [--device N] "
                   "[--json FILE]\n");
      return 2;
    }
  }
  auto device = must(cuda::Device::shared(device_index), "--device");
  constexpr int kBuffers = 4;  // source and destination frames cycle through these
  std::vector<std::shared_ptr<cuda::DevicePtr>> src, dst;
  for (int i = 0; i < kBuffers; ++i) {
    src.push_back(must(device->allocate(frame_bytes), "source frames"));
    dst.push_back(must(device->allocate(frame_bytes), "destination frames"));
    must(device->fill(*src.back(), std::byte(i + 1), frame_bytes), "filling a source frame");
  }
  auto pinned = must(device->allocate_pinned(2 * frame_bytes), "pinned slots");
  std::span<std::byte> slot[2] = {{pinned.get(), frame_bytes},
                                  {pinned.get() + frame_bytes, frame_bytes}};
  auto down = must(device->create_stream(), "download stream");
  auto up = must(device->create_stream(), "upload stream");

  auto timed = [&](const std::string& name, auto&& body) {
    body(3);  // warm
    must(down->synchronize(), "synchronize");
    must(up->synchronize(), "synchronize");
    const auto start = Clock::now();
    body(frames);
    must(down->synchronize(), "synchronize");
    must(up->synchronize(), "synchronize");
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    return Rate{name, static_cast<double>(frame_bytes) * frames / s / 1e9, frames / s};
  };

  std::vector<Rate> rates;
  rates.push_back(timed("serial D2H then H2D", [&](int n) {
    for (int f = 0; f < n; ++f) {
      must(down->download_async(slot[0], *src[f % kBuffers]), "D2H");
      must(down->wait(must(down->mark(), "mark")), "wait");
      must(down->upload_async(*dst[f % kBuffers], slot[0]), "H2D");
      must(down->wait(must(down->mark(), "mark")), "wait");
    }
  }));
  rates.push_back(timed("staged, double buffered", [&](int n) {
    uint64_t uploaded[2] = {0, 0};  // the upload ticket that last read each slot
    for (int f = 0; f < n; ++f) {
      const int s = f % 2;
      if (uploaded[s]) must(down->after(*up, uploaded[s]), "download after upload");
      must(down->download_async(slot[s], *src[f % kBuffers]), "D2H");
      const uint64_t downloaded = must(down->mark(), "mark");
      must(up->after(*down, downloaded), "upload after download");
      must(up->upload_async(*dst[f % kBuffers], slot[s]), "H2D");
      uploaded[s] = must(up->mark(), "mark");
      // Keep at most the two slots' work queued, as the engine does with its slots.
      if (f >= 2) must(up->wait(uploaded[(f + 1) % 2]), "wait");
    }
  }));
  // The staged frames must be the source frames.
  std::vector<std::byte> check(frame_bytes);
  for (int i = 0; i < kBuffers; ++i) {
    must(device->download(check, *dst[i]), "checking a destination frame");
    if (check.front() != std::byte(i + 1) || check.back() != std::byte(i + 1)) {
      std::fprintf(stderr, "rdmavideo-gpu-staging: destination frame %d differs from its source\n",
                   i);
      return 1;
    }
  }
  rates.push_back(timed("D2H alone", [&](int n) {
    for (int f = 0; f < n; ++f) must(down->download_async(slot[f % 2], *src[f % kBuffers]), "D2H");
  }));
  rates.push_back(timed("H2D alone", [&](int n) {
    for (int f = 0; f < n; ++f) must(up->upload_async(*dst[f % kBuffers], slot[f % 2]), "H2D");
  }));

  std::printf("%s, %zu-byte frames, %d frames a case\n\n", device->describe().c_str(), frame_bytes,
              frames);
  std::printf("| %-26s | %10s | %10s | %12s |\n", "case", "GB/s", "frames/s", "vs serial");
  std::printf("|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(12, '-').c_str(),
              std::string(12, '-').c_str(), std::string(14, '-').c_str());
  for (const Rate& r : rates) {
    std::printf("| %-26s | %10.2f | %10.1f | %11.2fx |\n", r.name.c_str(), r.gbytes_per_s,
                r.frames_per_s, r.gbytes_per_s / rates[0].gbytes_per_s);
  }
  if (!json_path.empty()) {
    nlohmann::json j{
        {"device", device->describe()}, {"frame_bytes", frame_bytes}, {"frames", frames}};
    for (const Rate& r : rates)
      j["cases"].push_back({{"name", r.name}, {"gbytes_per_s", r.gbytes_per_s}});
    std::ofstream(json_path) << j.dump(2) << '\n';
  }
  return 0;
}
