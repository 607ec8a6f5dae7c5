// SPDX-License-Identifier: Apache-2.0
// rdmavideo's C API from C++, receiving: every frame is read where its sender wrote it (the
// ring slot is the program's until the frame is released), its checksum written down, and
// the first RGBA frame saved as a picture. It runs until every stream it took has ended.
//
//   rdmavideo-example-receiver HOST:PORT [CHECKSUMS [PICTURE.ppm]]
//
// CHECKSUMS gets "SEQUENCE FNV1A64" for every frame (the sender example writes the same).
#include <rdmavideo/rdmavideo.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

namespace {

// The C API's handles, released by their owners.
struct ReceiverDeleter {
  void operator()(rdmavideo_receiver* r) const { rdmavideo_receiver_destroy(r); }
};
struct FrameDeleter {
  void operator()(rdmavideo_frame* f) const { rdmavideo_frame_release(f); }
};
using Receiver = std::unique_ptr<rdmavideo_receiver, ReceiverDeleter>;
using Frame = std::unique_ptr<rdmavideo_frame, FrameDeleter>;

uint64_t fnv1a64(const uint8_t* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

// An RGBA or BGRA frame as a binary PPM.
bool save_ppm(const std::string& path, const rdmavideo_frame* frame) {
  rdmavideo_video_format format;
  format.struct_size = sizeof(format);
  rdmavideo_frame_format(frame, &format);
  const std::string pix_fmt = format.pix_fmt;
  if (pix_fmt != "rgba" && pix_fmt != "bgra") return false;
  rdmavideo_layout layout;
  rdmavideo_frame_layout(frame, &layout);
  std::ofstream out(path, std::ios::binary);
  out << "P6\n" << format.width << " " << format.height << "\n255\n";
  const auto* pixels = static_cast<const uint8_t*>(rdmavideo_frame_data(frame));
  const bool bgra = pix_fmt == "bgra";
  for (uint32_t y = 0; y < format.height; ++y) {
    const uint8_t* row = pixels + static_cast<size_t>(y) * layout.stride[0];
    for (uint32_t x = 0; x < format.width; ++x) {
      const uint8_t* p = row + static_cast<size_t>(x) * 4;
      const char rgb[3] = {static_cast<char>(bgra ? p[2] : p[0]), static_cast<char>(p[1]),
                           static_cast<char>(bgra ? p[0] : p[2])};
      out.write(rgb, 3);
    }
  }
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " HOST:PORT [CHECKSUMS [PICTURE.ppm]]\n";
    return 2;
  }
  rdmavideo_receiver_config config;
  rdmavideo_receiver_config_init(&config);
  config.listen = argv[1];
  config.verify = 1;  // where the sender sent checksums, check them
  rdmavideo_receiver* made = nullptr;
  if (auto status = rdmavideo_receiver_create(&config, &made); status != RDMAVIDEO_OK) {
    std::cerr << "listen: " << rdmavideo_last_error() << "\n";
    return 1;
  }
  Receiver receiver(made);
  std::cout << "listening on port " << rdmavideo_receiver_port(receiver.get()) << std::endl;
  std::ofstream checksums;
  if (argc > 2) checksums.open(argv[2]);
  bool saved = argc <= 3;
  uint64_t frames = 0;
  for (;;) {
    rdmavideo_frame* next = nullptr;
    const auto status = rdmavideo_receiver_next_frame(receiver.get(), -1, &next);
    if (status == RDMAVIDEO_ENDED) break;
    if (status != RDMAVIDEO_OK) {
      std::cerr << "receive: " << rdmavideo_last_error() << "\n";
      return 1;
    }
    Frame frame(next);
    if (rdmavideo_frame_memory(frame.get()) != RDMAVIDEO_MEMORY_HOST) continue;  // not here
    ++frames;
    if (checksums.is_open()) {
      char line[64];
      std::snprintf(line, sizeof line, "%llu %016llx\n",
                    static_cast<unsigned long long>(rdmavideo_frame_sequence(frame.get())),
                    static_cast<unsigned long long>(
                        fnv1a64(static_cast<const uint8_t*>(rdmavideo_frame_data(frame.get())),
                                rdmavideo_frame_size(frame.get()))));
      checksums << line;
    }
    if (!saved) saved = save_ppm(argv[3], frame.get());
  }
  rdmavideo_stats stats;
  stats.struct_size = sizeof(stats);
  rdmavideo_receiver_stats(receiver.get(), &stats);
  std::cout << "received " << frames << " frames in " << stats.streams << " stream(s), "
            << stats.checksum_failures << " checksum failures" << std::endl;
  return stats.checksum_failures == 0 ? 0 : 1;
}
