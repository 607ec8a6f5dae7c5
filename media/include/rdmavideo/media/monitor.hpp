// SPDX-License-Identifier: Apache-2.0
// A Monitor shows one stream as it arrives, its picture and its first audio track: the
// receiver's window is one. The StreamWriter of the stream that owns it hands it every frame
// it has finished with and that stream's sound; offer() never waits (a busy monitor drops
// frames, never a recording's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::media {

class Monitor {
 public:
  virtual ~Monitor() = default;
  /// A stream's writer thread: hands over a frame; never waits.
  virtual void offer(FrameLease frame) = 0;
  /// The same thread: the stream's first audio track began; the monitor plays it.
  virtual void start_audio(const proto::AudioStart& format) = 0;
  /// That track's samples, in its format.
  virtual void play_audio(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data) = 0;
  /// The track ended, or the stream did: the picture goes back to showing frames as they come.
  virtual void end_audio() = 0;
};

}  // namespace rdmavideo::media
