// SPDX-License-Identifier: Apache-2.0
// Pixel formats and plane math: the canonical layout of every format at even and odd sizes
// against FFmpeg's own (libavutil, alignment 1), v210 against hand-computed strides,
// validate_layout's accept and reject paths, and the text parsers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmavideo/format.hpp"

#if defined(RDMAVIDEO_TEST_WITH_FFMPEG)
extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/pixfmt.h>
}
#endif

namespace rdmavideo {
namespace {

::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

constexpr std::pair<uint32_t, uint32_t> kSizes[] = {
    {1, 1},       {2, 2},       {3, 1},       {1, 3},       {33, 17},
    {1918, 1078}, {1920, 1080}, {1921, 1081}, {3840, 2160},
};

std::string size_name(uint32_t w, uint32_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

#if defined(RDMAVIDEO_TEST_WITH_FFMPEG)
AVPixelFormat to_av(PixelFormat format) {
  switch (format) {
    case PixelFormat::nv12: return AV_PIX_FMT_NV12;
    case PixelFormat::i420: return AV_PIX_FMT_YUV420P;
    case PixelFormat::p010: return AV_PIX_FMT_P010LE;
    case PixelFormat::uyvy: return AV_PIX_FMT_UYVY422;
    case PixelFormat::yuy2: return AV_PIX_FMT_YUYV422;
    case PixelFormat::v210: return AV_PIX_FMT_NONE;
    case PixelFormat::rgba: return AV_PIX_FMT_RGBA;
    case PixelFormat::bgra: return AV_PIX_FMT_BGRA;
    case PixelFormat::rgb24: return AV_PIX_FMT_RGB24;
    case PixelFormat::yuv422p10: return AV_PIX_FMT_YUV422P10LE;
    case PixelFormat::yuv444p: return AV_PIX_FMT_YUV444P;
    case PixelFormat::yuv444p10: return AV_PIX_FMT_YUV444P10LE;
    case PixelFormat::yuv444p12: return AV_PIX_FMT_YUV444P12LE;
  }
  return AV_PIX_FMT_NONE;
}
#endif

TEST(FormatCanonicalLayout, MatchesFfmpegForEveryFormat) {
#if !defined(RDMAVIDEO_TEST_WITH_FFMPEG)
  GTEST_SKIP() << "built without FFmpeg (RDMAVIDEO_HAVE_FFmpeg is OFF)";
#else
  for (PixelFormat format : all_pixel_formats()) {
    const AVPixelFormat av = to_av(format);
    if (av == AV_PIX_FMT_NONE) continue;  // v210: checked by hand below
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(std::string(name(format)) + " " + size_name(w, h));
      auto layout = canonical_layout(format, w, h);
      ASSERT_TRUE(layout) << layout.error().message();
      const int width = static_cast<int>(w), height = static_cast<int>(h);

      int linesizes[4] = {};
      ASSERT_GE(av_image_fill_linesizes(linesizes, av, width), 0);
      ptrdiff_t linesizes_p[4] = {};
      for (int p = 0; p < 4; ++p) linesizes_p[p] = linesizes[p];
      size_t plane_sizes[4] = {};
      ASSERT_GE(av_image_fill_plane_sizes(plane_sizes, av, height, linesizes_p), 0);
      const int total = av_image_get_buffer_size(av, width, height, 1);
      ASSERT_GT(total, 0);

      // Where av_image_fill_arrays puts each plane in a buffer, as rawvideo frames are laid out.
      std::unique_ptr<uint8_t[]> buffer(new uint8_t[static_cast<size_t>(total)]);
      uint8_t* data[4] = {};
      int filled_linesizes[4] = {};
      ASSERT_EQ(av_image_fill_arrays(data, filled_linesizes, buffer.get(), av, width, height, 1),
                total);

      const int av_planes = av_pix_fmt_count_planes(av);
      EXPECT_EQ(layout->plane_count, av_planes);
      EXPECT_EQ(layout->frame_bytes, static_cast<uint32_t>(total));
      for (int p = 0; p < av_planes && p < kMaxPlanes; ++p) {
        SCOPED_TRACE(::testing::Message() << "plane " << p);
        const Plane& plane = layout->planes[p];
        EXPECT_EQ(plane.stride, static_cast<uint32_t>(linesizes[p]));
        EXPECT_EQ(plane.stride, static_cast<uint32_t>(filled_linesizes[p]));
        EXPECT_EQ(plane.offset, static_cast<uint32_t>(data[p] - buffer.get()));
        EXPECT_EQ(uint64_t{plane.stride} * plane.rows, plane_sizes[p]);
        EXPECT_EQ(plane.stride, min_row_bytes(format, w, p));
        EXPECT_EQ(plane.rows, plane_rows(format, h, p));
      }
      for (int p = av_planes; p < kMaxPlanes; ++p) {
        EXPECT_EQ(layout->planes[p].offset, 0u);
        EXPECT_EQ(layout->planes[p].stride, 0u);
        EXPECT_EQ(layout->planes[p].rows, 0u);
      }
    }
  }
#endif
}

TEST(FormatTraits, MatchFfmpegDescriptors) {
#if !defined(RDMAVIDEO_TEST_WITH_FFMPEG)
  GTEST_SKIP() << "built without FFmpeg (RDMAVIDEO_HAVE_FFmpeg is OFF)";
#else
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    const AVPixelFormat av = to_av(format);
    // Our names are FFmpeg's, so `-pix_fmt` and `--pix-fmt` agree.
    const std::string format_name(name(format));
    EXPECT_EQ(av_get_pix_fmt(format_name.c_str()), av);
    if (av == AV_PIX_FMT_NONE) continue;
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(av);
    ASSERT_NE(desc, nullptr);
    const FormatTraits t = traits(format);
    EXPECT_EQ(t.planes, av_pix_fmt_count_planes(av));
    EXPECT_EQ(t.bits, desc->comp[0].depth);
    EXPECT_EQ(t.rgb, (desc->flags & AV_PIX_FMT_FLAG_RGB) != 0);
    EXPECT_EQ(t.chroma_shift_x, desc->log2_chroma_w);
    EXPECT_EQ(t.chroma_shift_y, desc->log2_chroma_h);
  }
#endif
}

TEST(FormatCanonicalLayout, V210StridesAreHandComputed) {
  // 128 bytes carry 48 pixels; a partial group still takes the whole 128 bytes.
  const std::pair<uint32_t, uint32_t> kStrides[] = {
      {1, 128},     {6, 128},     {47, 128},    {48, 128},    {49, 256},     {720, 1920},
      {1280, 3456}, {1918, 5120}, {1920, 5120}, {1921, 5248}, {3840, 10240}, {16384, 43776},
  };
  for (auto [w, stride] : kStrides) {
    SCOPED_TRACE(w);
    EXPECT_EQ(stride, (w + 47) / 48 * 128);
    for (uint32_t h : {1u, 17u, 1081u}) {
      auto layout = canonical_layout(PixelFormat::v210, w, h);
      ASSERT_TRUE(layout) << layout.error().message();
      EXPECT_EQ(layout->plane_count, 1);
      EXPECT_EQ(layout->planes[0].offset, 0u);
      EXPECT_EQ(layout->planes[0].stride, stride);
      EXPECT_EQ(layout->planes[0].rows, h);
      EXPECT_EQ(layout->frame_bytes, stride * h);
    }
  }
}

TEST(FormatCanonicalLayout, HandComputedNv12AtOddSize) {
  auto layout = canonical_layout(PixelFormat::nv12, 1921, 1081);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->planes[0].stride, 1921u);
  EXPECT_EQ(layout->planes[0].rows, 1081u);
  EXPECT_EQ(layout->planes[1].offset, 1921u * 1081);
  EXPECT_EQ(layout->planes[1].stride, 1922u);  // 961 UV pairs
  EXPECT_EQ(layout->planes[1].rows, 541u);
  EXPECT_EQ(layout->frame_bytes, 1921u * 1081 + 1922u * 541);
}

TEST(FormatCanonicalLayout, RejectsSizeOutOfRange) {
  const std::pair<uint32_t, uint32_t> kBad[] = {{0, 1}, {1, 0}, {16385, 1}, {1, 16385}};
  for (auto [w, h] : kBad) {
    SCOPED_TRACE(size_name(w, h));
    auto layout = canonical_layout(PixelFormat::rgba, w, h);
    ASSERT_FALSE(layout);
    EXPECT_EQ(layout.error().code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(layout.error().message(), size_name(w, h)));
  }
}

TEST(FormatCanonicalLayout, LargestFrameFits) {
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    auto layout = canonical_layout(format, kMaxDimension, kMaxDimension);
    if (format == PixelFormat::yuv444p10 || format == PixelFormat::yuv444p12) {
      // Six bytes a pixel: 1.5 GiB, more than the protocol carries; 8K is far below it.
      ASSERT_FALSE(layout);
      EXPECT_TRUE(contains(layout.error().message(), "more than the protocol carries"))
          << layout.error().message();
      layout = canonical_layout(format, 7680, 4320);
    }
    ASSERT_TRUE(layout) << layout.error().message();
    uint64_t sum = 0;
    for (int p = 0; p < layout->plane_count; ++p) {
      sum += uint64_t{layout->planes[p].stride} * layout->planes[p].rows;
    }
    EXPECT_EQ(layout->frame_bytes, sum);
    EXPECT_LE(sum, uint64_t{1} << 30);
  }
  EXPECT_EQ(canonical_layout(PixelFormat::rgba, kMaxDimension, kMaxDimension)->frame_bytes,
            1u << 30);
}

// ---------------------------------------------------------------------------------------
// validate_layout

/// The canonical layout with every stride rounded up to 64 and the offsets moved along.
FrameLayout padded_layout(PixelFormat format, uint32_t w, uint32_t h) {
  FrameLayout layout = *canonical_layout(format, w, h);
  uint32_t offset = 0;
  for (int p = 0; p < layout.plane_count; ++p) {
    Plane& plane = layout.planes[p];
    plane.offset = offset;
    plane.stride = (plane.stride + 63) / 64 * 64;
    offset += plane.stride * plane.rows;
  }
  layout.frame_bytes = offset;
  return layout;
}

std::string rejection(PixelFormat format, uint32_t w, uint32_t h, const FrameLayout& layout) {
  auto ok = validate_layout(format, w, h, layout);
  if (ok) {
    ADD_FAILURE() << "validate_layout accepted a bad layout";
    return {};
  }
  EXPECT_EQ(ok.error().code(), ErrorCode::protocol);
  return ok.error().message();
}

TEST(FormatValidateLayout, AcceptsCanonicalAndPadded) {
  for (PixelFormat format : all_pixel_formats()) {
    for (auto [w, h] : kSizes) {
      SCOPED_TRACE(std::string(name(format)) + " " + size_name(w, h));
      auto canonical = canonical_layout(format, w, h);
      ASSERT_TRUE(canonical);
      auto ok = validate_layout(format, w, h, *canonical);
      EXPECT_TRUE(ok) << ok.error().message();

      const FrameLayout padded = padded_layout(format, w, h);
      for (int p = 0; p < padded.plane_count; ++p) EXPECT_EQ(padded.planes[p].stride % 64, 0u);
      ok = validate_layout(format, w, h, padded);
      EXPECT_TRUE(ok) << ok.error().message();

      // Slack after the last plane and gaps between planes are allowed too.
      FrameLayout gapped = padded;
      for (int p = 1; p < gapped.plane_count; ++p) gapped.planes[p].offset += 4096 * p;
      gapped.frame_bytes += 4096 * gapped.plane_count + 7;
      ok = validate_layout(format, w, h, gapped);
      EXPECT_TRUE(ok) << ok.error().message();
    }
  }
}

TEST(FormatValidateLayout, RejectsWrongPlaneCount) {
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    FrameLayout layout = *canonical_layout(format, 33, 17);
    const int planes = layout.plane_count;
    for (int count : {0, planes - 1, planes + 1}) {
      if (count == planes - 1 && count == 0) continue;
      layout.plane_count = count;
      const std::string error = rejection(format, 33, 17, layout);
      EXPECT_TRUE(contains(error, "plane_count " + std::to_string(count)));
      EXPECT_TRUE(contains(error, name(format)));
    }
  }
}

TEST(FormatValidateLayout, RejectsWrongRows) {
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    FrameLayout layout = padded_layout(format, 33, 17);
    const int last = layout.plane_count - 1;
    layout.planes[last].rows -= 1;
    const std::string error = rejection(format, 33, 17, layout);
    EXPECT_TRUE(contains(error, "planes[" + std::to_string(last) + "].rows " +
                                    std::to_string(layout.planes[last].rows)));
  }
}

TEST(FormatValidateLayout, RejectsStrideTooSmall) {
  for (PixelFormat format : all_pixel_formats()) {
    for (int p = 0; p < traits(format).planes; ++p) {
      SCOPED_TRACE(::testing::Message() << name(format) << " plane " << p);
      FrameLayout layout = *canonical_layout(format, 33, 17);
      layout.planes[p].stride -= 1;
      const std::string error = rejection(format, 33, 17, layout);
      EXPECT_TRUE(contains(error, "planes[" + std::to_string(p) + "].stride " +
                                      std::to_string(layout.planes[p].stride)));
      EXPECT_TRUE(contains(error, std::to_string(min_row_bytes(format, 33, p))));
    }
  }
}

TEST(FormatValidateLayout, RejectsOverlappingPlanes) {
  for (PixelFormat format : all_pixel_formats()) {
    for (int p = 1; p < traits(format).planes; ++p) {
      SCOPED_TRACE(::testing::Message() << name(format) << " plane " << p);
      FrameLayout layout = *canonical_layout(format, 33, 17);
      layout.planes[p].offset -= 1;
      const std::string error = rejection(format, 33, 17, layout);
      EXPECT_TRUE(contains(error, "planes[" + std::to_string(p) + "].offset " +
                                      std::to_string(layout.planes[p].offset)));
      EXPECT_TRUE(contains(error, "overlaps"));
    }
  }
}

TEST(FormatValidateLayout, RejectsPlanesOutOfOrder) {
  FrameLayout layout = *canonical_layout(PixelFormat::i420, 64, 64);
  std::swap(layout.planes[1].offset, layout.planes[2].offset);
  const std::string error = rejection(PixelFormat::i420, 64, 64, layout);
  EXPECT_TRUE(contains(error, "planes[2].offset"));
}

TEST(FormatValidateLayout, RejectsFrameBytesTooSmall) {
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    FrameLayout layout = padded_layout(format, 33, 17);
    const uint32_t need = layout.frame_bytes;
    layout.frame_bytes = need - 1;
    const std::string error = rejection(format, 33, 17, layout);
    EXPECT_TRUE(contains(error, "frame_bytes " + std::to_string(need - 1)));
    EXPECT_TRUE(contains(error, std::to_string(need)));
  }
}

TEST(FormatValidateLayout, RejectsUnusedPlaneSet) {
  for (PixelFormat format : all_pixel_formats()) {
    const int planes = traits(format).planes;
    for (int p = planes; p < kMaxPlanes; ++p) {
      for (int field = 0; field < 3; ++field) {
        SCOPED_TRACE(::testing::Message() << name(format) << " plane " << p << " field " << field);
        FrameLayout layout = *canonical_layout(format, 33, 17);
        Plane& plane = layout.planes[p];
        (field == 0 ? plane.offset : field == 1 ? plane.stride : plane.rows) = 1;
        const std::string error = rejection(format, 33, 17, layout);
        EXPECT_TRUE(contains(error, "planes[" + std::to_string(p) + "]"));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Names and parsers

TEST(FormatNames, NamesAndWireValuesRoundTrip) {
  EXPECT_EQ(all_pixel_formats().size(), 13u);
  uint32_t wire = 1;
  for (PixelFormat format : all_pixel_formats()) {
    SCOPED_TRACE(name(format));
    EXPECT_EQ(static_cast<uint32_t>(format), wire++);  // wire order
    EXPECT_EQ(parse_pixel_format(name(format)), format);
    EXPECT_EQ(pixel_format_from_wire(static_cast<uint32_t>(format)), format);
    EXPECT_TRUE(contains(pixel_format_names(), name(format)));
  }
  EXPECT_EQ(pixel_format_from_wire(0), std::nullopt);
  EXPECT_EQ(pixel_format_from_wire(14), std::nullopt);
}

TEST(FormatNames, FfmpegNames) {
  EXPECT_EQ(name(PixelFormat::nv12), "nv12");
  EXPECT_EQ(name(PixelFormat::i420), "yuv420p");
  EXPECT_EQ(name(PixelFormat::p010), "p010le");
  EXPECT_EQ(name(PixelFormat::uyvy), "uyvy422");
  EXPECT_EQ(name(PixelFormat::yuy2), "yuyv422");
  EXPECT_EQ(name(PixelFormat::v210), "v210");
  EXPECT_EQ(name(PixelFormat::rgba), "rgba");
  EXPECT_EQ(name(PixelFormat::bgra), "bgra");
  EXPECT_EQ(name(PixelFormat::rgb24), "rgb24");
  EXPECT_EQ(name(PixelFormat::yuv422p10), "yuv422p10le");
  EXPECT_EQ(name(PixelFormat::yuv444p), "yuv444p");
  EXPECT_EQ(name(PixelFormat::yuv444p10), "yuv444p10le");
  EXPECT_EQ(name(PixelFormat::yuv444p12), "yuv444p12le");
}

TEST(FormatColour, NamesAreFfmpegs) {
#if !defined(RDMAVIDEO_TEST_WITH_FFMPEG)
  GTEST_SKIP() << "built without FFmpeg (RDMAVIDEO_HAVE_FFmpeg is OFF)";
#else
  // Every code point H.273 defines is named as FFmpeg names it, and parses back.
  for (int p = 1; p <= colour::kMaxPrimaries; ++p) {
    const Colour c{static_cast<uint8_t>(p), 1, 1, 0};
    if (!validate(c)) continue;
    const char* theirs = av_color_primaries_name(static_cast<AVColorPrimaries>(p));
    ASSERT_NE(theirs, nullptr) << p;
    EXPECT_EQ(describe(c), std::string(theirs) + "/bt709/bt709");
    EXPECT_EQ(parse_colour(describe(c)), c);
  }
  for (int t = 1; t <= colour::kMaxTransfer; ++t) {
    const Colour c{1, static_cast<uint8_t>(t), 1, 2};
    if (!validate(c)) continue;
    const char* theirs = av_color_transfer_name(static_cast<AVColorTransferCharacteristic>(t));
    ASSERT_NE(theirs, nullptr) << t;
    EXPECT_EQ(describe(c), "bt709/" + std::string(theirs) + "/bt709 full");
    EXPECT_EQ(parse_colour(describe(c)), c);
  }
  for (int m = 1; m <= colour::kMaxMatrix; ++m) {
    const Colour c{1, 1, static_cast<uint8_t>(m), 1};
    if (!validate(c)) continue;
    const char* theirs = av_color_space_name(static_cast<AVColorSpace>(m));
    ASSERT_NE(theirs, nullptr) << m;
    EXPECT_EQ(describe(c), "bt709/bt709/" + std::string(theirs) + " limited");
    EXPECT_EQ(parse_colour(describe(c)), c);
  }
#endif
}

TEST(FormatColour, PresetsAndRanges) {
  using namespace colour;
  EXPECT_EQ(parse_colour("bt709"), (Colour{kBt709, kBt709, kBt709, kLimited}));
  EXPECT_EQ(parse_colour("bt709 full"), (Colour{kBt709, kBt709, kBt709, kFull}));
  EXPECT_EQ(parse_colour("bt601"), (Colour{kBt601_525, kTransferBt601, kBt601_525, kLimited}));
  EXPECT_EQ(parse_colour("srgb"), (Colour{kBt709, kTransferSrgb, kBt709, kFull}));
  EXPECT_EQ(parse_colour("bt2100-pq"), (Colour{kBt2020, kTransferPq, kMatrixBt2020Ncl, kLimited}));
  EXPECT_EQ(parse_colour("bt2100-hlg full"),
            (Colour{kBt2020, kTransferHlg, kMatrixBt2020Ncl, kFull}));
  EXPECT_EQ(parse_colour("bt2020/smpte2084/bt2020nc"), (Colour{9, 16, 9, 0}));
  EXPECT_EQ(parse_colour("unknown/unknown/bt709"), (Colour{0, 0, 1, 0}));
  for (std::string_view bad : {"", "bt2100", "bt709 wide", "bt709/bt709", "bt709/bt709/nope",
                               "bt709/bt709/bt709 unknown", "rgb/bt709/bt709"}) {
    EXPECT_EQ(parse_colour(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(describe(Colour{}), "not said");
  EXPECT_EQ(describe(Colour{9, 18, 9, 1}), "bt2020/arib-std-b67/bt2020nc limited");
  EXPECT_TRUE(validate(Colour{22, 18, 14, 2}));
  EXPECT_FALSE(validate(Colour{0, 0, 0, 3}));
  EXPECT_FALSE(validate(Colour{21, 0, 0, 0}));
}

TEST(FormatNames, ParsesAliases) {
  EXPECT_EQ(parse_pixel_format("i420"), PixelFormat::i420);
  EXPECT_EQ(parse_pixel_format("uyvy"), PixelFormat::uyvy);
  EXPECT_EQ(parse_pixel_format("yuy2"), PixelFormat::yuy2);
  EXPECT_EQ(parse_pixel_format("p010"), PixelFormat::p010);
  EXPECT_EQ(parse_pixel_format("yuv422p10"), PixelFormat::yuv422p10);
}

TEST(FormatNames, RejectsUnknownNames) {
  for (std::string_view text :
       {"", "foo", "yuv420", "nv21", "yuv422p", "rgba ", " nv12", "v210x"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_pixel_format(text), std::nullopt);
  }
}

void expect_rate(std::string_view text, uint32_t num, uint32_t den) {
  SCOPED_TRACE(text);
  auto rate = parse_frame_rate(text);
  ASSERT_TRUE(rate.has_value());
  EXPECT_EQ(rate->num, num);
  EXPECT_EQ(rate->den, den);
}

TEST(FormatFrameRate, ParsesIntegersDecimalsAndFractions) {
  expect_rate("60", 60, 1);
  expect_rate("25", 25, 1);
  expect_rate("59.94", 60000, 1001);
  expect_rate("29.97", 30000, 1001);
  expect_rate("23.976", 24000, 1001);
  expect_rate("119.88", 120000, 1001);
  expect_rate("30000/1001", 30000, 1001);
  expect_rate("60000/1000", 60, 1);  // reduced
  expect_rate("12.5", 25, 2);
  expect_rate("60.0", 60, 1);
  expect_rate("1000", 1000, 1);
}

TEST(FormatFrameRate, RejectsBadText) {
  for (std::string_view text : {"0", "abc", "60/0", "-1", "", "/", "0/1", "60/", "/1", "1.", ".5",
                                "1.2.3", "60fps", "1001", "1.0000001"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_frame_rate(text).has_value(), false);
  }
}

// Regression: the decimal branch computed whole * 10^digits unchecked, so a whole part near
// 2^64 / 10^digits wrapped round and "1844674407370955162.0" parsed as 2/5.
TEST(FormatFrameRate, RejectsDecimalWhoseValueOverflows) {
  for (std::string_view text :
       {"1844674407370955162.0", "1844674407370955162.5", "18446744073709551615.999999"}) {
    SCOPED_TRACE(text);
    const auto rate = parse_frame_rate(text);
    EXPECT_FALSE(rate.has_value()) << "parsed as " << rate->num << "/" << rate->den;
  }
  EXPECT_FALSE(parse_frame_rate("18446744073709551615/1").has_value());
  EXPECT_FALSE(parse_frame_rate("99999999999999999999").has_value());
}

TEST(FormatFrameRate, ToString) {
  EXPECT_EQ(to_string(Rational{60, 1}), "60");
  EXPECT_EQ(to_string(Rational{30000, 1001}), "30000/1001");
  EXPECT_DOUBLE_EQ((Rational{25, 2}.value()), 12.5);
  EXPECT_DOUBLE_EQ((Rational{25, 0}.value()), 0.0);
}

TEST(FormatSize, Parses) {
  EXPECT_EQ(parse_size("1920x1080"), (std::pair<uint32_t, uint32_t>{1920, 1080}));
  EXPECT_EQ(parse_size("1x1"), (std::pair<uint32_t, uint32_t>{1, 1}));
  EXPECT_EQ(parse_size("3840x2160"), (std::pair<uint32_t, uint32_t>{3840, 2160}));
  for (std::string_view text : {"", "1920", "x1080", "1920x", "1920x1080x2", "axb", "-1x2",
                                "1920X1080", "1920 x1080", "99999999999x1"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_size(text), std::nullopt);
  }
}

// copy_planes: a padded NV12 frame out to tightly packed planes and back, byte for byte in the
// pixels; each row copies up to the lesser stride, so the wire's row padding is left alone.
TEST(CopyPlanes, BetweenTheWireLayoutAndForeignStridesBothWays) {
  FrameLayout wire;
  wire.plane_count = 2;
  wire.planes[0] = {0, 16, 4};   // 10 bytes of Y a row, 6 of padding
  wire.planes[1] = {64, 16, 2};  // 10 bytes of CbCr a row
  wire.frame_bytes = 96;
  std::vector<std::byte> frame(96);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<std::byte>(i);
  std::vector<std::byte> y(10 * 4), uv(10 * 2);
  const std::array<ForeignPlane, 2> packed{{{y.data(), 10}, {uv.data(), 10}}};
  copy_planes(wire, frame.data(), packed, CopyDirection::from_wire);
  for (uint32_t row = 0; row < 4; ++row) {
    for (uint32_t x = 0; x < 10; ++x) ASSERT_EQ(y[row * 10 + x], frame[row * 16 + x]);
  }
  for (uint32_t row = 0; row < 2; ++row) {
    for (uint32_t x = 0; x < 10; ++x) ASSERT_EQ(uv[row * 10 + x], frame[64 + row * 16 + x]);
  }
  std::vector<std::byte> back(96, std::byte{0xee});
  copy_planes(wire, back.data(), packed, CopyDirection::to_wire);
  for (uint32_t row = 0; row < 4; ++row) {
    for (uint32_t x = 0; x < 16; ++x) {
      ASSERT_EQ(back[row * 16 + x], x < 10 ? frame[row * 16 + x] : std::byte{0xee})
          << "row " << row << " byte " << x;
    }
  }
  // Same strides: one copy of the plane, padding and all.
  std::vector<std::byte> same(96);
  const std::array<ForeignPlane, 2> alike{{{same.data(), 16}, {same.data() + 64, 16}}};
  copy_planes(wire, frame.data(), alike, CopyDirection::from_wire);
  EXPECT_TRUE(std::equal(same.begin(), same.begin() + 64, frame.begin()));
}

}  // namespace
}  // namespace rdmavideo
