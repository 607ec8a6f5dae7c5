// SPDX-License-Identifier: Apache-2.0
// The CUDA loader against the stand-in driver (tests/fakecuda): what it reports, how each
// missing piece is named, and that device memory round-trips without the CPU touching it;
// and every room's kernels loaded through it (cuda::Module), against their CPU arithmetic:
// the frame verifier's (diag), NVENC's conversions (codecs), the canvas's (media) and the
// ProRes encoder's. A real GPU runs the same calls in the `gpu` tests.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "canvas_kernels.hpp"
#include "canvas_pixels.hpp"
#include "fake_cuda.hpp"
#include "gpu/gpu_passes.hpp"
#include "nvenc_convert.hpp"
#include "nvenc_pixels.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/prores.hpp"
#include "testsrc/first_difference.hpp"

namespace rdmavideo::cuda {
namespace {

// Checks shared by the stand-in's tests and the real GPU's: the same calls, either driver.

// Pitched copies: three rows of 64 bytes from host rows 100 apart into device rows 128
// apart, and back into packed rows, land where the pitches say.
void expect_pitched_copies_keep_rows(Device& device) {
  std::vector<std::byte> src(300), out(192);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
  auto memory = device.allocate(3 * 128);
  auto stream = device.create_stream();
  ASSERT_TRUE(memory && stream);
  ASSERT_TRUE(device.fill(**memory, std::byte{0}, 3 * 128));
  ASSERT_TRUE((*stream)->copy_2d_async(Pitched::device(**memory, 128),
                                       Pitched::host(src.data(), 100), 64, 3));
  ASSERT_TRUE((*stream)->copy_2d_async(Pitched::host(out.data(), 64),
                                       Pitched::device(**memory, 128), 64, 3));
  ASSERT_TRUE((*stream)->synchronize());
  for (size_t row = 0; row < 3; ++row) {
    EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(row * 64),
                           out.begin() + static_cast<ptrdiff_t>(row * 64 + 64),
                           src.begin() + static_cast<ptrdiff_t>(row * 100)))
        << "row " << row;
  }
  std::vector<std::byte> padded(3 * 128);
  ASSERT_TRUE(device.download(padded, **memory));
  EXPECT_EQ(padded[64], std::byte{0});  // the pitch's padding is not written
}

// The first-difference kernel over `bytes` (not a multiple of 16, so the tail is looked at
// too), with differences planted at `at`.
void expect_first_difference(const std::shared_ptr<Device>& device, size_t bytes,
                             std::vector<uint64_t> at) {
  auto kernels = diag::FirstDifference::load(*device);
  if (!RDMAVIDEO_CUDA_KERNELS) {
    ASSERT_FALSE(kernels);
    EXPECT_NE(kernels.error().message().find("this build has no CUDA kernels"), std::string::npos)
        << kernels.error().message();
    return;
  }
  ASSERT_TRUE(kernels) << kernels.error().message();
  std::vector<std::byte> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<std::byte>(i * 31 + 3);
  auto a = device->allocate(bytes);
  auto b = device->allocate(bytes);
  auto stream = device->create_stream();
  ASSERT_TRUE(a && b && stream);
  ASSERT_TRUE(device->upload(**a, host));
  ASSERT_TRUE(device->upload(**b, host));
  auto same = (*kernels)->find(**stream, **a, **b, 0, bytes);
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_FALSE(*same);
  for (uint64_t where : at) host[where] ^= std::byte{0x40};
  ASSERT_TRUE(device->upload(**b, host));
  std::sort(at.begin(), at.end());
  for (size_t i = 0; i < at.size(); ++i) {
    const uint64_t from = i == 0 ? 0 : at[i - 1] + 1;
    auto first = (*kernels)->find(**stream, **a, **b, from, bytes);
    ASSERT_TRUE(first) << first.error().message();
    ASSERT_TRUE(*first) << "from " << from;
    EXPECT_EQ(**first, at[i]) << "from " << from;
  }
  auto none = (*kernels)->find(**stream, **a, **b, at.back() + 1, bytes);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_FALSE((*kernels)->find(**stream, **a + 1, **b, 0, bytes - 1)) << "unaligned";
}

// A test-pattern frame in GPU memory verified in place: a good one passes; a changed byte
// in plane 1 or in the stamp is named as FrameVerifier names it on the host; a frame with a
// checksum is downloaded and checked whole.
void expect_gpu_verifier_agrees_with_the_host(const std::shared_ptr<Device>& device) {
  auto format = proto::make_stream_start(PixelFormat::nv12, 640, 360, Rational{60, 1});
  ASSERT_TRUE(format);
  format->flags |= proto::kStreamTestPattern;
  auto verifier = GpuFrameVerifier::create(*format, device);
  if (!RDMAVIDEO_CUDA_KERNELS) {
    ASSERT_FALSE(verifier);
    return;
  }
  ASSERT_TRUE(verifier) << verifier.error().message();
  const FrameVerifier host(*format);
  const uint32_t bytes = format->layout.frame_bytes;
  std::vector<std::byte> frame(bytes);
  const uint64_t sequence = 5;
  TestPattern::render_phase(*format, sequence % TestPattern::phase_count(bytes), frame);
  TestPattern::stamp(*format, frame, sequence);
  auto memory = device->allocate(bytes);
  ASSERT_TRUE(memory);
  proto::FrameWritten info{};
  info.sequence = sequence;
  auto check = [&](const std::vector<std::byte>& data) {
    EXPECT_TRUE(device->upload(**memory, data));
    auto on_gpu = (*verifier)->verify(info, **memory);
    EXPECT_TRUE(on_gpu) << on_gpu.error().message();
    return std::pair{on_gpu ? *on_gpu : std::optional<std::string>{"failed"},
                     host.verify(info, data)};
  };
  auto good = check(frame);
  EXPECT_FALSE(good.first) << *good.first;
  EXPECT_FALSE(good.second);
  auto changed = frame;
  changed[format->layout.planes[1].offset + 1000] ^= std::byte{1};
  auto plane1 = check(changed);
  ASSERT_TRUE(plane1.first && plane1.second);
  EXPECT_EQ(*plane1.first, *plane1.second);
  EXPECT_NE(plane1.first->find("plane 1 byte 1000"), std::string::npos) << *plane1.first;
  info.sequence = sequence + TestPattern::phase_count(bytes);  // same phase, another number
  auto stamp = check(frame);
  ASSERT_TRUE(stamp.first && stamp.second);
  EXPECT_EQ(*stamp.first, *stamp.second);
  info.sequence = sequence;
  EXPECT_TRUE(GpuFrameVerifier::in_place(info));
  info.flags |= proto::kFrameHasChecksum;
  info.checksum = frame_checksum(frame) ^ 1;
  EXPECT_FALSE(GpuFrameVerifier::in_place(info));
  auto summed = check(frame);
  ASSERT_TRUE(summed.first && summed.second);
  EXPECT_EQ(*summed.first, *summed.second);
  EXPECT_NE(summed.first->find("checksum"), std::string::npos);
}

// A conversion run by the kernels on `device`, planes packed (pitch = row bytes + 64, so
// pitches are honoured), and the same computed on the CPU by nvenc_pixels.hpp: the
// kernel's output, the CPU's, as host bytes per output plane.
struct Converted {
  std::vector<std::vector<uint8_t>> gpu, cpu;
};
Converted run_conversion(const std::shared_ptr<Device>& device,
                         av::NvencConvert::Conversion conversion,
                         const std::vector<std::vector<uint8_t>>& in_planes,
                         const std::vector<size_t>& in_pitch, const std::vector<size_t>& out_rows,
                         const std::vector<size_t>& out_pitch, unsigned width, unsigned height) {
  Converted result;
  auto kernels = av::NvencConvert::load(*device);
  EXPECT_TRUE(kernels) << kernels.error().message();
  if (!kernels) return result;
  auto stream = device->create_stream();
  EXPECT_TRUE(stream);
  std::vector<std::shared_ptr<DevicePtr>> held;
  av::NvencConvert::Planes in, out;
  for (size_t p = 0; p < in_planes.size(); ++p) {
    auto memory = device->allocate(in_planes[p].size());
    EXPECT_TRUE(memory);
    EXPECT_TRUE(device->upload(**memory, std::as_bytes(std::span(in_planes[p]))));
    in.at[p] = **memory;
    in.pitch[p] = in_pitch[p];
    held.push_back(*memory);
  }
  for (size_t p = 0; p < out_rows.size(); ++p) {
    auto memory = device->allocate(out_rows[p] * out_pitch[p]);
    EXPECT_TRUE(memory);
    EXPECT_TRUE(device->fill(**memory, std::byte{0}, out_rows[p] * out_pitch[p]));
    out.at[p] = **memory;
    out.pitch[p] = out_pitch[p];
    held.push_back(*memory);
    result.cpu.emplace_back(out_rows[p] * out_pitch[p], 0);
  }
  auto ok = kernels->convert(**stream, conversion, in, out, width, height);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE((*stream)->synchronize());
  for (size_t p = 0; p < out_rows.size(); ++p) {
    std::vector<uint8_t> bytes(out_rows[p] * out_pitch[p]);
    EXPECT_TRUE(device->download(std::as_writable_bytes(std::span(bytes)), out.at[p]));
    result.gpu.push_back(std::move(bytes));
  }
  namespace px = av::nvenc;
  for (unsigned row2 = 0; row2 < (height + 1) / 2; ++row2) {
    for (unsigned pair = 0; pair < (width + 1) / 2; ++pair) {
      if (conversion == av::NvencConvert::Conversion::uyvy_to_nv12 ||
          conversion == av::NvencConvert::Conversion::yuy2_to_nv12) {
        px::packed422_to_nv12(
            in_planes[0].data(), in_pitch[0], result.cpu[0].data(), out_pitch[0],
            result.cpu[1].data(), out_pitch[1], width, height, pair, row2,
            conversion == av::NvencConvert::Conversion::uyvy_to_nv12 ? px::kUyvy : px::kYuy2);
      } else if (conversion == av::NvencConvert::Conversion::yuv422p10_to_p010) {
        px::yuv422p10_to_p010(in_planes[0].data(), in_pitch[0], in_planes[1].data(), in_pitch[1],
                              in_planes[2].data(), in_pitch[2], result.cpu[0].data(), out_pitch[0],
                              result.cpu[1].data(), out_pitch[1], width, height, pair, row2);
      }
    }
  }
  if (conversion == av::NvencConvert::Conversion::rgb24_to_rgb0) {
    for (unsigned row = 0; row < height; ++row) {
      for (unsigned x = 0; x < width; ++x)
        px::rgb24_to_rgb0(in_planes[0].data(), in_pitch[0], result.cpu[0].data(), out_pitch[0], x,
                          row);
    }
  }
  return result;
}

std::vector<uint8_t> noise(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  for (auto& b : v) b = static_cast<uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
  return v;
}

// Every conversion on a frame of noise (odd height, pitches wider than the rows) gives
// what nvenc_pixels.hpp says, byte for byte, padding untouched.
void expect_conversions_match_the_cpu(const std::shared_ptr<Device>& device, unsigned width,
                                      unsigned height) {
  if (!RDMAVIDEO_CUDA_KERNELS) {
    EXPECT_FALSE(av::NvencConvert::load(*device));
    return;
  }
  const size_t rows2 = (height + 1) / 2, pairs = (width + 1) / 2;
  for (auto conversion :
       {av::NvencConvert::Conversion::uyvy_to_nv12, av::NvencConvert::Conversion::yuy2_to_nv12}) {
    const size_t pitch = pairs * 4 + 64;
    auto r = run_conversion(device, conversion, {noise(pitch * height, 1)}, {pitch},
                            {height, rows2}, {width + 64, pairs * 2 + 64}, width, height);
    ASSERT_EQ(r.gpu.size(), 2u);
    EXPECT_TRUE(r.gpu == r.cpu) << "packed 4:2:2 to nv12";
  }
  const size_t y_pitch = width * 2 + 64, c_pitch = pairs * 2 + 64;
  auto p10 = run_conversion(
      device, av::NvencConvert::Conversion::yuv422p10_to_p010,
      {noise(y_pitch * height, 2), noise(c_pitch * height, 3), noise(c_pitch * height, 4)},
      {y_pitch, c_pitch, c_pitch}, {height, rows2}, {width * 2 + 64, pairs * 4 + 64}, width,
      height);
  ASSERT_EQ(p10.gpu.size(), 2u);
  EXPECT_TRUE(p10.gpu == p10.cpu) << "yuv422p10 to p010";
  const size_t rgb_pitch = width * 3 + 64;
  auto rgb = run_conversion(device, av::NvencConvert::Conversion::rgb24_to_rgb0,
                            {noise(rgb_pitch * height, 5)}, {rgb_pitch}, {height}, {width * 4 + 64},
                            width, height);
  ASSERT_EQ(rgb.gpu.size(), 1u);
  EXPECT_TRUE(rgb.gpu == rgb.cpu) << "rgb24 to rgb0";
}

// The canvas kernels (canvas_pixels.hpp) on a 70x42 NV12 canvas, pitches wider than its
// rows: every layout of noise (53x31, odd sizes, padded pitches) placed into an area it is
// scaled up into, one it is scaled down into beyond 2:1 and one it is scaled down into across
// and up into down, a fill and a gray band, against the same
// functions run on the CPU, byte for byte; outside the areas nothing is written.
void expect_canvas_kernels_match_the_cpu(const std::shared_ptr<Device>& device) {
  if (!RDMAVIDEO_CUDA_KERNELS) {
    EXPECT_FALSE(media::CanvasKernels::load(*device));
    return;
  }
  namespace px = media::canvas;
  auto kernels = media::CanvasKernels::load(*device);
  ASSERT_TRUE(kernels) << kernels.error().message();
  auto stream = device->create_stream();
  ASSERT_TRUE(stream);
  constexpr unsigned kW = 70, kH = 42, kYPitch = 96, kUvPitch = 128;
  const size_t canvas_bytes = kYPitch * kH + kUvPitch * kH / 2;
  auto canvas = device->allocate(canvas_bytes);
  ASSERT_TRUE(canvas);
  std::vector<uint8_t> cpu(canvas_bytes, 7);
  ASSERT_TRUE(device->upload(**canvas, std::as_bytes(std::span(cpu))));
  media::CanvasKernels::Nv12 nv12;
  nv12.planes.at[0] = **canvas;
  nv12.planes.pitch[0] = kYPitch;
  nv12.planes.at[1] = **canvas + kYPitch * kH;
  nv12.planes.pitch[1] = kUvPitch;
  nv12.width = kW;
  nv12.height = kH;
  nv12.bt709 = false;
  px::Target target{cpu.data(), cpu.data() + kYPitch * kH, kYPitch, kUvPitch, kW, kH, 0};
  auto run_cpu = [&](const px::Area& area, auto&& block) {
    for (int row2 = 0; row2 < area.height / 2; ++row2) {
      for (int pair = 0; pair < area.width / 2; ++pair)
        block(static_cast<unsigned>(pair), static_cast<unsigned>(row2));
    }
  };
  constexpr unsigned kSrcW = 53, kSrcH = 31;
  // Up both ways; down beyond 2:1 both ways (area averages over fractions of pixels); down
  // beyond 2:1 across and up down.
  const media::CanvasKernels::Area areas[3] = {{2, 4, 66, 36}, {40, 2, 18, 10}, {60, 0, 8, 40}};
  std::vector<std::shared_ptr<DevicePtr>> held;
  uint32_t seed = 11;
  for (int layout = 0; layout < px::layout::kLayouts; ++layout) {
    media::CanvasKernels::Picture picture;
    picture.layout = static_cast<media::CanvasKernels::Layout>(layout);
    picture.width = kSrcW;
    picture.height = kSrcH;
    picture.bits = layout == px::layout::kYuv444p16 ? 12 : 10;
    px::Source source{};
    source.width = kSrcW;
    source.height = kSrcH;
    source.layout = layout;
    source.bits = picture.bits;
    std::vector<std::vector<uint8_t>> planes;
    for (int p = 0; p < px::plane_count(layout); ++p) {
      const size_t pitch = px::plane_row_bytes(layout, p, kSrcW) + 32;
      planes.push_back(noise(pitch * px::plane_rows(layout, p, kSrcH), ++seed));
      auto memory = device->allocate(planes.back().size());
      ASSERT_TRUE(memory);
      ASSERT_TRUE(device->upload(**memory, std::as_bytes(std::span(planes.back()))));
      picture.planes.at[p] = **memory;
      picture.planes.pitch[p] = pitch;
      source.plane[p] = planes.back().data();
      source.pitch[p] = pitch;
      held.push_back(*memory);
    }
    for (const media::CanvasKernels::Area& a : areas) {
      auto ok = kernels->place(**stream, picture, nv12, a);
      ASSERT_TRUE(ok) << ok.error().message();
      const px::Area area{a.x, a.y, a.width, a.height};
      run_cpu(area, [&](unsigned pair, unsigned row2) {
        px::place_nv12(source, target, area, pair, row2);
      });
    }
    ASSERT_TRUE((*stream)->synchronize());
    std::vector<uint8_t> gpu(canvas_bytes);
    ASSERT_TRUE(device->download(std::as_writable_bytes(std::span(gpu)), **canvas));
    EXPECT_TRUE(gpu == cpu) << "layout " << layout;
  }
  // A fill (sRGB made YUV by BT.601) and a band of gray levels.
  const media::CanvasKernels::Area fill_area{10, 6, 20, 8};
  ASSERT_TRUE(kernels->fill(**stream, nv12, fill_area, 200, 100, 50));
  const px::Area fa{10, 6, 20, 8};
  run_cpu(fa, [&](unsigned pair, unsigned row2) {
    px::fill_nv12(target, fa, px::rgb_to_yuv(200, 100, 50, 0), pair, row2);
  });
  const std::vector<uint8_t> band = noise(14 * 6, 99);
  auto luma = device->allocate(band.size());
  ASSERT_TRUE(luma);
  ASSERT_TRUE(device->upload(**luma, std::as_bytes(std::span(band))));
  ASSERT_TRUE(kernels->gray(**stream, **luma, 14, nv12, {50, 30, 14, 6}));
  const px::Area ga{50, 30, 14, 6};
  run_cpu(ga, [&](unsigned pair, unsigned row2) {
    px::gray_nv12(band.data(), 14, target, ga, pair, row2);
  });
  ASSERT_TRUE((*stream)->synchronize());
  std::vector<uint8_t> gpu(canvas_bytes);
  ASSERT_TRUE(device->download(std::as_writable_bytes(std::span(gpu)), **canvas));
  EXPECT_TRUE(gpu == cpu) << "fill and gray";
  EXPECT_EQ(gpu[0], 7) << "outside every area";
  EXPECT_EQ(gpu[kYPitch - 1], 7) << "the pitch's padding";
  // An area that is odd or leaves the canvas is refused, naming it.
  auto odd = kernels->fill(**stream, nv12, {1, 0, 4, 4}, 0, 0, 0);
  ASSERT_FALSE(odd);
  EXPECT_NE(
      odd.error().message().find("4x4 at (1, 0) is not an even rectangle inside the 70x42 canvas"),
      std::string::npos)
      << odd.error().message();
  EXPECT_FALSE(kernels->fill(**stream, nv12, {64, 0, 8, 4}, 0, 0, 0));
}

// The ProRes encoder's input made on the GPU from each format a stream carries, against what
// each format means, sample by sample: a picture of `width` x `height` with noisy samples in
// each input layout (planes with pitches wider than their rows), converted, downloaded and
// checked against 10-bit 4:2:2 reckoned here: 8-bit samples times 4, p010 shifted down six
// bits, 4:2:0 chroma three parts the nearer chroma row and one the other (edges repeated),
// v210 unpacked, 10-bit planar samples masked to their low 10 bits.
void expect_to_yuv422p10(const std::shared_ptr<Device>& device, uint32_t width, uint32_t height) {
  using Input = prores::GpuInput;
  const uint32_t pairs = (width + 1) / 2, half = (height + 1) / 2;
  uint32_t seed = 777;
  auto noise = [&] {
    seed = seed * 1103515245 + 12345;
    return seed >> 8;
  };
  auto stream = device->create_stream();
  ASSERT_TRUE(stream);
  auto kernels = prores::GpuPasses::load(*device);
  if (!RDMAVIDEO_CUDA_KERNELS) {
    ASSERT_FALSE(kernels);
    return;
  }
  ASSERT_TRUE(kernels) << kernels.error().message();
  std::vector<std::shared_ptr<DevicePtr>> memory;
  // A plane of `rows` x `bytes` in device memory, 128 bytes wider than its rows.
  auto upload = [&](const std::vector<uint8_t>& bytes, uint32_t rows, size_t row_bytes,
                    DevicePtr& at, size_t& pitch) {
    pitch = (row_bytes + 127) / 128 * 128 + 128;
    auto memory_at = device->allocate(pitch * rows);
    ASSERT_TRUE(memory_at);
    memory.push_back(*memory_at);
    ASSERT_TRUE((*stream)->copy_2d_async(
        Pitched::device(**memory_at, pitch),
        Pitched::host(reinterpret_cast<const std::byte*>(bytes.data()), row_bytes), row_bytes,
        rows));
    ASSERT_TRUE((*stream)->synchronize());
    at = **memory_at;
  };
  for (Input input : {Input::uyvy, Input::yuy2, Input::nv12, Input::i420, Input::p010,
                      Input::yuv422p10, Input::v210}) {
    SCOPED_TRACE(static_cast<int>(input));
    // What the picture should be, and the input that means it.
    std::vector<uint16_t> want[3] = {std::vector<uint16_t>(size_t{width} * height),
                                     std::vector<uint16_t>(size_t{pairs} * height),
                                     std::vector<uint16_t>(size_t{pairs} * height)};
    std::vector<uint8_t> in[3];
    size_t in_bytes[3] = {};
    uint32_t in_rows[3] = {height, 0, 0};
    auto put16 = [](std::vector<uint8_t>& v, size_t i, unsigned value) {
      v[2 * i] = static_cast<uint8_t>(value), v[2 * i + 1] = static_cast<uint8_t>(value >> 8);
    };
    switch (input) {
      case Input::uyvy:
      case Input::yuy2: {
        in_bytes[0] = pairs * 4u;
        in[0].resize(in_bytes[0] * height);
        const bool u_first = input == Input::uyvy;
        for (uint32_t r = 0; r < height; ++r) {
          for (uint32_t q = 0; q < pairs; ++q) {
            uint8_t* px = &in[0][r * in_bytes[0] + q * 4];
            for (int b = 0; b < 4; ++b) px[b] = static_cast<uint8_t>(noise());
            const int y = u_first ? 1 : 0, u = u_first ? 0 : 1;
            want[0][r * width + 2 * q] = px[y] * 4;
            if (2 * q + 1 < width) want[0][r * width + 2 * q + 1] = px[y + 2] * 4;
            want[1][r * pairs + q] = px[u] * 4;
            want[2][r * pairs + q] = px[u + 2] * 4;
          }
        }
        break;
      }
      case Input::nv12:
      case Input::i420:
      case Input::p010: {
        const bool ten = input == Input::p010;
        const uint32_t bytes = ten ? 2 : 1;
        in_bytes[0] = width * bytes;
        in[0].resize(in_bytes[0] * height);
        std::vector<unsigned> cb(size_t{pairs} * half), cr(cb.size());
        for (auto& v : cb) v = ten ? noise() % 1024 : noise() % 256;
        for (auto& v : cr) v = ten ? noise() % 1024 : noise() % 256;
        for (uint32_t i = 0; i < width * height; ++i) {
          const unsigned v = ten ? noise() % 1024 : noise() % 256;
          if (ten)
            put16(in[0], i, v << 6);
          else
            in[0][i] = static_cast<uint8_t>(v);
          want[0][i] = static_cast<uint16_t>(ten ? v : v * 4);
        }
        if (input == Input::i420) {
          in_bytes[1] = in_bytes[2] = pairs, in_rows[1] = in_rows[2] = half;
          in[1].resize(size_t{pairs} * half), in[2].resize(size_t{pairs} * half);
          for (size_t i = 0; i < cb.size(); ++i) in[1][i] = cb[i], in[2][i] = cr[i];
        } else {
          in_bytes[1] = pairs * 2u * bytes, in_rows[1] = half;
          in[1].resize(in_bytes[1] * half);
          for (size_t i = 0; i < cb.size(); ++i) {
            if (ten)
              put16(in[1], 2 * i, cb[i] << 6), put16(in[1], 2 * i + 1, cr[i] << 6);
            else
              in[1][2 * i] = static_cast<uint8_t>(cb[i]),
                        in[1][2 * i + 1] = static_cast<uint8_t>(cr[i]);
          }
        }
        for (uint32_t r = 0; r < height; ++r) {
          const uint32_t near = r / 2;
          const uint32_t far = std::clamp<int>(r % 2 ? near + 1 : static_cast<int>(near) - 1, 0,
                                               static_cast<int>(half) - 1);
          for (uint32_t q = 0; q < pairs; ++q) {
            auto mix = [&](const std::vector<unsigned>& c) {
              const unsigned sum = 3 * c[near * pairs + q] + c[far * pairs + q];
              return static_cast<uint16_t>(ten ? (sum + 2) / 4 : sum);
            };
            want[1][r * pairs + q] = mix(cb), want[2][r * pairs + q] = mix(cr);
          }
        }
        break;
      }
      case Input::yuv422p10: {
        const uint32_t samples[3] = {width, pairs, pairs};
        for (int p = 0; p < 3; ++p) {
          in_bytes[p] = samples[p] * 2u, in_rows[p] = height;
          in[p].resize(in_bytes[p] * height);
          for (size_t i = 0; i < want[p].size(); ++i) {
            const unsigned word = noise() & 0xffff;  // bits above the tenth too
            put16(in[p], i, word);
            want[p][i] = static_cast<uint16_t>(word & 0x3ff);
          }
        }
        break;
      }
      case Input::v210: {
        in_bytes[0] = (width + 5) / 6 * 16u;
        in[0].assign(in_bytes[0] * height, 0);
        for (uint32_t r = 0; r < height; ++r) {
          // The samples in order of the words: Cb Y Cr Y, pair by pair, three numbers a word.
          std::vector<unsigned> order;
          for (uint32_t q = 0; q < (width + 5) / 6 * 3; ++q) {
            const unsigned y0 = noise() % 1024, y1 = noise() % 1024, u = noise() % 1024,
                           v = noise() % 1024;
            order.insert(order.end(), {u, y0, v, y1});
            if (q < pairs) {
              want[0][r * width + 2 * q] = static_cast<uint16_t>(y0);
              if (2 * q + 1 < width) want[0][r * width + 2 * q + 1] = static_cast<uint16_t>(y1);
              want[1][r * pairs + q] = static_cast<uint16_t>(u);
              want[2][r * pairs + q] = static_cast<uint16_t>(v);
            }
          }
          for (size_t i = 0; i < order.size(); ++i) {
            const size_t word = i / 3;
            uint8_t* w = &in[0][r * in_bytes[0] + word * 4];
            uint32_t value = w[0] | w[1] << 8 | w[2] << 16 | static_cast<uint32_t>(w[3]) << 24;
            value |= order[i] << (10 * (i % 3));
            for (int b = 0; b < 4; ++b) w[b] = static_cast<uint8_t>(value >> (8 * b));
          }
        }
        break;
      }
    }
    prores::DevicePlanes from;
    for (int p = 0; p < 3; ++p) {
      if (!in[p].empty()) upload(in[p], in_rows[p], in_bytes[p], from.at[p], from.pitch[p]);
    }
    prores::DevicePicture to{{}, width, height};
    for (int p = 0; p < 3; ++p) {
      std::vector<uint8_t> zero((p ? pairs : width) * 2u * height, 0);
      upload(zero, height, (p ? pairs : width) * 2u, to.planes.at[p], to.planes.pitch[p]);
    }
    ASSERT_TRUE(kernels->make_picture(**stream, input, from, to));
    ASSERT_TRUE((*stream)->synchronize());
    for (int p = 0; p < 3; ++p) {
      const uint32_t samples = p ? pairs : width;
      std::vector<uint16_t> got(want[p].size());
      ASSERT_TRUE((*stream)->copy_2d_async(
          Pitched::host(reinterpret_cast<std::byte*>(got.data()), samples * 2),
          Pitched::device(to.planes.at[p], to.planes.pitch[p]), samples * 2, height));
      ASSERT_TRUE((*stream)->synchronize());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], want[p][i])
            << "plane " << p << " row " << i / samples << " sample " << i % samples;
      }
    }
  }
}

// A noisy 10-bit 4:2:2 picture of `width` x `height` (planes Y, Cb, Cr), from `seed`.
std::vector<std::vector<uint16_t>> prores_picture(uint32_t width, uint32_t height, uint32_t seed) {
  const uint32_t cw = (width + 1) / 2;
  std::vector<std::vector<uint16_t>> planes = {std::vector<uint16_t>(size_t{width} * height),
                                               std::vector<uint16_t>(size_t{cw} * height),
                                               std::vector<uint16_t>(size_t{cw} * height)};
  for (auto& plane : planes) {
    for (size_t i = 0; i < plane.size(); ++i) {
      seed = seed * 1103515245 + 12345;
      plane[i] = static_cast<uint16_t>(64 + (i % width) * 3 % 800 + (seed >> 16) % 97);
    }
  }
  return planes;
}

// Device memory for such a picture, pitches wider than its rows.
struct DeviceProresPicture {
  prores::DevicePicture picture;
  std::vector<std::shared_ptr<DevicePtr>> memory;
};
DeviceProresPicture allocate_prores_picture(const std::shared_ptr<Device>& device, uint32_t width,
                                            uint32_t height) {
  DeviceProresPicture out{{{}, width, height}, {}};
  for (int p = 0; p < 3; ++p) {
    const uint32_t samples = p == 0 ? width : (width + 1) / 2;
    const size_t pitch = (samples * 2 + 255) / 256 * 256 + 256;
    auto at = device->allocate(pitch * height);
    EXPECT_TRUE(at);
    if (!at) return out;
    out.memory.push_back(*at);
    out.picture.planes.at[p] = **at;
    out.picture.planes.pitch[p] = pitch;
  }
  return out;
}
void upload_prores_picture(const std::shared_ptr<Device>& device,
                           const std::vector<std::vector<uint16_t>>& planes,
                           const prores::DevicePicture& to) {
  auto stream = device->create_stream();
  ASSERT_TRUE(stream);
  for (int p = 0; p < 3; ++p) {
    const size_t row = (p == 0 ? to.width : (to.width + 1) / 2) * 2u;
    ASSERT_TRUE((*stream)->copy_2d_async(
        Pitched::device(to.planes.at[p], to.planes.pitch[p]),
        Pitched::host(reinterpret_cast<const std::byte*>(planes[p].data()), row), row, to.height));
  }
  ASSERT_TRUE((*stream)->synchronize());
}

// The CPU twin's frame of the picture.
std::vector<uint8_t> prores_on_cpu(const prores::FrameFormat& format,
                                   const std::vector<std::vector<uint16_t>>& planes) {
  auto cpu = prores::Encoder::create(format);
  EXPECT_TRUE(cpu);
  if (!cpu) return {};
  std::vector<uint8_t> out(cpu->max_frame_bytes());
  const prores::Planes422 host{planes[0].data(), planes[1].data(), planes[2].data(), format.width,
                               (format.width + 1) / 2};
  auto size = cpu->encode(host, out);
  EXPECT_TRUE(size);
  out.resize(size ? *size : 0);
  return out;
}

std::string first_difference_of(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) {
    return std::to_string(got.size()) + " bytes, not " + std::to_string(want.size());
  }
  const auto differ = std::mismatch(got.begin(), got.end(), want.begin());
  return differ.first == got.end()
             ? "the same"
             : "first difference at byte " + std::to_string(differ.first - got.begin());
}

// The ProRes encoder's kernels against its CPU twin: a noisy 10-bit 4:2:2 picture of
// `width` x `height` (its planes in device memory with pitches wider than their rows) makes
// the same frame, byte for byte, both ways, in each profile; with `bits_per_mb`, aimed at that
// size instead of the profile's (a small one: frames that even the coarsest quantiser leaves
// over their target, read back in two parts).
void expect_prores_matches_the_cpu(const std::shared_ptr<Device>& device, uint32_t width,
                                   uint32_t height, uint32_t bits_per_mb = 0) {
  namespace pr = prores;
  const auto planes = prores_picture(width, height, 12345);
  auto picture = allocate_prores_picture(device, width, height);
  upload_prores_picture(device, planes, picture.picture);
  for (auto profile :
       {pr::Profile::proxy, pr::Profile::lt, pr::Profile::standard, pr::Profile::hq}) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " " +
                 std::string(pr::to_string(profile)) + " at " + std::to_string(bits_per_mb) +
                 " bits a macroblock");
    const pr::FrameFormat format{width, height, profile, 9, 16, 9, bits_per_mb};
    auto gpu = pr::GpuEncoder::create(device, format);
    if (!RDMAVIDEO_CUDA_KERNELS) {
      ASSERT_FALSE(gpu);
      EXPECT_NE(gpu.error().message().find("this build has no CUDA kernels"), std::string::npos);
      return;
    }
    ASSERT_TRUE(gpu) << gpu.error().message();
    std::vector<uint8_t> on_gpu((*gpu)->max_frame_bytes());
    auto gpu_size = (*gpu)->encode(picture.picture, on_gpu);
    ASSERT_TRUE(gpu_size) << gpu_size.error().message();
    on_gpu.resize(*gpu_size);
    const auto on_cpu = prores_on_cpu(format, planes);
    EXPECT_EQ(on_gpu, on_cpu) << first_difference_of(on_gpu, on_cpu);
  }
}

// Frames in flight: each picture made in the same device memory once submit() has returned
// (it has been read), the frames collected in order are the CPU twin's of each picture; one
// more than the encoder queues, encode() while frames are queued, and a collect() with none
// queued are refused, naming why.
void expect_prores_frames_in_flight(const std::shared_ptr<Device>& device, uint32_t width,
                                    uint32_t height) {
  namespace pr = prores;
  if (!RDMAVIDEO_CUDA_KERNELS) GTEST_SKIP() << "this build has no CUDA kernels";
  const pr::FrameFormat format{width, height, pr::Profile::hq, 1, 1, 1};
  auto picture = allocate_prores_picture(device, width, height);
  std::vector<std::vector<std::vector<uint16_t>>> pictures;
  for (uint32_t seed = 1; seed <= 7; ++seed)
    pictures.push_back(prores_picture(width, height, seed));
  auto gpu = pr::GpuEncoder::create(device, format, 3);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_EQ((*gpu)->frames_in_flight(), 3u);
  std::vector<uint8_t> out((*gpu)->max_frame_bytes());
  const auto collect_as = [&](size_t k) {
    auto size = (*gpu)->collect(out);
    ASSERT_TRUE(size) << size.error().message();
    const std::vector<uint8_t> got(out.begin(), out.begin() + long(*size));
    const auto want = prores_on_cpu(format, pictures[k]);
    EXPECT_EQ(got, want) << "picture " << k << ": " << first_difference_of(got, want);
  };
  // Three queued at once, each made where the last was.
  for (size_t k = 0; k < 3; ++k) {
    upload_prores_picture(device, pictures[k], picture.picture);
    ASSERT_TRUE((*gpu)->submit(picture.picture));
    EXPECT_EQ((*gpu)->queued(), k + 1);
  }
  auto refused = (*gpu)->submit(picture.picture);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("3 frames in flight already: collect one first"),
            std::string::npos)
      << refused.error().message();
  auto alone = (*gpu)->encode(picture.picture, out);
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message().find("collect them before encoding one alone"),
            std::string::npos)
      << alone.error().message();
  // A picture of another size, and too little room for a frame: refused, naming why, and
  // nothing queued is lost.
  prores::DevicePicture smaller = picture.picture;
  smaller.width = width - 1;
  auto other = (*gpu)->submit(smaller);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find(std::to_string(width - 1) + "x" + std::to_string(height) +
                                         " picture for a " + std::to_string(width) + "x" +
                                         std::to_string(height)),
            std::string::npos)
      << other.error().message();
  std::vector<uint8_t> little(100);
  auto cramped = (*gpu)->collect(little);
  ASSERT_FALSE(cramped);
  EXPECT_NE(cramped.error().message().find("100 bytes for a frame of up to"), std::string::npos)
      << cramped.error().message();
  EXPECT_EQ((*gpu)->queued(), 3u);
  for (size_t k = 0; k < 3; ++k) collect_as(k);
  auto none = (*gpu)->collect(out);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("no frame in flight"), std::string::npos);
  // Then as a recorder runs it: one submitted, the oldest collected once three are queued.
  size_t collected = 3;
  for (size_t k = 3; k < pictures.size(); ++k) {
    upload_prores_picture(device, pictures[k], picture.picture);
    ASSERT_TRUE((*gpu)->submit(picture.picture));
    if ((*gpu)->queued() == 3) collect_as(collected++);
  }
  while ((*gpu)->queued() > 0) collect_as(collected++);
  EXPECT_EQ(collected, pictures.size());
  auto wrong = pr::GpuEncoder::create(device, format, 0);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("0 frames in flight (1 to 8)"), std::string::npos);
}

#ifndef RDMAVIDEO_REAL_GPU
// "7.5, 8.0" for "75,80", as the kernels' load error names capabilities.
std::string expected_capabilities(std::string_view list) {
  std::string out;
  for (size_t at = 0; at < list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view arch = list.substr(at, comma - at);
    out += fmt::format("{}{}.{}", out.empty() ? "" : ", ", arch.substr(0, arch.size() - 1),
                       arch.back());
    at = comma + 1;
  }
  return out;
}

const FakeCudaCounters& counters() {
  void* lib = dlopen(RDMAVIDEO_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr);
  auto fn = reinterpret_cast<const FakeCudaCounters* (*)()>(dlsym(lib, "fake_cuda_counters"));
  dlclose(lib);
  return *fn();
}

// Sets an environment variable of the fake driver for one test.
class FakeEnv {
 public:
  FakeEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~FakeEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

std::shared_ptr<Driver> load_fake() {
  auto driver = Driver::load(RDMAVIDEO_FAKE_CUDA);
  EXPECT_TRUE(driver) << driver.error().message();
  return driver ? *driver : nullptr;
}

// The stand-in's device 0, opened as the environment now describes it (it keeps its driver).
std::shared_ptr<Device> fake_device() {
  auto driver = load_fake();
  if (!driver) return nullptr;
  auto device = driver->open(0);
  EXPECT_TRUE(device) << device.error().message();
  return device ? *device : nullptr;
}

TEST(CudaDriver, AMissingLibrarySaysThereIsNoDriver) {
  auto driver = Driver::load("libcuda-that-is-not-here.so.1");
  ASSERT_FALSE(driver);
  EXPECT_EQ(driver.error().code(), ErrorCode::unsupported);
  EXPECT_NE(driver.error().message().find("no CUDA driver (libcuda-that-is-not-here.so.1"),
            std::string::npos)
      << driver.error().message();
}

TEST(CudaDriver, ReportsVersionDevicesAndFacts) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->version(), 13000);
  EXPECT_EQ(driver->version_text(), "13.0");
  EXPECT_EQ(driver->device_count(), 1);
  EXPECT_NE(driver->library().find("libcuda.so.1"), std::string::npos);
  auto facts = driver->facts(0);
  ASSERT_TRUE(facts) << facts.error().message();
  EXPECT_EQ(facts->name, "Fake GPU 0");
  EXPECT_EQ(facts->pci_bus_id, "0000:41:00.0");
  EXPECT_EQ(facts->compute_major, 9);
  EXPECT_TRUE(facts->dmabuf_supported);
  EXPECT_EQ(facts->rdma_writes_ordering, 100);
  EXPECT_FALSE(needs_rdma_flush(*facts));
}

// Why loading the stand-in fails with `name` set to `value`.
std::string load_error(const char* name, const char* value) {
  FakeEnv env(name, value);
  auto driver = Driver::load(RDMAVIDEO_FAKE_CUDA);
  EXPECT_FALSE(driver);
  return driver ? std::string() : driver.error().message();
}

TEST(CudaDriver, NoDeviceIsNamedWithTheDriverVersion) {
  EXPECT_EQ(
      load_error("FAKE_CUDA_INIT", "100"),
      "CUDA driver 13.0: cuInit failed: CUDA_ERROR_NO_DEVICE (100); no CUDA device is visible");
}

TEST(CudaDriver, AnOrdinalBeyondTheDevicesNamesHowManyThereAre) {
  FakeEnv devices("FAKE_CUDA_DEVICES", "2");
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  auto device = driver->open(2);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().message(), "no CUDA device 2: the driver sees 2 (cuda:0..cuda:1)");
  EXPECT_TRUE(driver->open(1));
}

TEST(CudaDriver, ARequiredEntryPointMissingNamesItAndItsVersion) {
  EXPECT_EQ(load_error("FAKE_CUDA_MISSING", "cuMemcpyDtoHAsync"),
            "CUDA driver 13.0 lacks cuMemcpyDtoHAsync (ABI 3.2): update the NVIDIA driver");
}

TEST(CudaDriver, OptionalEntryPointsMissingDisableOnlyTheirFeature) {
  FakeEnv missing("FAKE_CUDA_MISSING", "cuMemGetHandleForAddressRange,cuFlushGPUDirectRDMAWrites");
  FakeEnv version("FAKE_CUDA_VERSION", "11040");
  FakeEnv ordering("FAKE_CUDA_ORDERING", "0");
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  EXPECT_FALSE(driver->has("cuMemGetHandleForAddressRange"));
  EXPECT_TRUE(driver->has("cuMemAlloc"));
  auto device = driver->open(0);
  ASSERT_TRUE(device) << device.error().message();
  auto memory = (*device)->allocate(1 << 20);
  ASSERT_TRUE(memory);
  auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
  ASSERT_FALSE(fd);
  EXPECT_EQ(
      fd.error().message(),
      "CUDA driver 11.4 has no cuMemGetHandleForAddressRange (11.7 or newer exports dma-bufs)");
  auto flushed = (*device)->flush_rdma_writes();
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().message().find("needs RDMA writes flushed"), std::string::npos);
}

TEST(CudaDevice, MemoryRoundTripsAndIs64KiBAligned) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  const uint64_t live = counters().allocations_live;
  {
    auto memory = device->allocate(3 * 65536 + 7);
    ASSERT_TRUE(memory) << memory.error().message();
    EXPECT_EQ(**memory % 65536, 0u);
    EXPECT_EQ(counters().allocations_live, live + 1);
    std::vector<std::byte> in(3 * 65536 + 7);
    std::iota(reinterpret_cast<uint8_t*>(in.data()),
              reinterpret_cast<uint8_t*>(in.data()) + in.size(), uint8_t{1});
    ASSERT_TRUE(device->upload(**memory, in));
    std::vector<std::byte> out(in.size());
    ASSERT_TRUE(device->download(out, **memory));
    EXPECT_EQ(in, out);
    ASSERT_TRUE(device->fill(**memory + 10, std::byte{0xAB}, 5));
    ASSERT_TRUE(device->download(out, **memory));
    EXPECT_EQ(out[9], in[9]);
    EXPECT_EQ(out[10], std::byte{0xAB});
    EXPECT_EQ(out[14], std::byte{0xAB});
    EXPECT_EQ(out[15], in[15]);
  }
  EXPECT_EQ(counters().allocations_live, live);
}

// cuMemAlloc promises alignment for any variable, not 64 KiB: where the driver hands out an
// address past a 64 KiB boundary, the allocation is made again with room to align it, and a
// page-aligned range of it exports as a dma-buf.
TEST(CudaDevice, MemoryIs64KiBAlignedEvenWhereCuMemAllocIsNot) {
  FakeEnv unaligned("FAKE_CUDA_ALIGN", "256");
  auto device = fake_device();
  ASSERT_TRUE(device);
  const uint64_t live = counters().allocations_live;
  {
    auto memory = device->allocate(100000);
    ASSERT_TRUE(memory) << memory.error().message();
    EXPECT_EQ(**memory % 65536, 0u) << "0x" << std::hex << **memory;
    EXPECT_EQ(counters().allocations_live, live + 1);  // the unaligned one was given back
    const size_t bytes = 100000 / 4096 * 4096 + 4096;  // as far as the page after the last byte
    auto fd = device->export_dmabuf(**memory, bytes);
    ASSERT_TRUE(fd) << fd.error().message();
    close(*fd);
    std::vector<std::byte> in(100000, std::byte{0x3c}), out(100000);
    ASSERT_TRUE(device->upload(**memory, in));
    ASSERT_TRUE(device->download(out, **memory));
    EXPECT_EQ(in, out);
  }
  EXPECT_EQ(counters().allocations_live, live);
}

// The driver exports only page-aligned ranges: an unaligned one is refused before it is
// asked, naming the address, the length and the page size.
TEST(CudaDevice, ADmabufExportOfAnUnalignedRangeIsRefusedNamingIt) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(1 << 20);
  ASSERT_TRUE(memory);
  const uint64_t exports = counters().dmabuf_exports;
  auto at = device->export_dmabuf(**memory + 256, 65536);
  ASSERT_FALSE(at);
  EXPECT_EQ(at.error().code(), ErrorCode::invalid_argument);
  EXPECT_EQ(
      at.error().message(),
      fmt::format(
          "cuda:0 (Fake GPU 0): cannot export 0x{:x} + 65536 bytes as a dma-buf: start and length "
          "must be multiples of the page size ({} bytes)",
          **memory + 256, sysconf(_SC_PAGESIZE)));
  auto length = device->export_dmabuf(**memory, 1000);
  ASSERT_FALSE(length);
  EXPECT_NE(length.error().message().find("+ 1000 bytes"), std::string::npos)
      << length.error().message();
  EXPECT_EQ(counters().dmabuf_exports, exports);
}

// The stand-in orders streams as CUDA does, so ordering bugs show: work on the NULL stream
// waits until something synchronises with it, and a non-blocking stream of ours does not.
TEST(CudaStream, OurStreamsDoNotWaitForTheNullStream) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(4096);
  auto stream = device->create_stream();
  ASSERT_TRUE(memory && stream);
  ASSERT_TRUE(device->fill(**memory, std::byte{0}, 4096));
  void* lib = dlopen(RDMAVIDEO_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using UploadAsync = int (*)(uint64_t, const void*, size_t, void*);
  using Synchronize = int (*)(void*);
  auto upload_async = reinterpret_cast<UploadAsync>(dlsym(lib, "cuMemcpyHtoDAsync_v2"));
  auto synchronize = reinterpret_cast<Synchronize>(dlsym(lib, "cuStreamSynchronize"));
  dlclose(lib);
  ASSERT_TRUE(upload_async && synchronize);
  const std::vector<std::byte> written(4096, std::byte{0x77});
  ASSERT_EQ(upload_async(**memory, written.data(), written.size(), nullptr),
            0);  // on the NULL stream
  std::vector<std::byte> seen(4096, std::byte{0xff});
  ASSERT_TRUE((*stream)->download_async(seen, **memory));
  ASSERT_TRUE((*stream)->synchronize());
  EXPECT_EQ(seen[100], std::byte{0}) << "our stream waited for the NULL stream";
  ASSERT_EQ(synchronize(nullptr), 0);
  ASSERT_TRUE((*stream)->download_async(seen, **memory));
  ASSERT_TRUE((*stream)->synchronize());
  EXPECT_EQ(seen[100], std::byte{0x77});
}

TEST(CudaDevice, TheCpuCannotTouchDeviceMemory) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(65536);
  ASSERT_TRUE(memory);
  const auto at = **memory;
  // The stand-in maps device addresses inaccessible, as they are on a GPU: a host read of a
  // device pointer is a crash there as here.
  EXPECT_DEATH(
      {
        volatile auto* p = reinterpret_cast<volatile uint8_t*>(at);
        std::exit(*p == 0 ? 3 : 4);
      },
      "");
}

TEST(CudaDevice, OutOfDeviceMemoryIsAResourceError) {
  FakeEnv memory("FAKE_CUDA_MEMORY", "1048576");
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto big = device->allocate(2 << 20);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::resource);
  EXPECT_EQ(big.error().message(),
            "cuda:0: cuMemAlloc of 2 MiB failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
}

TEST(CudaDevice, DmabufExportGivesADescriptorOrSaysWhyNot) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  {
    auto device = driver->open(0);
    ASSERT_TRUE(device);
    auto memory = (*device)->allocate(1 << 20);
    ASSERT_TRUE(memory);
    auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
    ASSERT_TRUE(fd) << fd.error().message();
    EXPECT_GE(*fd, 0);
    close(*fd);
  }
  FakeEnv off("FAKE_CUDA_DMABUF", "0");
  auto device = driver->open(0);  // facts are read when the device is opened
  ASSERT_TRUE(device);
  auto memory = (*device)->allocate(1 << 20);
  ASSERT_TRUE(memory);
  auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), ErrorCode::unsupported);
  EXPECT_NE(fd.error().message().find("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0"),
            std::string::npos);
}

TEST(CudaDevice, FlushOnlyWhereTheDeviceDoesNotOrderRdmaWrites) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  const uint64_t before = counters().flushes;
  {
    auto hopper = driver->open(0);  // ordering "owner": nothing to flush
    ASSERT_TRUE(hopper);
    ASSERT_TRUE((*hopper)->flush_rdma_writes());
    EXPECT_EQ(counters().flushes, before);
  }
  FakeEnv ordering("FAKE_CUDA_ORDERING", "0");
  auto older = driver->open(0);
  ASSERT_TRUE(older);
  EXPECT_TRUE(needs_rdma_flush((*older)->facts()));
  ASSERT_TRUE((*older)->flush_rdma_writes());
  EXPECT_EQ(counters().flushes, before + 1);
}

// A GPU that needs RDMA writes flushed and whose flush options lack the host bit cannot make
// them visible: the flush is refused naming why, before cuFlushGPUDirectRDMAWrites is called.
TEST(CudaDevice, AFlushNeededButNotSupportedIsRefusedNamingTheAttribute) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  FakeEnv ordering("FAKE_CUDA_ORDERING", "0");
  FakeEnv options("FAKE_CUDA_FLUSH_OPTIONS", "2");  // the stream memory operations only
  auto device = driver->open(0);
  ASSERT_TRUE(device);
  EXPECT_EQ((*device)->facts().rdma_flush_options, 2);
  EXPECT_TRUE(needs_rdma_flush((*device)->facts()));
  EXPECT_FALSE(can_flush_rdma_writes((*device)->facts(), *driver));
  const uint64_t before = counters().flushes;
  auto flushed = (*device)->flush_rdma_writes();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().code(), ErrorCode::unsupported);
  EXPECT_EQ(flushed.error().message(),
            "cuda:0 needs RDMA writes flushed before it reads them (GPUDirect RDMA writes ordering "
            "0) and "
            "cannot flush them (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS is 2: no "
            "host flush)");
  EXPECT_EQ(why_rdma_writes_not_visible((*device)->facts(), *driver), flushed.error().message());
  EXPECT_EQ(counters().flushes, before);
}

TEST(CudaStream, TicketsTellWhenCopiesFinished) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(4096);
  auto pinned = device->allocate_pinned(4096);
  ASSERT_TRUE(memory && pinned);
  auto stream = device->create_stream();
  ASSERT_TRUE(stream) << stream.error().message();
  std::span<std::byte> host(pinned->get(), 4096);
  std::fill(host.begin(), host.end(), std::byte{7});
  ASSERT_TRUE((*stream)->upload_async(**memory, host));
  auto first = (*stream)->mark();
  ASSERT_TRUE(first);
  std::fill(host.begin(), host.end(), std::byte{0});
  ASSERT_TRUE((*stream)->wait(*first));
  ASSERT_TRUE((*stream)->download_async(host, **memory));
  auto second = (*stream)->mark();
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *first);
  auto done = (*stream)->done(*second);
  ASSERT_TRUE(done);
  EXPECT_TRUE(*done);
  EXPECT_TRUE(*(*stream)->done(*first));  // retired earlier: done
  EXPECT_EQ(host[100], std::byte{7});
  ASSERT_TRUE((*stream)->synchronize());
}

TEST(CudaStream, PitchedCopiesKeepRowsApartByEachSidesPitch) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_pitched_copies_keep_rows(*device);
}

TEST(CudaKernels, FirstDifferenceFindsEachPlantedByteFromWhereItIsAsked) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  const uint64_t launches = counters().kernel_launches;
  expect_first_difference(device, (1 << 20) + 5, {17, 4096, 70001, (1 << 20) + 3});
  EXPECT_EQ(counters().kernel_launches - launches, RDMAVIDEO_CUDA_KERNELS ? 6u : 0u);
}

TEST(CudaKernels, AGpuTheBuildHasNoCodeForIsNamed) {
  FakeEnv no_code("FAKE_CUDA_KERNELS", "0");
  auto device = fake_device();
  ASSERT_TRUE(device);
  const EmbeddedImage& image = prores::kKernelImage;
  auto kernels = prores::GpuPasses::load(*device);
  ASSERT_FALSE(kernels);
  EXPECT_EQ(kernels.error().code(), ErrorCode::unsupported);
  EXPECT_EQ(
      kernels.error().message(),
      RDMAVIDEO_CUDA_KERNELS
          ? fmt::format(
                "cuda:0 (Fake GPU 0): the ProRes encoder's kernels cannot be loaded: "
                "CUDA_ERROR_NO_BINARY_FOR_GPU (209) "
                "(the kernels were built by nvcc {} with code for compute capability {} and PTX "
                "for {}; none of it runs on compute capability 9.0 with CUDA driver 13.0)",
                image.toolkit, expected_capabilities(image.sass), expected_capabilities(image.ptx))
          : "this build has no CUDA kernels, the ProRes encoder's kernels among them (the CUDA "
            "toolkit was not found when it was configured: install nvcc and configure again)");
  // Every room's image is built, or none is.
  for (const EmbeddedImage* each : {&prores::kKernelImage, &diag::kFirstDifferenceImage,
                                    &av::kNvencConvertImage, &media::kCanvasKernelImage}) {
    EXPECT_EQ(each->built(), bool{RDMAVIDEO_CUDA_KERNELS});
    EXPECT_STREQ(each->toolkit, image.toolkit);
  }
}

// A driver older than the toolkit that built the kernels is named as what to update (its JIT
// does not know the toolkit's PTX), not the GPU.
TEST(CudaKernels, ADriverOlderThanTheToolkitIsNamedAsWhatToUpdate) {
  if (!RDMAVIDEO_CUDA_KERNELS) GTEST_SKIP() << "this build has no CUDA kernels";
  FakeEnv no_code("FAKE_CUDA_KERNELS", "0");
  FakeEnv old("FAKE_CUDA_VERSION", "12020");
  auto device = fake_device();
  ASSERT_TRUE(device);
  const EmbeddedImage& image = media::kCanvasKernelImage;
  auto kernels = media::CanvasKernels::load(*device);
  ASSERT_FALSE(kernels);
  EXPECT_NE(kernels.error().message().find(fmt::format(
                "CUDA driver 12.2 is older than that toolkit and runs none of it on compute "
                "capability 9.0: update the NVIDIA driver to {} or newer)",
                image.toolkit)),
            std::string::npos)
      << kernels.error().message();
  // The PTX is there for the lowest architecture built too, so a GPU between the SASS built
  // has a JIT path; and the toolkit is named as nvcc's major.minor.
  EXPECT_NE(std::string_view(image.ptx).find("75"), std::string_view::npos) << image.ptx;
  EXPECT_NE(std::string_view(image.toolkit).find('.'), std::string_view::npos);
}

TEST(GpuFrameVerifier, NamesWhatIsWrongAsTheHostVerifierDoes) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  const uint64_t downloads = counters().downloads;
  expect_gpu_verifier_agrees_with_the_host(device);
  if (RDMAVIDEO_CUDA_KERNELS) {
    // Per in-place check: the stamp, the kernel's answer, and at a mismatch its two bytes;
    // the checksum frame: the whole frame and the answer of nothing else.
    EXPECT_LT(counters().downloads - downloads, 16u);
  }
}

// The arithmetic itself, against numbers worked by hand: luma as it is, chroma the rounded
// average of the row pair (an odd last row averaged with itself), 10-bit samples masked and
// shifted to p010's high bits, rgb24 given an opaque fourth byte.
TEST(ConvertPixels, SamplesAreWhatTheFormatsSay) {
  namespace px = av::nvenc;
  // uyvy 4x2: U Y V Y | U Y V Y on two rows.
  const uint8_t uyvy[16] = {10, 20, 30, 40, 50, 60, 70, 80, 12, 22, 33, 44, 55, 66, 77, 88};
  uint8_t y[8] = {}, uv[4] = {};
  for (unsigned pair = 0; pair < 2; ++pair)
    px::packed422_to_nv12(uyvy, 8, y, 4, uv, 4, 4, 2, pair, 0, px::kUyvy);
  EXPECT_EQ(std::vector<uint8_t>(y, y + 8), (std::vector<uint8_t>{20, 40, 60, 80, 22, 44, 66, 88}));
  EXPECT_EQ(std::vector<uint8_t>(uv, uv + 4), (std::vector<uint8_t>{11, 32, 53, 74}));
  // yuy2 2x1 (one row: chroma is that row's).
  const uint8_t yuy2[4] = {100, 7, 200, 9};
  uint8_t y1[2] = {}, uv1[2] = {};
  px::packed422_to_nv12(yuy2, 4, y1, 2, uv1, 2, 2, 1, 0, 0, px::kYuy2);
  EXPECT_EQ(y1[0], 100);
  EXPECT_EQ(y1[1], 200);
  EXPECT_EQ(uv1[0], 7);
  EXPECT_EQ(uv1[1], 9);
  // yuv422p10 2x1: Y 1023 and 0x7fff (masked to 1023), Cb 512, Cr 3.
  const uint16_t yp[2] = {1023, 0x7fff}, cb[1] = {512}, cr[1] = {3};
  uint16_t py[2] = {}, puv[2] = {};
  px::yuv422p10_to_p010(reinterpret_cast<const uint8_t*>(yp), 4,
                        reinterpret_cast<const uint8_t*>(cb), 2,
                        reinterpret_cast<const uint8_t*>(cr), 2, reinterpret_cast<uint8_t*>(py), 4,
                        reinterpret_cast<uint8_t*>(puv), 4, 2, 1, 0, 0);
  EXPECT_EQ(py[0], 1023 << 6);
  EXPECT_EQ(py[1], 1023 << 6);
  EXPECT_EQ(puv[0], 512 << 6);
  EXPECT_EQ(puv[1], 3 << 6);
  const uint8_t rgb[3] = {1, 2, 3};
  uint8_t rgb0[4] = {};
  px::rgb24_to_rgb0(rgb, 3, rgb0, 4, 0, 0);
  EXPECT_EQ(std::vector<uint8_t>(rgb0, rgb0 + 4), (std::vector<uint8_t>{1, 2, 3, 255}));
}

// The library's launches (arguments, pitches, grid) through the stand-in, which computes
// only the blocks a launch's grid covers.
TEST(CudaKernels, ConversionsCoverTheFrameAndKeepThePitches) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_conversions_match_the_cpu(device, 70, 41);
}

// The canvas's arithmetic against values worked by hand: pure colours made YUV by each
// matrix, gray levels as luma, and a picture scaled by two both ways (a 2x2 box down,
// copies of each pixel up but at the edges between them, where neighbours are weighted).
TEST(CompositePixels, SamplesAreWhatTheCanvasSays) {
  namespace px = media::canvas;
  auto yuv = [](px::Yuv c) { return std::vector<int>{c.y, c.cb, c.cr}; };
  EXPECT_EQ(yuv(px::rgb_to_yuv(255, 255, 255, 1)), (std::vector<int>{235, 128, 128}));
  EXPECT_EQ(yuv(px::rgb_to_yuv(0, 0, 0, 0)), (std::vector<int>{16, 128, 128}));
  EXPECT_EQ(yuv(px::rgb_to_yuv(255, 0, 0, 1)), (std::vector<int>{63, 102, 240}));  // BT.709 red
  EXPECT_EQ(yuv(px::rgb_to_yuv(255, 0, 0, 0)), (std::vector<int>{81, 90, 240}));   // BT.601 red
  EXPECT_EQ(yuv(px::rgb_to_yuv(0, 0, 255, 1)), (std::vector<int>{32, 240, 118}));  // BT.709 blue
  EXPECT_EQ(px::gray_to_luma(255), 235);
  EXPECT_EQ(px::gray_to_luma(24), 37);
  // A 4x2 I420 picture, luma 0 40 80 120 / 160 200 240 250, into a 2x2 area: each canvas
  // pixel the average of the two it covers across, chroma the average of the two samples.
  const uint8_t luma[8] = {0, 40, 80, 120, 160, 200, 240, 250}, cb[2] = {100, 200},
                cr[2] = {50, 60};
  px::Source s{{luma, cb, cr}, {4, 2, 2}, 4, 2, px::layout::kI420, 8};
  uint8_t y[4] = {}, uv[2] = {};
  px::Target t{y, uv, 2, 2, 2, 2, 1};
  px::place_nv12(s, t, {0, 0, 2, 2}, 0, 0);
  EXPECT_EQ(std::vector<int>(y, y + 4), (std::vector<int>{20, 100, 180, 245}));
  EXPECT_EQ(uv[0], 150);
  EXPECT_EQ(uv[1], 55);
  // A 2x2 RGBA picture (black, white / white, black) into a 4x4 area: corners are their
  // pixel's, the pixels between weighted a quarter and three quarters.
  const uint8_t rgba[16] = {0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 255};
  px::Source r{{rgba, nullptr, nullptr}, {8, 0, 0}, 2, 2, px::layout::kRgba, 8};
  uint8_t y4[16] = {}, uv4[8] = {};
  px::Target t4{y4, uv4, 4, 4, 4, 4, 1};
  for (unsigned row2 = 0; row2 < 2; ++row2) {
    for (unsigned pair = 0; pair < 2; ++pair) px::place_nv12(r, t4, {0, 0, 4, 4}, pair, row2);
  }
  EXPECT_EQ(y4[0], 16);
  EXPECT_EQ(y4[3], 235);
  EXPECT_EQ(y4[12], 235);
  EXPECT_EQ(y4[15], 16);
  EXPECT_EQ(y4[1], (16 * 3 + 235 + 2) / 4);  // a quarter of the way to white
  EXPECT_EQ(uv4[0], 128);
}

// Beyond 2:1 down, each canvas pixel is the average of what it covers, pixels cut by its
// edges weighted by the part covered. Bilinear would sample two of the four pixels a canvas
// pixel covers at 4:1: a one-pixel line would vanish or not as it moved.
TEST(CompositePixels, ReductionsBeyondTwoToOneAverageWhatEachPixelCovers) {
  namespace px = media::canvas;
  // 8x2 I420, luma one white column then black, into 2x2 (4:1 across, 1:1 down): the first
  // canvas pixel a quarter of the way from black to white. Chroma over the block's whole
  // width: (200 200 100 100 100 100 100 100) / 8 and (50 50 128 ...) / 8, rounded.
  const uint8_t luma[16] = {235, 16, 16, 16, 16, 16, 16, 16, 235, 16, 16, 16, 16, 16, 16, 16};
  const uint8_t cb[4] = {200, 100, 100, 100}, cr[4] = {50, 128, 128, 128};
  px::Source s{{luma, cb, cr}, {8, 4, 4}, 8, 2, px::layout::kI420, 8};
  uint8_t y[4] = {}, uv[2] = {};
  px::Target t{y, uv, 2, 2, 2, 2, 1};
  px::place_nv12(s, t, {0, 0, 2, 2}, 0, 0);
  EXPECT_EQ(std::vector<int>(y, y + 4), (std::vector<int>{71, 16, 71, 16}));  // (235 + 3 * 16) / 4
  EXPECT_EQ(uv[0], 125);
  EXPECT_EQ(uv[1], 109);  // 108.5
  // 10 across into 4 (2.5:1): each canvas pixel covers two and a half source pixels, the
  // half weighted half: luma 0 10 ... 90 gives the means of [0, 2.5), [2.5, 5), ...
  uint8_t ramp[20], c10[10];
  for (int i = 0; i < 10; ++i) ramp[i] = ramp[10 + i] = static_cast<uint8_t>(10 * i);
  std::fill(std::begin(c10), std::end(c10), 128);
  px::Source r{{ramp, c10, c10}, {10, 5, 5}, 10, 2, px::layout::kI420, 8};
  uint8_t y4[8] = {}, uv4[4] = {};
  px::Target t4{y4, uv4, 4, 4, 4, 2, 1};
  for (unsigned pair = 0; pair < 2; ++pair) px::place_nv12(r, t4, {0, 0, 4, 2}, pair, 0);
  EXPECT_EQ(std::vector<int>(y4, y4 + 4), (std::vector<int>{8, 32, 58, 82}));
  EXPECT_EQ(uv4[0], 128);
}

// The library's canvas launches (arguments, pitches, grid) through the stand-in.
TEST(CudaKernels, CanvasKernelsCoverTheirAreasAndNothingElse) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_canvas_kernels_match_the_cpu(device);
}

TEST(CudaKernels, ProresKernelsMakeTheCpuTwinsFramesByteForByte) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_prores_matches_the_cpu(device, 250, 70);  // odd slices, edges not on 16
  // The conformance set's sizes (prores_conformance_test).
  for (const auto& [width, height] :
       {std::pair{1280u, 720u}, {640u, 360u}, {1000u, 562u}, {33u, 17u}}) {
    expect_prores_matches_the_cpu(device, width, height);
  }
  expect_prores_matches_the_cpu(device, 250, 70, 40);  // over its target: two reads
}

TEST(CudaKernels, ProresFramesInFlightAreCollectedInOrderAsTheTwinMakesThem) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_prores_frames_in_flight(device, 250, 70);
}

TEST(CudaKernels, EveryCarriedFormatIsMadeTheProresEncodersTenBitInput) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  expect_to_yuv422p10(device, 64, 36);
  expect_to_yuv422p10(device, 37, 13);  // an odd width, an odd row of 4:2:0 chroma
}

#else  // RDMAVIDEO_REAL_GPU: cuda_gpu_test, label gpu, NVIDIA's driver

std::shared_ptr<Device> real_device() {
  auto driver = Driver::shared();
  if (!driver || (*driver)->device_count() == 0) return nullptr;
  auto device = Device::shared(0);
  return device ? *device : nullptr;
}

#define REQUIRE_GPU()                                                  \
  auto gpu = real_device();                                            \
  if (!gpu)                                                            \
  GTEST_SKIP() << "no GPU here: "                                      \
               << (Driver::shared() ? "the CUDA driver sees no device" \
                                    : Driver::shared().error().message())

TEST(RealGpu, MemoryRoundTripsThroughTheDriverAndIs64KiBAligned) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(33177600);  // a 4K RGBA frame
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_EQ(**memory % 65536, 0u);
  std::vector<std::byte> in(33177600), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 131 + 7);
  ASSERT_TRUE(gpu->upload(**memory, in));
  ASSERT_TRUE(gpu->download(out, **memory));
  EXPECT_TRUE(in == out);
}

TEST(RealGpu, StreamCopiesThroughPinnedMemoryFinishByTheirTickets) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(1 << 24);
  auto pinned = gpu->allocate_pinned(1 << 24);
  auto stream = gpu->create_stream();
  ASSERT_TRUE(memory && pinned && stream);
  std::span<std::byte> host(pinned->get(), 1 << 24);
  std::fill(host.begin(), host.end(), std::byte{0x5a});
  ASSERT_TRUE((*stream)->upload_async(**memory, host));
  auto up = (*stream)->mark();
  ASSERT_TRUE(up);
  ASSERT_TRUE((*stream)->wait(*up));
  std::fill(host.begin(), host.end(), std::byte{0});
  ASSERT_TRUE((*stream)->download_async(host, **memory));
  auto down = (*stream)->mark();
  ASSERT_TRUE(down);
  ASSERT_TRUE((*stream)->wait(*down));
  EXPECT_EQ(host[12345], std::byte{0x5a});
  EXPECT_TRUE(*(*stream)->done(*down));
}

TEST(RealGpu, DmabufExportMatchesTheDeviceAttribute) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(2 << 20);
  ASSERT_TRUE(memory);
  auto fd = gpu->export_dmabuf(**memory, 2 << 20);
  if (gpu->facts().dmabuf_supported && gpu->driver().has("cuMemGetHandleForAddressRange")) {
    ASSERT_TRUE(fd) << fd.error().message();
    EXPECT_GE(*fd, 0);
    close(*fd);
  } else {
    ASSERT_FALSE(fd);
    EXPECT_EQ(fd.error().code(), ErrorCode::unsupported);
  }
}

TEST(RealGpu, FlushIsANoOpWhereTheGpuOrdersRdmaWrites) {
  REQUIRE_GPU();
  EXPECT_TRUE(gpu->flush_rdma_writes()) << "ordering " << gpu->facts().rdma_writes_ordering;
}

TEST(RealGpu, PitchedCopiesKeepRowsApartByEachSidesPitch) {
  REQUIRE_GPU();
  expect_pitched_copies_keep_rows(*gpu);
}

TEST(RealGpu, FirstDifferenceKernelFindsEachPlantedByteFromWhereItIsAsked) {
  REQUIRE_GPU();
  // A 4K RGBA frame and 5 bytes: differences in the first word, mid-frame, in the tail.
  expect_first_difference(gpu, 33177600 + 5, {0, 15, 16, 12345677, 33177600 + 4});
}

TEST(RealGpu, GpuFrameVerifierNamesWhatIsWrongAsTheHostVerifierDoes) {
  REQUIRE_GPU();
  expect_gpu_verifier_agrees_with_the_host(gpu);
}

TEST(RealGpu, ConversionKernelsMatchTheCpuOnAFrame) {
  REQUIRE_GPU();
  expect_conversions_match_the_cpu(gpu, 1920, 1081);
}

TEST(RealGpu, CanvasKernelsMatchTheCpu) {
  REQUIRE_GPU();
  expect_canvas_kernels_match_the_cpu(gpu);
}

TEST(RealGpu, ProresKernelsMakeTheCpuTwinsFramesByteForByte) {
  REQUIRE_GPU();
  expect_prores_matches_the_cpu(gpu, 1920, 1080);
  expect_prores_matches_the_cpu(gpu, 1000, 562);
}

TEST(RealGpu, ProresFramesInFlightAreCollectedInOrderAsTheTwinMakesThem) {
  REQUIRE_GPU();
  expect_prores_frames_in_flight(gpu, 1920, 1080);
}

TEST(RealGpu, EveryCarriedFormatIsMadeTheProresEncodersTenBitInput) {
  REQUIRE_GPU();
  expect_to_yuv422p10(gpu, 1920, 1080);
  expect_to_yuv422p10(gpu, 37, 13);
}

#endif

}  // namespace
}  // namespace rdmavideo::cuda
