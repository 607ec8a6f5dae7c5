// SPDX-License-Identifier: Apache-2.0
// The library's ProRes frames as a decoder takes them: each picture encoded by the CPU twin
// (rdmavideo/prores.hpp) is decoded by FFmpeg's ProRes decoder, which must say nothing (no
// warning, no error), and the decoded picture is compared with the source: its PSNR is at
// least prores_ks's at the same size. Pictures: FFmpeg's testsrc2 and mandelbrot (natural-ish
// content), a noisy one, and a graded 10-bit ramp; sizes that are not multiples of 16 too.
// Each line printed is a row of the comparison (bench/run_prores_bench.py makes the table).
#include <gtest/gtest.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
}

#include <cmath>
#include <cstdarg>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "encoder/frame_writer.hpp"
#include "process.hpp"
#include "rdmavideo/prores.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<uint16_t> y, cb, cr;
  Planes422 planes() const { return {y.data(), cb.data(), cr.data(), width, (width + 1) / 2}; }
};

// A picture from one of FFmpeg's sources (lavfi), as yuv422p10le.
Picture from_lavfi(const std::string& source, uint32_t width, uint32_t height) {
  const std::string raw = testing::capture(
      "ffmpeg -v error -nostdin -f lavfi -i '" + source + "=s=" + std::to_string(width) + "x" +
      std::to_string(height) + "' -frames:v 1 -pix_fmt yuv422p10le -f rawvideo -");
  Picture p{width, height, {}, {}, {}};
  const size_t cw = (width + 1) / 2, luma = size_t{width} * height, chroma = cw * height;
  if (raw.size() != 2 * (luma + 2 * chroma)) return p;
  const auto* samples = reinterpret_cast<const uint16_t*>(raw.data());
  p.y.assign(samples, samples + luma);
  p.cb.assign(samples + luma, samples + luma + chroma);
  p.cr.assign(samples + luma + chroma, samples + luma + 2 * chroma);
  return p;
}

Picture noise_picture(uint32_t width, uint32_t height) {
  Picture p{width, height, {}, {}, {}};
  std::mt19937 rng(9);
  const uint32_t cw = (width + 1) / 2;
  for (uint32_t r = 0; r < height; ++r) {
    for (uint32_t c = 0; c < width; ++c) p.y.push_back(64 + (c * 600) / width + rng() % 120);
  }
  for (uint32_t i = 0; i < cw * height; ++i) p.cb.push_back(400 + rng() % 200);
  for (uint32_t i = 0; i < cw * height; ++i) p.cr.push_back(624 - rng() % 200);
  return p;
}

// Every 10-bit code from black to white across the picture, chroma ramps at right angles.
Picture ramp_picture(uint32_t width, uint32_t height) {
  Picture p{width, height, {}, {}, {}};
  const uint32_t cw = (width + 1) / 2;
  for (uint32_t r = 0; r < height; ++r) {
    for (uint32_t c = 0; c < width; ++c) p.y.push_back(64 + (c * 876) / (width - 1));
  }
  for (uint32_t r = 0; r < height; ++r) {
    for (uint32_t c = 0; c < cw; ++c) {
      p.cb.push_back(64 + (r * 896) / (height - 1));
      p.cr.push_back(960 - (r * 896) / (height - 1));
    }
  }
  return p;
}

// What FFmpeg logs at warning level or worse while decoding.
std::mutex g_log_mu;
std::vector<std::string> g_warnings;
void collect(void*, int level, const char* format, va_list args) {
  if (level > AV_LOG_WARNING) return;
  std::string line(1024, '\0');
  const int n = std::vsnprintf(line.data(), line.size(), format, args);
  line.resize(n < 0 ? 0 : std::min<size_t>(size_t(n), line.size() - 1));
  std::lock_guard lock(g_log_mu);
  g_warnings.push_back(std::move(line));
}

struct Decoded {
  bool ok = false;
  double psnr_y = 0, psnr_c = 0;
};

double psnr(const std::vector<uint16_t>& source, const uint8_t* data, int linesize, uint32_t width,
            uint32_t height) {
  double se = 0;
  for (uint32_t r = 0; r < height; ++r) {
    const auto* row = reinterpret_cast<const uint16_t*>(data + r * linesize);
    for (uint32_t c = 0; c < width; ++c) {
      const double d = double(row[c]) - source[r * width + c];
      se += d * d;
    }
  }
  const double mse = se / (double(width) * height);
  return mse == 0 ? 99.0 : 10 * std::log10(1023.0 * 1023.0 / mse);
}

Decoded decode(const Picture& p, const uint8_t* frame, size_t bytes) {
  Decoded d;
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PRORES);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  ctx->codec_tag = MKTAG('a', 'p', 'c', 'h');  // as a container names it
  ctx->width = int(p.width);
  ctx->height = int(p.height);
  AVPacket* packet = av_packet_alloc();
  AVFrame* out = av_frame_alloc();
  if (avcodec_open2(ctx, codec, nullptr) == 0 && av_new_packet(packet, int(bytes)) == 0) {
    std::memcpy(packet->data, frame, bytes);
    if (avcodec_send_packet(ctx, packet) == 0 && avcodec_receive_frame(ctx, out) == 0 &&
        out->width == int(p.width) && out->height == int(p.height) &&
        out->decode_error_flags == 0) {
      d.ok = true;
      d.psnr_y = psnr(p.y, out->data[0], out->linesize[0], p.width, p.height);
      d.psnr_c = std::min(psnr(p.cb, out->data[1], out->linesize[1], (p.width + 1) / 2, p.height),
                          psnr(p.cr, out->data[2], out->linesize[2], (p.width + 1) / 2, p.height));
    }
  }
  av_frame_free(&out);
  av_packet_free(&packet);
  avcodec_free_context(&ctx);
  return d;
}

// prores_ks's frame of `p` at `bits_per_mb` (its HQ profile): its size and decode.
std::pair<size_t, Decoded> prores_ks(const Picture& p, int bits_per_mb) {
  const AVCodec* codec = avcodec_find_encoder_by_name("prores_ks");
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  ctx->width = int(p.width);
  ctx->height = int(p.height);
  ctx->pix_fmt = AV_PIX_FMT_YUV422P10LE;
  ctx->time_base = {1, 60};
  av_opt_set(ctx->priv_data, "profile", "hq", 0);
  av_opt_set_int(ctx->priv_data, "bits_per_mb", bits_per_mb, 0);
  std::pair<size_t, Decoded> result;
  AVFrame* in = av_frame_alloc();
  AVPacket* packet = av_packet_alloc();
  in->width = ctx->width;
  in->height = ctx->height;
  in->format = ctx->pix_fmt;
  if (avcodec_open2(ctx, codec, nullptr) == 0 && av_frame_get_buffer(in, 0) == 0) {
    const uint32_t cw = (p.width + 1) / 2;
    for (uint32_t r = 0; r < p.height; ++r) {
      std::memcpy(in->data[0] + r * in->linesize[0], &p.y[r * p.width], p.width * 2);
      std::memcpy(in->data[1] + r * in->linesize[1], &p.cb[r * cw], cw * 2);
      std::memcpy(in->data[2] + r * in->linesize[2], &p.cr[r * cw], cw * 2);
    }
    if (avcodec_send_frame(ctx, in) == 0 && avcodec_send_frame(ctx, nullptr) == 0 &&
        avcodec_receive_packet(ctx, packet) == 0) {
      result = {size_t(packet->size), decode(p, packet->data, size_t(packet->size))};
    }
  }
  av_packet_free(&packet);
  av_frame_free(&in);
  avcodec_free_context(&ctx);
  return result;
}

struct Case {
  const char* name;
  Picture (*make)(uint32_t, uint32_t);
  uint32_t width, height;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " " << c.width << "x" << c.height;
}

Picture testsrc2(uint32_t w, uint32_t h) { return from_lavfi("testsrc2", w, h); }
Picture mandelbrot(uint32_t w, uint32_t h) { return from_lavfi("mandelbrot", w, h); }

class Conformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    av_log_set_callback(collect);
    std::lock_guard lock(g_log_mu);
    g_warnings.clear();
  }
  void TearDown() override { av_log_set_callback(av_log_default_callback); }
};

TEST_P(Conformance, FFmpegDecodesItSilentlyAtLeastAsWellAsProresKsAtTheSameSize) {
  const Case c = GetParam();
  const Picture p = c.make(c.width, c.height);
  ASSERT_EQ(p.y.size(), size_t{c.width} * c.height) << "the source picture was not made";
  // prores_ks at its HQ profile's rate, then ours aimed at the size it made.
  const size_t macroblocks = size_t{(c.width + 15) / 16} * ((c.height + 15) / 16);
  const auto ks = prores_ks(p, 900);
  ASSERT_TRUE(ks.second.ok);
  auto encoder = Encoder::create(
      {c.width, c.height, Profile::hq, 1, 1, 1, uint32_t(ks.first * 8 / macroblocks)});
  ASSERT_TRUE(encoder);
  std::vector<uint8_t> frame(encoder->max_frame_bytes());
  auto size = encoder->encode(p.planes(), frame);
  ASSERT_TRUE(size) << size.error().message();
  const Decoded ours = decode(p, frame.data(), *size);
  ASSERT_TRUE(ours.ok);
  {
    std::lock_guard lock(g_log_mu);
    for (const auto& w : g_warnings) ADD_FAILURE() << "FFmpeg said: " << w;
  }
  std::printf(
      "%s %ux%u: ours %zu bytes, Y %.2f dB, chroma %.2f dB; prores_ks %zu bytes, "
      "Y %.2f dB, chroma %.2f dB\n",
      c.name, c.width, c.height, *size, ours.psnr_y, ours.psnr_c, ks.first, ks.second.psnr_y,
      ks.second.psnr_c);
  EXPECT_LE(*size, ks.first);
  // Above 60 dB (an error of a tenth of a code) a picture is as good as lossless: the
  // comparison stops there.
  const auto capped = [](double db) { return std::min(db, 60.0); };
  EXPECT_GE(capped(ours.psnr_y), capped(ks.second.psnr_y) - 0.05);
  EXPECT_GE(capped(ours.psnr_c), capped(ks.second.psnr_c) - 0.05);
}

// The rate control's passes (slices/prores_rate.hpp) choose each slice's quantiser as the
// binary search they replaced did, on every picture of the set: the finest quantiser whose
// slices all fit the frame's budget, then the next finer one for the first slices the bytes
// left pay for. At the extreme matrices (proxy's, HQ's) and budgets from starved to lavish.
TEST_P(Conformance, ThePassesChooseWhatTheBinarySearchChose) {
  const Case c = GetParam();
  const Picture p = c.make(c.width, c.height);
  ASSERT_EQ(p.y.size(), size_t{c.width} * c.height) << "the source picture was not made";
  const std::vector<SliceSpan> slices = slice_layout(c.width, c.height);
  const size_t count = slices.size();
  const PlanesRef planes{p.y.data(),        p.cb.data(), p.cr.data(), c.width,
                         (c.width + 1) / 2, c.width,     c.height};
  std::vector<Coefficient> coefficients(count * kSliceCoefficients);
  for (size_t i = 0; i < count; ++i) {
    slice_dct(planes, slices[i].mb_x, slices[i].mb_y, slices[i].mb_count,
              &coefficients[i * kSliceCoefficients]);
  }
  for (const Profile profile : {Profile::proxy, Profile::hq}) {
    std::map<int, std::vector<uint64_t>> counted;  // every slice's size at a quantiser
    const auto sizes_at = [&](int q) -> const std::vector<uint64_t>& {
      auto [at, fresh] = counted.try_emplace(q, count);
      if (fresh) {
        auto shared = std::make_unique<SliceShared>();
        for (size_t i = 0; i < count; ++i) {
          at->second[i] = count_slice(&coefficients[i * kSliceCoefficients], slices[i].mb_count,
                                      detail::matrix(profile), q, *shared);
        }
      }
      return at->second;
    };
    for (const uint32_t bits_per_mb : {0u, 60u, 300u, 3000u}) {
      SCOPED_TRACE(std::string(to_string(profile)) + " at " + std::to_string(bits_per_mb) +
                   " bits a macroblock");
      const FrameFormat format{c.width, c.height, profile, 1, 1, 1, bits_per_mb};
      const uint64_t budget = detail::slices_budget(format, count);
      const auto total = [&](int q) {
        uint64_t sum = 0;
        for (uint64_t b : sizes_at(q)) sum += rate_bytes(b, uint32_t(count));
        return sum;
      };
      int lo = 1, hi = kMaxQuantiser;
      while (lo < hi) {
        const int q = (lo + hi) / 2;
        if (total(q) <= budget) {
          hi = q;
        } else {
          lo = q + 1;
        }
      }
      std::vector<int> want(count, lo);
      if (lo > 1) {
        uint64_t spent = total(lo);
        for (size_t i = 0; i < count && sizes_at(lo - 1)[i] != 0; ++i) {
          const uint64_t more = finer_extra(sizes_at(lo)[i], sizes_at(lo - 1)[i]);
          if (spent + more > budget) break;
          spent += more;
          want[i] = lo - 1;
        }
      }
      auto chosen = detail::choose_quantisers(
          count, budget, [&](int q, std::vector<uint64_t>& sizes) -> Result<void> {
            sizes = sizes_at(q);
            return {};
          });
      ASSERT_TRUE(chosen);
      EXPECT_EQ(chosen->quantisers, want) << "the binary search ended at " << lo;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pictures, Conformance,
                         ::testing::Values(Case{"testsrc2", testsrc2, 1280, 720},
                                           Case{"mandelbrot", mandelbrot, 640, 360},
                                           Case{"noise", noise_picture, 1280, 720},
                                           Case{"ramp", ramp_picture, 1280, 720},
                                           Case{"testsrc2", testsrc2, 1000, 562},
                                           Case{"ramp", ramp_picture, 33, 17}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(param.param.name) + "_" +
                                  std::to_string(param.param.width) + "x" +
                                  std::to_string(param.param.height);
                         });

}  // namespace
}  // namespace rdmavideo::prores
