// SPDX-License-Identifier: Apache-2.0
// A key-less peer of odd but well-formed media for the soak (run_soak.py): small frames at
// 30 fps, live, with a 48 kHz stereo track sent in chunks of --chunk samples (one by
// default), and every --jump-every seconds the picture's and the sound's pts an hour ahead at
// once (a restarted source's clock). For --seconds, then EndOfStream; exits 0 when the
// receiver took it to the end, 1 naming what went wrong.
//
//   rdmavideo-hostile-peer --port P [--name N] [--seconds 10] [--chunk 1] [--jump-every 3]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "raw_peer.hpp"

using namespace rdmavideo;
using namespace rdmavideo::testing;

int main(int argc, char** argv) {
  int port = 0;
  std::string name = "hostile";
  double seconds = 10, jump_every = 3;
  uint32_t chunk = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--port")
      port = std::atoi(value);
    else if (flag == "--name")
      name = value;
    else if (flag == "--seconds")
      seconds = std::atof(value);
    else if (flag == "--chunk")
      chunk = static_cast<uint32_t>(std::max(1, std::atoi(value)));
    else if (flag == "--jump-every")
      jump_every = std::atof(value);
    else {
      std::fprintf(stderr, "rdmavideo-hostile-peer: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (port <= 0) {
    std::fprintf(stderr,
                 "usage: rdmavideo-hostile-peer --port P [--name N] [--seconds S] [--chunk N] "
                 "[--jump-every S]\n");
    return 2;
  }
  try {
    auto format = small_format();
    format.name = name;
    MediaPeer peer(port, format);
    peer.start_audio(MediaPeer::stereo_s16(2, "one sample at a time"));
    constexpr int64_t kPeriod = 33'333'333;
    constexpr int64_t kHour = 3'599'000'000'000;
    const auto frames = static_cast<uint64_t>(seconds * 30);
    const auto jump_frames = static_cast<uint64_t>(std::max(1.0, jump_every * 30));
    const auto began = std::chrono::steady_clock::now();
    int64_t offset = 0;
    uint64_t samples = 0;
    for (uint64_t i = 0; i < frames; ++i) {
      if (i > 0 && i % jump_frames == 0) offset += kHour;
      peer.frame(static_cast<int64_t>(i) * kPeriod + offset);
      for (const uint64_t until = (i + 1) * 1600; samples < until;) {
        const auto n = static_cast<uint32_t>(std::min<uint64_t>(chunk, until - samples));
        peer.tone(2, samples, n, static_cast<int64_t>(samples * 1'000'000'000 / 48000) + offset);
        samples += n;
      }
      std::this_thread::sleep_until(began + std::chrono::nanoseconds((i + 1) * kPeriod));
    }
    peer.end();
    if (peer.raw().error_before_close()) {
      std::fprintf(stderr, "rdmavideo-hostile-peer: the receiver refused the stream\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rdmavideo-hostile-peer: %s\n", e.what());
    return 1;
  }
  return 0;
}
