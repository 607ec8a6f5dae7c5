// SPDX-License-Identifier: Apache-2.0
// A ProRes 422 encoder of the library's own (SMPTE RDD 36), for recordings made without the
// CPU where frames are in GPU memory: CUDA kernels where there is a GPU, and this CPU twin,
// which runs the same arithmetic (lib/prores/slices/prores_slices.hpp) and makes the same
// bytes. The CPU
// twin is the reference the kernels are checked against and what runs without a GPU; it is
// not meant to race FFmpeg's encoders.
//
// Input: 10-bit 4:2:2 in three planes (Y, Cb, Cr; chroma (width + 1) / 2 wide), samples in the
// low 10 bits of 16. Any width and height up to 65535: the edge macroblocks repeat the last
// column and row. Output: one frame as a ProRes decoder takes it ("icpf" and its header:
// size, the colour fields, the profile's quantisation matrices; one picture of slices of up
// to eight macroblocks, each with its own quantiser).
//
// Rate control, towards the profile's nominal size (Apple's data rates, in bits a macroblock
// a frame): the finest quantiser that, used for every slice, keeps the frame within its
// target, then the next finer one for as many slices as the bytes left pay for, in raster
// order. One quantiser for all is what equal quality across a picture costs least; both
// steps are sums over the slices, a prefix sum on the GPU. No frame exceeds
// max_frame_bytes(), and none its target unless even the coarsest quantiser does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::prores {

enum class Profile { proxy, lt, standard, hq };

/// "apco", "apcs", "apcn", "apch": the four-character code a container names the profile by.
std::string_view fourcc(Profile profile);
/// "proxy", "lt", "standard", "hq".
std::string_view to_string(Profile profile);

struct FrameFormat {
  uint32_t width = 0, height = 0;
  Profile profile = Profile::hq;
  // ISO/IEC 23091-2 code points, as in H.273 and the frame header (2: unspecified).
  uint8_t primaries = 2, transfer = 2, matrix = 2;
  /// The size aimed at, in bits a macroblock (0: the profile's nominal rate).
  uint32_t bits_per_mb = 0;
};

struct Planes422 {
  const uint16_t* y = nullptr;
  const uint16_t* cb = nullptr;
  const uint16_t* cr = nullptr;
  size_t y_pitch = 0, c_pitch = 0;  ///< in samples
};

/// What a slice is: where it starts (in macroblocks) and how many it has.
struct SliceSpan {
  uint32_t mb_x, mb_y, mb_count;
};

/// The picture's slices, row by row: each row cut into 8, 4, 2 and 1 macroblocks, widest
/// first, as the format's slice width (8) and its halvings allow.
std::vector<SliceSpan> slice_layout(uint32_t width, uint32_t height);

/// Whether `format` can be encoded: `invalid_argument`, naming why, where not.
Result<void> check_format(const FrameFormat& format);
/// The most a frame of `format` can take (every slice at its size limit, the headers and the
/// table), and the size the rate control aims each frame at.
size_t max_frame_bytes(const FrameFormat& format);
size_t target_frame_bytes(const FrameFormat& format);

/// The CPU twin. `threads` code a frame's slices (the caller's among them: 1 is the caller's
/// alone); the frames are the same bytes whatever their number.
class Encoder {
 public:
  static Result<Encoder> create(const FrameFormat& format, unsigned threads = 1);

  const FrameFormat& format() const { return format_; }
  size_t max_frame_bytes() const;
  size_t target_frame_bytes() const;
  /// Encodes one picture into `out` (at least max_frame_bytes()); the frame's size.
  Result<size_t> encode(const Planes422& picture, std::span<uint8_t> out) const;

 private:
  Encoder(const FrameFormat& format, unsigned threads);

  FrameFormat format_;
  std::vector<SliceSpan> slices_;
  unsigned threads_ = 1;
};

/// Up to three planes in a GPU's memory, each with its pitch in bytes.
struct DevicePlanes {
  cuda::DevicePtr at[3] = {};
  size_t pitch[3] = {};
};
/// The encoder's picture in a GPU's memory: 10-bit 4:2:2 planes (Y, Cb, Cr; samples in the
/// low 10 bits of 16), pitches in bytes.
struct DevicePicture {
  DevicePlanes planes;
  unsigned width = 0, height = 0;
};
/// What the encoder's picture is made from on a GPU (lib/prores/gpu/picture422.hpp): 8-bit
/// packed 4:2:2, 8-bit 4:2:0 (chroma interleaved or in two planes), p010, 10-bit planar 4:2:2,
/// and v210.
enum class GpuInput { uyvy, yuy2, nv12, i420, p010, yuv422p10, v210 };

/// The encoder on a GPU: the same frames as Encoder's, from a picture in that GPU's memory.
/// The slices are transformed, counted, coded and placed behind their table there, with no
/// wait of the host's between the passes; what crosses to the host is the coded frame (and the
/// rate control's end, a few bytes). Frames may be queued (submit()) several at once, each on
/// its own stream with its own memory, and collected in order (collect()), so that one frame's
/// passes overlap the next's. Not thread-safe: one caller at a time.
inline constexpr unsigned kMostFramesInFlight = 8;
class GpuEncoder {
 public:
  /// `unsupported`, naming why, where the device cannot run the library's kernels.
  /// `frames_in_flight` (1 to kMostFramesInFlight): how many frames submit() may queue before
  /// one is collected.
  static Result<std::unique_ptr<GpuEncoder>> create(std::shared_ptr<cuda::Device> device,
                                                    const FrameFormat& format,
                                                    unsigned frames_in_flight = 1);
  ~GpuEncoder();
  GpuEncoder(const GpuEncoder&) = delete;
  GpuEncoder& operator=(const GpuEncoder&) = delete;

  const FrameFormat& format() const;
  size_t max_frame_bytes() const;
  unsigned frames_in_flight() const;
  /// Frames submitted and not yet collected.
  unsigned queued() const;
  /// Queues on `stream` (of the encoder's device) the making of `to` from `from` (planes as
  /// `input` lays them out); the caller waits.
  Result<void> make_picture(cuda::Stream& stream, GpuInput input, const DevicePlanes& from,
                            const DevicePicture& to) const;
  /// Queues the encoding of the picture (10-bit 4:2:2 planes in the device's memory, pitches in
  /// bytes); returns once it has been read, so the caller may make the next picture in its
  /// place, while the frame is coded. `invalid_argument` where frames_in_flight() are queued.
  Result<void> submit(const DevicePicture& picture);
  /// The oldest frame queued into `out` (at least max_frame_bytes()), waiting until it is
  /// done: its size.
  Result<size_t> collect(std::span<uint8_t> out);
  /// One picture submitted and collected, with none queued: the frame's size.
  Result<size_t> encode(const DevicePicture& picture, std::span<uint8_t> out);
  /// How long the last frame collected took, from its submission to its bytes in `out`.
  double last_encode_ms() const;
  /// Where a frame's time goes, as a profiler would show it: with time_passes(true), each pass
  /// of a submitted frame is waited for and timed from the host (which slows the frame by a
  /// wait a pass, and lets no frame overlap another). The last submitted frame's passes, in
  /// order.
  struct PassTime {
    std::string_view pass;
    double ms;
  };
  void time_passes(bool on);
  std::vector<PassTime> last_pass_times() const;

 private:
  struct Impl;
  explicit GpuEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmavideo::prores
