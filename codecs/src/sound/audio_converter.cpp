// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/audio_converter.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

#include <algorithm>
#include <vector>

#include "av_util.hpp"

namespace rdmavideo::av {
namespace {

// libswresample's soft compensation steps through the input by (1 - delta / distance) of a
// sample's step: a delta as large as its distance is a division by zero (SIGFPE in
// swr_get_out_samples), and one near it a wild change of pitch. So at most this part of the
// distance is asked for (2%, the most any caller wants), and the rest is carried to the next
// call, within kMostOwed: a packet of one sample gets no compensation, packets of 50 or more
// get theirs.
constexpr int64_t kDistancePerSample = 50;
constexpr int64_t kMostOwed = 4800;  // samples: 100 ms at 48 kHz

}  // namespace

struct AudioConverter::Impl {
  proto::AudioStart from;
  uint32_t rate = 0;
  uint32_t channels = 0;
  std::string layouts;  // "5.1 -> stereo"
  UniqueSwr swr;
  std::vector<float> out;
  int64_t owed = 0;  // compensation asked for and not yet applied, samples; |owed| <= kMostOwed
};

AudioConverter::AudioConverter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioConverter::~AudioConverter() = default;

Result<std::unique_ptr<AudioConverter>> AudioConverter::open(const proto::AudioStart& from,
                                                             uint32_t rate, uint32_t channels) {
  auto impl = std::make_unique<Impl>();
  impl->from = from;
  impl->rate = rate;
  impl->channels = channels;
  AVChannelLayout in = layout_of(from);
  AVChannelLayout out{};
  av_channel_layout_default(&out, static_cast<int>(channels));
  char in_name[64] = {}, out_name[64] = {};
  av_channel_layout_describe(&in, in_name, sizeof in_name);
  av_channel_layout_describe(&out, out_name, sizeof out_name);
  impl->layouts = fmt::format("{} -> {}", in_name, out_name);
  SwrContext* swr = nullptr;
  const int rc = swr_alloc_set_opts2(&swr, &out, AV_SAMPLE_FMT_FLT, static_cast<int>(rate), &in,
                                     to_av(from.sample_format), static_cast<int>(from.sample_rate),
                                     0, nullptr);
  av_channel_layout_uninit(&in);
  av_channel_layout_uninit(&out);
  impl->swr.reset(swr);
  if (rc < 0) return Unexpected(av_error("audio conversion", "swr_alloc_set_opts2", rc));
  // Resampling from the start, even at one rate, so that compensation never re-initialises
  // the resampler (and drops what it holds) mid-stream.
  av_opt_set_int(swr, "flags", SWR_FLAG_RESAMPLE, 0);
  if (const int init = swr_init(swr); init < 0)
    return Unexpected(av_error("audio conversion", "swr_init", init));
  return std::unique_ptr<AudioConverter>(new AudioConverter(std::move(impl)));
}

Result<std::span<const float>> AudioConverter::convert(uint32_t samples,
                                                       std::span<const std::byte> data,
                                                       uint32_t skip) {
  auto& s = *impl_;
  if (skip >= samples) return std::span<const float>{};
  const uint8_t* planes[proto::kMaxAudioChannels] = {};
  sample_planes(s.from, data, samples, skip, planes);
  const int in = static_cast<int>(samples - skip);
  const int most = swr_get_out_samples(s.swr.get(), in);
  if (most < 0) return Unexpected(av_error("audio conversion", "swr_get_out_samples", most));
  s.out.resize(size_t(most) * s.channels);
  auto* dst = reinterpret_cast<uint8_t*>(s.out.data());
  const int n = swr_convert(s.swr.get(), &dst, most, planes, in);
  if (n < 0) return Unexpected(av_error("audio conversion", "swr_convert", n));
  return std::span<const float>(s.out.data(), size_t(n) * s.channels);
}

Result<void> AudioConverter::compensate(int delta, int distance) {
  auto& s = *impl_;
  if (distance <= 0) {
    return make_error(
        ErrorCode::invalid_argument,
        "audio conversion: compensation over {} samples (the distance must be at least 1)",
        distance);
  }
  const int64_t want = delta + s.owed;
  const int64_t most = distance / kDistancePerSample;
  const int64_t apply = std::clamp(want, -most, most);
  s.owed = std::clamp(want - apply, -kMostOwed, kMostOwed);
  if (const int rc = swr_set_compensation(s.swr.get(), static_cast<int>(apply), distance); rc < 0) {
    return Unexpected(av_error("audio conversion", "swr_set_compensation", rc));
  }
  return {};
}

std::string AudioConverter::describe() const {
  const auto& s = *impl_;
  return fmt::format("{} {} Hz {} ch -> f32 {} Hz ({})", proto::to_string(s.from.sample_format),
                     s.from.sample_rate, s.from.channels, s.rate, s.layouts);
}

}  // namespace rdmavideo::av
