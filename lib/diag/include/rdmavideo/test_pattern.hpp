// SPDX-License-Identifier: Apache-2.0
// The built-in test source: colour bars with a moving box and a luma ramp, rendered once into
// a few frames in the stream's layout, with the frame number stamped into the first bytes of
// each frame as it is sent. Rendering up front means the source never limits throughput.
//
// A receiver builds the same TestPattern from the StreamStart and checks each frame against
// it: the stamp must carry the frame's sequence number and every other byte must match.
//
// With kStreamFlash (protocol version 3) the first frame at or after every whole second of
// the stream (frame n at n / rate seconds) is white instead, stamped as any other: the test
// tone beeps at the same instants, so a recording's audio/video sync can be measured, and
// --verify still checks every frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmavideo/checksum.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo {

class TestPattern {
 public:
  /// The stamp: an 8-byte tag and the 8-byte sequence number.
  static constexpr size_t kStampPayloadBytes = 16;
  /// The most bytes at the start of plane 0 a stamp covers (see stamp_bytes()).
  static constexpr size_t kStampBytes = 32;

  explicit TestPattern(const proto::StreamStart& format);

  /// Frames rendered up front; a function of the frame size so both ends agree.
  static uint32_t phase_count(uint32_t frame_bytes);
  /// Renders phase `phase` of the pattern into `out` (at least frame_bytes long), for a
  /// sender that keeps its frames in memory of its own (a session's pool).
  static void render_phase(const proto::StreamStart& format, uint32_t phase,
                           std::span<std::byte> out);
  /// Whether frame `sequence` is a flash: kStreamFlash is set and it is the first frame at
  /// or after a whole second (frame 0, and frame n where n / rate passes a whole second).
  static bool flashes(const proto::StreamStart& format, uint64_t sequence);
  /// Frame buffers the pattern needs: its phases, and the white one with kStreamFlash.
  static uint32_t buffer_count(const proto::StreamStart& format);
  /// Which of them frame `sequence` is sent from.
  static uint32_t buffer_index(const proto::StreamStart& format, uint64_t sequence);
  /// Renders buffer `index` (a phase, or the white flash) into `out`.
  static void render_buffer(const proto::StreamStart& format, uint32_t index,
                            std::span<std::byte> out);
  /// Stamps frame `sequence` into a rendered frame.
  static void stamp(const proto::StreamStart& format, std::span<std::byte> frame,
                    uint64_t sequence);

  /// The frame for `sequence`, stamped. The buffer stays valid and unchanged until the same
  /// phase comes round again (phase_count() frames later).
  std::span<std::byte> frame(uint64_t sequence);
  /// The buffer frame(sequence) stamps and returns, without touching it.
  std::span<const std::byte> buffer_for(uint64_t sequence) const {
    return phases_[buffer_index(format_, sequence)];
  }

  /// Where a received frame first differs from what the pattern says it should be.
  struct Mismatch {
    int plane;
    size_t offset;  ///< byte offset within the plane
    uint8_t got;
    uint8_t expected;
    std::string describe(uint64_t sequence) const;
    /// The mismatch at byte `at` of a frame in `format`'s layout.
    static Mismatch at(const proto::StreamStart& format, size_t at, uint8_t got, uint8_t expected);
  };
  std::optional<Mismatch> verify(uint64_t sequence, std::span<const std::byte> data) const;

  /// Bytes at the start of plane 0 this format's stamp covers: the payload as it is in
  /// 8-bit formats; one payload byte per 10-bit sample in p010, yuv422p10 and v210, so a
  /// stamped frame is still valid video (encoders such as FFV1 reject samples above 10 bits).
  size_t stamp_bytes() const;
  static size_t stamp_bytes(PixelFormat format);

 private:
  void stamp(std::span<std::byte> frame, uint64_t sequence) const;
  static void stamp_into(const proto::StreamStart& format, std::span<std::byte> frame,
                         uint64_t sequence);

  proto::StreamStart format_;
  std::vector<std::vector<std::byte>> phases_;  // rendered frames, one per buffer_index()
};

}  // namespace rdmavideo
