// SPDX-License-Identifier: Apache-2.0
// The ProRes encoder's arithmetic and its CPU twin, without a decoder (prores_conformance_test
// decodes with FFmpeg's): the slice layout, the codes bit for bit, the DCT against the
// transform's definition, the quantiser's multiply against division, and the encoder's contract
// (its header fields, the size it aims at and never passes, the same bytes for the same picture, a
// size it refuses).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <iostream>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "encoder/frame_writer.hpp"
#include "rdmavideo/prores.hpp"
#include "slices/prores_slices.hpp"

namespace rdmavideo::prores {
namespace {

// The tests' own writer, as the definition writes a slice: bits most significant first, byte
// after byte into `out`; past `capacity`, nothing more is written and overflowed() says so.
// (The encoder places its codes with prores::BitPlacer and counts them with BitCounter.)
class BitWriter {
 public:
  BitWriter(uint8_t* out, size_t capacity) : out_(out), capacity_(capacity) {}

  /// The low `count` (0..32) bits of `value`.
  void put(uint32_t value, int count) {
    if (count == 0) return;
    acc_ = (acc_ << count) | (value & (count == 32 ? 0xffffffffu : (1u << count) - 1));
    held_ += count;
    while (held_ >= 8) {
      held_ -= 8;
      emit(static_cast<uint8_t>(acc_ >> held_));
    }
  }
  void zeros(unsigned count) {
    for (; count >= 32; count -= 32) put(0, 32);
    put(0, static_cast<int>(count));
  }
  /// Pads the last byte with zeros; the bytes written.
  size_t finish() {
    if (held_ > 0) {
      emit(static_cast<uint8_t>(acc_ << (8 - held_)));
      held_ = 0;
    }
    return bytes_;
  }
  bool overflowed() const { return overflow_; }

 private:
  void emit(uint8_t byte) {
    if (bytes_ < capacity_) {
      out_[bytes_] = byte;
      ++bytes_;
    } else {
      overflow_ = true;
    }
  }

  uint8_t* out_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t acc_ = 0;
  int held_ = 0;
  bool overflow_ = false;
};

std::string bits_of(uint32_t value, uint8_t book) {
  uint8_t out[16] = {};
  BitWriter w(out, sizeof(out));
  put_code(w, value, book);
  // Written bits, then the padding: a marker 1 bit shows where the code ended.
  w.put(1, 1);
  const size_t bytes = w.finish();
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    for (int b = 7; b >= 0; --b) text += ((out[i] >> b) & 1) ? '1' : '0';
  }
  return text.substr(0, text.find_last_of('1'));  // up to the marker
}

TEST(ProresCodes, RiceBelowTheSwitchAndExponentialGolombAbove) {
  // 0x04: Rice order 0, exponential Golomb order 1, switch 0: 0 is "1"; from 1 on, one zero
  // then value + 1 in exp+1 bits.
  EXPECT_EQ(bits_of(0, 0x04), "1");
  EXPECT_EQ(bits_of(1, 0x04), "010");
  EXPECT_EQ(bits_of(2, 0x04), "011");
  EXPECT_EQ(bits_of(3, 0x04), "00100");
  // 0x28: Rice order 1, switch 0: below 2, "1" and one bit; above, Golomb of order 2.
  EXPECT_EQ(bits_of(0, 0x28), "10");
  EXPECT_EQ(bits_of(1, 0x28), "11");
  EXPECT_EQ(bits_of(2, 0x28), "0100");  // 2 - 2 + 4 = 4 = "100" after one zero
  // 0x06: Rice order 0, switch 2: 0..2 in unary.
  EXPECT_EQ(bits_of(2, 0x06), "001");
}

TEST(ProresCodes, AWriterPastItsEndSaysSo) {
  uint8_t out[2] = {};
  BitWriter w(out, sizeof(out));
  w.put(0xffff, 16);
  EXPECT_FALSE(w.overflowed());
  w.put(1, 1);
  w.finish();
  EXPECT_TRUE(w.overflowed());
}

// Every code of every code book the coder uses, counted and written: the counter (how the
// chunks' lengths are found) says the bits the writer writes.
TEST(ProresCodes, ACounterCountsWhatAWriterWrites) {
  std::set<uint8_t> books = {kFirstDcBook};
  for (unsigned last = 0; last < 20; ++last) {
    books.insert(dc_book(last));
    books.insert(run_book(last));
    books.insert(level_book(last));
  }
  for (const uint8_t book : books) {
    for (uint32_t value = 0; value < 70000; value += value < 300 ? 1 : 97) {
      uint8_t out[64] = {};
      BitWriter w(out, sizeof(out));
      BitCounter n;
      put_code(w, value, book);
      put_code(n, value, book);
      w.put(1, 1);  // a marker: where the code ended
      const size_t bytes = w.finish();
      size_t bits = bytes * 8;
      while (bits > 0 && !((out[(bits - 1) / 8] >> (7 - (bits - 1) % 8)) & 1)) --bits;
      ASSERT_EQ(n.bits, bits - 1) << "value " << value << " book " << int(book);
    }
  }
}

// A slice's codes by the definition (RDD 36), written plainly from each block's coefficients
// in raster order: the header, then each plane (Y: 4 blocks a macroblock, then Cb and Cr: 2),
// its DC codes and then its AC codes, coefficient by coefficient in scan order across the
// plane's blocks, into one writer, each coefficient divided by its step. Empty: over its cap.
std::vector<uint8_t> slice_by_definition(const std::vector<std::array<int32_t, 64>>& blocks,
                                         uint32_t mb_count, const uint8_t* matrix, int q) {
  const auto level_of = [&](uint32_t block, int at) {
    const int32_t c = blocks[block][at], step = matrix[at] * q;
    const int32_t level = ((c < 0 ? -c : c) * 8 + 3 * step) / (8 * step);
    return c < 0 ? -level : level;
  };
  std::vector<uint8_t> out(kSliceHeaderBytes + 3 * slice_cap(mb_count));
  size_t used = kSliceHeaderBytes, plane_bytes[3] = {};
  for (int p = 0; p < 3; ++p) {
    const uint32_t n = p == 0 ? 4 * mb_count : 2 * mb_count;
    const uint32_t first = p == 0 ? 0 : p == 1 ? 4 * mb_count : 6 * mb_count;
    BitWriter w(out.data() + used, out.size() - used);
    int32_t last_dc = level_of(first, 0);
    put_code(w, static_cast<uint32_t>(last_dc >= 0 ? 2 * last_dc : -2 * last_dc - 1), kFirstDcBook);
    unsigned last_code = 5;
    bool negative = false;
    for (uint32_t b = 1; b < n; ++b) {
      const int32_t dc = level_of(first + b, 0), delta = dc - last_dc;
      const auto magnitude = static_cast<uint32_t>(delta < 0 ? -delta : delta);
      const unsigned code = delta == 0 ? 0 : magnitude * 2 - ((delta < 0) != negative ? 1 : 0);
      put_code(w, code, dc_book(last_code));
      last_code = code;
      negative = delta < 0;
      last_dc = dc;
    }
    unsigned run = 0, last_run = 4, last_level = 2;
    for (int i = 1; i < 64; ++i) {
      for (uint32_t b = 0; b < n; ++b) {
        const int32_t v = level_of(first + b, scan_position(i));
        if (v == 0) {
          ++run;
          continue;
        }
        const auto level = static_cast<unsigned>(v < 0 ? -v : v);
        put_code(w, run, run_book(last_run));
        put_code(w, level - 1, level_book(last_level));
        w.put(v < 0 ? 1 : 0, 1);
        last_run = run;
        last_level = level;
        run = 0;
      }
    }
    plane_bytes[p] = w.finish();
    used += plane_bytes[p];
  }
  if (used > slice_cap(mb_count)) return {};
  out.resize(used);
  out[0] = kSliceHeaderBytes << 3;
  out[1] = static_cast<uint8_t>(q);
  put16(&out[2], static_cast<uint32_t>(plane_bytes[0]));
  put16(&out[4], static_cast<uint32_t>(plane_bytes[1]));
  return out;
}

// The chunks' summaries folded (what a GPU's threads compute for a slice, a chunk each) give
// the definition's size, and each chunk's codes written at the place the fold gives it make
// the definition's bytes: slices of every width, quantisers from the finest to the coarsest,
// and coefficients from all zero through sparse to dense, small and as large as a DCT makes
// them.
TEST(ProresChunks, FoldedSummariesGiveTheDefinitionsSizeAndPlacedCodesItsBytes) {
  std::mt19937 random(21);
  auto shared = std::make_unique<SliceShared>();
  std::vector<uint32_t> words(kSliceWords);
  const uint8_t* matrix = detail::matrix(Profile::hq);
  int cases = 0, over_cap = 0;
  for (const uint32_t mb_count : {1u, 2u, 4u, 8u}) {
    for (const int density : {0, 1, 8, 40, 100}) {  // percent of coefficients not zero
      for (const int32_t largest : {3, 60, 16384}) {
        std::vector<std::array<int32_t, 64>> blocks(8 * mb_count);
        for (auto& block : blocks) {
          for (auto& c : block) {
            const bool set = int(random() % 100) < density;
            c = set ? int32_t(random() % (2 * largest + 1)) - largest : 0;
          }
        }
        // Laid out as the DCT lays them: block b's scan position i is number i x n + b of its
        // plane.
        std::vector<Coefficient> coded(kSliceCoefficients);
        for (int p = 0; p < 3; ++p) {
          const PlaneSpan span = plane_span(p, mb_count);
          const uint32_t first = p == 0 ? 0 : p == 1 ? 4 * mb_count : 6 * mb_count;
          for (uint32_t b = 0; b < span.blocks; ++b) {
            for (int at = 0; at < 64; ++at) {
              coded[span.first + uint32_t(scan_index(at)) * span.blocks + b] =
                  static_cast<Coefficient>(blocks[first + b][at]);
            }
          }
        }
        for (const int q : {1, 2, 5, 16, 61, 128}) {
          SCOPED_TRACE(std::to_string(mb_count) + " macroblocks, " + std::to_string(density) +
                       "% set, up to " + std::to_string(largest) + ", q " + std::to_string(q));
          const std::vector<uint8_t> want = slice_by_definition(blocks, mb_count, matrix, q);
          const size_t size = count_slice(coded.data(), mb_count, matrix, q, *shared);
          ASSERT_EQ(size, want.size());
          ++cases;
          if (size == 0) {
            ++over_cap;
            continue;
          }
          std::vector<uint8_t> got(size);
          ASSERT_EQ(write_slice(coded.data(), mb_count, matrix, q, got.data(), size, *shared,
                                words.data()),
                    size);
          ASSERT_EQ(got, want);
        }
      }
    }
  }
  // A slice's cap is more than its largest coefficients take: none here comes near it.
  EXPECT_EQ(over_cap, 0);
  EXPECT_EQ(cases, 4 * 5 * 3 * 6);
}

TEST(ProresDct, IsFourTimesTheOrthonormalTransformWithinOne) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> sample(-512, 511);
  for (int trial = 0; trial < 50; ++trial) {
    int32_t in[64], out[64];
    for (auto& v : in) v = trial == 0 ? 511 : trial == 1 ? -512 : sample(rng);
    forward_dct(in, out);
    for (int u = 0; u < 8; ++u) {
      for (int v = 0; v < 8; ++v) {
        double sum = 0;
        for (int y = 0; y < 8; ++y) {
          for (int x = 0; x < 8; ++x) {
            sum += in[y * 8 + x] * std::cos((2 * x + 1) * v * std::numbers::pi / 16) *
                   std::cos((2 * y + 1) * u * std::numbers::pi / 16);
          }
        }
        const double cu = u ? 0.5 : std::sqrt(0.125), cv = v ? 0.5 : std::sqrt(0.125);
        EXPECT_NEAR(out[u * 8 + v], 4 * cu * cv * sum, 1.001) << "trial " << trial;
      }
    }
  }
}

// log2_floor against its definition, the loop it replaced: every value below 2^20, and each
// power of two above it with its neighbours.
TEST(ProresBits, Log2FloorIsTheHighestSetBit) {
  const auto definition = [](uint32_t v) {
    int n = 0;
    while (v >>= 1) ++n;
    return n;
  };
  for (uint32_t v = 1; v < (1u << 20); ++v) ASSERT_EQ(log2_floor(v), definition(v)) << v;
  for (int b = 20; b < 32; ++b) {
    for (const uint32_t v : {(1u << b) - 1, 1u << b, (1u << b) + 1}) {
      EXPECT_EQ(log2_floor(v), definition(v)) << v;
    }
  }
  EXPECT_EQ(log2_floor(0xffffffffu), 31);
}

// The quantiser's divisor at both edges of every multiple it can meet, for every divisor the
// multiply is for: a multiplier one too small shows at n = k d (a quotient one short), one too
// large at n = k d - 1 (one over).
TEST(ProresQuantiser, TheMultiplyIsDivisionAtEveryDivisorsEdges) {
  constexpr uint32_t kTop = (1u << kDividendBits) - 1;
  uint64_t wrong = 0;
  std::string first;
  for (uint32_t d = 1; d <= kMaxDivisor; ++d) {
    const Divisor divisor(d);
    const uint32_t last = kTop / d * d;
    for (const uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 2 * d, last - 1, last, kTop}) {
      if (n > kTop || divisor.divide(n) == n / d) continue;
      if (wrong++ == 0) first = std::to_string(n) + " / " + std::to_string(d);
    }
  }
  EXPECT_EQ(wrong, 0u) << "first: " << first;
}

// Every numerator the quantiser divides, for every step it divides by: each profile's matrix
// entries times every quantiser, each coefficient a DCT can give (4 x 8 x 512 at most, and
// one for the rounding). The definition is the division it replaced.
TEST(ProresQuantiser, EveryCoefficientAtEveryStepIsQuantisedAsByDivision) {
  constexpr int32_t kMaxCoefficient = 4 * 8 * 512 + 1;
  std::set<int32_t> steps;
  for (const auto profile : {Profile::proxy, Profile::lt, Profile::standard, Profile::hq}) {
    const uint8_t* matrix = detail::matrix(profile);
    for (int at = 0; at < kBlockSamples; ++at) {
      for (int q = 1; q <= kMaxQuantiser; ++q) steps.insert(matrix[at] * q);
    }
  }
  uint64_t wrong = 0, checked = 0;
  std::string first;
  for (const int32_t step : steps) {
    const Divisor eight_steps(static_cast<uint32_t>(step) * 8);
    for (int32_t c = -kMaxCoefficient; c <= kMaxCoefficient; ++c) {
      const int32_t magnitude = c < 0 ? -c : c;
      const int32_t level = (magnitude * 8 + step * 3) / (step * 8);
      ++checked;
      if (quantise(c, step, eight_steps) == (c < 0 ? -level : level)) continue;
      if (wrong++ == 0) first = std::to_string(c) + " at step " + std::to_string(step);
    }
  }
  std::cout << checked << " coefficients at " << steps.size() << " steps\n";
  EXPECT_EQ(wrong, 0u) << "first: " << first;
}

TEST(ProresSlices, RowsAreCutIntoEightFourTwoAndOneMacroblocks) {
  // 1000 pixels: 63 macroblocks, 7 of 8, then 4, 2 and 1.
  const auto slices = slice_layout(1000, 20);
  ASSERT_EQ(slices.size(), 2u * 10);
  EXPECT_EQ(slices[6].mb_count, 8u);
  EXPECT_EQ(slices[7].mb_count, 4u);
  EXPECT_EQ(slices[7].mb_x, 56u);
  EXPECT_EQ(slices[8].mb_count, 2u);
  EXPECT_EQ(slices[9].mb_count, 1u);
  EXPECT_EQ(slices[9].mb_x, 62u);
  EXPECT_EQ(slices[10].mb_y, 1u);
  EXPECT_EQ(slice_layout(1920, 1080).size(), 15u * 68);
}

struct Picture {
  uint32_t width, height;
  std::vector<uint16_t> y, cb, cr;
  Planes422 planes() const { return {y.data(), cb.data(), cr.data(), width, (width + 1) / 2}; }
};

Picture noise(uint32_t width, uint32_t height, int seed) {
  Picture p{width, height, {}, {}, {}};
  std::mt19937 rng(seed);
  const uint32_t cw = (width + 1) / 2;
  p.y.resize(size_t{width} * height);
  p.cb.resize(size_t{cw} * height);
  p.cr.resize(size_t{cw} * height);
  for (uint32_t r = 0; r < height; ++r) {
    for (uint32_t c = 0; c < width; ++c) p.y[r * width + c] = 64 + (c * 700) / width + rng() % 96;
    for (uint32_t c = 0; c < cw; ++c) {
      p.cb[r * cw + c] = 300 + rng() % 64;
      p.cr[r * cw + c] = 700 - (r * 300) / height;
    }
  }
  return p;
}

TEST(ProresEncoder, TheHeaderSaysTheSizeProfileAndColour) {
  const Picture p = noise(250, 36, 1);
  auto encoder = Encoder::create({250, 36, Profile::hq, 9, 16, 9});
  ASSERT_TRUE(encoder) << encoder.error().message();
  std::vector<uint8_t> out(encoder->max_frame_bytes());
  auto size = encoder->encode(p.planes(), out);
  ASSERT_TRUE(size) << size.error().message();
  const auto be16 = [&](size_t at) { return out[at] << 8 | out[at + 1]; };
  EXPECT_EQ(size_t(be16(0) << 16 | be16(2)), *size);
  EXPECT_EQ(std::string(out.begin() + 4, out.begin() + 8), "icpf");
  EXPECT_EQ(be16(8), 148);     // the frame header's size, matrices included
  EXPECT_EQ(be16(16), 250);    // width
  EXPECT_EQ(be16(18), 36);     // height
  EXPECT_EQ(out[20] >> 6, 2);  // 4:2:2
  EXPECT_EQ(out[22], 9);       // Rec. 2020 primaries
  EXPECT_EQ(out[23], 16);      // PQ
  EXPECT_EQ(out[24], 9);       // Rec. 2020 matrix
  // The picture: 16 macroblocks a row (8, 4, 2, 1, 1 does not happen: 16 = 8 + 8), 3 rows.
  EXPECT_EQ(be16(156 + 5), 3 * 2);
  EXPECT_EQ(fourcc(Profile::hq), "apch");
  EXPECT_EQ(fourcc(Profile::standard), "apcn");
}

TEST(ProresEncoder, AimsAtTheProfilesSizeAndNeverPassesItsLimit) {
  for (auto profile : {Profile::proxy, Profile::lt, Profile::standard, Profile::hq}) {
    const Picture p = noise(640, 360, 2);
    auto encoder = Encoder::create({640, 360, profile});
    ASSERT_TRUE(encoder);
    std::vector<uint8_t> out(encoder->max_frame_bytes());
    auto size = encoder->encode(p.planes(), out);
    ASSERT_TRUE(size) << size.error().message();
    EXPECT_LE(*size, encoder->max_frame_bytes());
    // Noise needs every bit it is given: within 10% under the target, and over it by no more
    // than the headers and the table.
    EXPECT_GE(*size, encoder->target_frame_bytes() * 9 / 10) << to_string(profile);
    const size_t headers = 8 + 148 + 8 + 2 * slice_layout(640, 360).size();
    EXPECT_LE(*size, encoder->target_frame_bytes() + headers) << to_string(profile);
  }
}

TEST(ProresEncoder, TheSamePictureMakesTheSameBytes) {
  const Picture p = noise(333, 77, 3);
  auto encoder = Encoder::create({333, 77, Profile::standard});
  ASSERT_TRUE(encoder);
  std::vector<uint8_t> a(encoder->max_frame_bytes()), b(encoder->max_frame_bytes());
  auto sa = encoder->encode(p.planes(), a);
  auto sb = encoder->encode(p.planes(), b);
  ASSERT_TRUE(sa && sb);
  ASSERT_EQ(*sa, *sb);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<long>(*sa), b.begin()));
}

// The twin's slices coded by several threads: the same frames as by one, at Proxy and HQ and
// at a size whose rows end in short slices.
TEST(ProresEncoder, AnyNumberOfThreadsMakesTheSameBytes) {
  for (const auto profile : {Profile::proxy, Profile::hq}) {
    const uint32_t w = 1000, h = 200;
    std::vector<uint16_t> y(size_t{w} * h), cb(size_t{w / 2} * h), cr(size_t{w / 2} * h);
    std::mt19937 random(7);
    for (auto& v : y) v = static_cast<uint16_t>(random() % 1024);
    for (size_t i = 0; i < cb.size(); ++i) {
      cb[i] = static_cast<uint16_t>(512 + (i % 97));
      cr[i] = static_cast<uint16_t>(random() % 1024);
    }
    const Planes422 picture{y.data(), cb.data(), cr.data(), w, w / 2};
    std::vector<std::vector<uint8_t>> frames;
    for (const unsigned threads : {1u, 2u, 3u, 16u}) {
      auto encoder = Encoder::create({w, h, profile}, threads);
      ASSERT_TRUE(encoder) << encoder.error().message();
      std::vector<uint8_t> out(encoder->max_frame_bytes());
      auto size = encoder->encode(picture, out);
      ASSERT_TRUE(size) << size.error().message();
      out.resize(*size);
      frames.push_back(std::move(out));
      EXPECT_EQ(frames.back(), frames.front()) << threads << " threads, " << to_string(profile);
    }
  }
}

TEST(ProresEncoder, RefusesWhatItCannotCarry) {
  EXPECT_FALSE(Encoder::create({0, 10, Profile::hq}));
  EXPECT_FALSE(Encoder::create({70000, 10, Profile::hq}));
  auto encoder = Encoder::create({64, 64, Profile::hq});
  ASSERT_TRUE(encoder);
  const Picture p = noise(64, 64, 4);
  std::vector<uint8_t> small(100);
  auto size = encoder->encode(p.planes(), small);
  ASSERT_FALSE(size);
  EXPECT_NE(size.error().message().find("100 bytes"), std::string::npos);
}

}  // namespace
}  // namespace rdmavideo::prores
