// SPDX-License-Identifier: Apache-2.0
// The C API's receiver where the library has none (Windows: the receiving side is Linux's).
// Every function is there, so the one header serves both, and says why it cannot work.
#include <fmt/format.h>

#include "c_api.hpp"

using namespace rdmavideo;

namespace {

rdmavideo_status no_receiver(const char* call) {
  return c_api::fail(Error(ErrorCode::unsupported,
                           fmt::format("{}: this build of the library has no receiver (the "
                                       "Windows build sends; receive on Linux)",
                                       call)));
}

}  // namespace

extern "C" {

rdmavideo_status rdmavideo_receiver_create(const rdmavideo_receiver_config* config,
                                           rdmavideo_receiver** receiver) {
  (void)config;
  if (receiver) *receiver = nullptr;
  return no_receiver("rdmavideo_receiver_create");
}

uint16_t rdmavideo_receiver_port(const rdmavideo_receiver* receiver) {
  (void)receiver;
  return 0;
}

rdmavideo_status rdmavideo_receiver_next_frame(rdmavideo_receiver* receiver, int32_t timeout_ms,
                                               rdmavideo_frame** frame) {
  (void)receiver;
  (void)timeout_ms;
  if (frame) *frame = nullptr;
  return no_receiver("rdmavideo_receiver_next_frame");
}

// No receiver makes a frame or a chunk: what would read one has nothing to read.
const void* rdmavideo_frame_data(const rdmavideo_frame*) { return nullptr; }
uint64_t rdmavideo_frame_size(const rdmavideo_frame*) { return 0; }
rdmavideo_memory rdmavideo_frame_memory(const rdmavideo_frame*) { return RDMAVIDEO_MEMORY_HOST; }
void rdmavideo_frame_format(const rdmavideo_frame*, rdmavideo_video_format*) {}
void rdmavideo_frame_layout(const rdmavideo_frame*, rdmavideo_layout*) {}
int64_t rdmavideo_frame_pts_ns(const rdmavideo_frame*) { return 0; }
uint64_t rdmavideo_frame_sequence(const rdmavideo_frame*) { return 0; }
uint64_t rdmavideo_frame_stream(const rdmavideo_frame*) { return 0; }
void rdmavideo_frame_release(rdmavideo_frame*) {}

rdmavideo_status rdmavideo_receiver_next_chunk(rdmavideo_receiver* receiver, int32_t timeout_ms,
                                               rdmavideo_chunk** chunk) {
  (void)receiver;
  (void)timeout_ms;
  if (chunk) *chunk = nullptr;
  return no_receiver("rdmavideo_receiver_next_chunk");
}

uint64_t rdmavideo_chunk_stream(const rdmavideo_chunk*) { return 0; }
uint32_t rdmavideo_chunk_track(const rdmavideo_chunk*) { return 0; }
void rdmavideo_chunk_format(const rdmavideo_chunk*, rdmavideo_audio_format*) {}
int64_t rdmavideo_chunk_pts_ns(const rdmavideo_chunk*) { return 0; }
uint32_t rdmavideo_chunk_samples(const rdmavideo_chunk*) { return 0; }
const void* rdmavideo_chunk_data(const rdmavideo_chunk*) { return nullptr; }
uint64_t rdmavideo_chunk_size(const rdmavideo_chunk*) { return 0; }
void rdmavideo_chunk_release(rdmavideo_chunk*) {}

rdmavideo_status rdmavideo_receiver_stats(const rdmavideo_receiver* receiver,
                                          rdmavideo_stats* stats) {
  (void)receiver;
  (void)stats;
  return no_receiver("rdmavideo_receiver_stats");
}

void rdmavideo_receiver_stop(rdmavideo_receiver*) {}
void rdmavideo_receiver_destroy(rdmavideo_receiver*) {}

}  // extern "C"
