// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/av/audio_mixer.hpp"

extern "C" {
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/channel_layout.h>
}

#include <cstring>

#include "av_util.hpp"

namespace rdmavideo::av {
namespace {

struct GraphDeleter {
  void operator()(AVFilterGraph* graph) const noexcept { avfilter_graph_free(&graph); }
};

}  // namespace

struct AudioMixer::Impl {
  std::unique_ptr<AVFilterGraph, GraphDeleter> graph;  // owns every filter in it
  std::vector<AVFilterContext*> sources;               // abuffer, one an input
  AVFilterContext* sink = nullptr;                     // abuffersink
  uint32_t rate = 0;
  uint32_t channels = 0;
  int64_t pts = 0;  // in samples: the next input's
  UniqueFrame frame;
  std::vector<float> out;
};

Result<std::unique_ptr<AudioMixer>> AudioMixer::open(uint32_t inputs, uint32_t rate,
                                                     uint32_t channels) {
  if (inputs < 1 || inputs > 64 || channels < 1 || channels > 2 || rate == 0) {
    return make_error(ErrorCode::invalid_argument, "audio mixer: {} inputs of {} channels at {} Hz",
                      inputs, channels, rate);
  }
  auto impl = std::make_unique<Impl>();
  impl->rate = rate;
  impl->channels = channels;
  impl->graph.reset(avfilter_graph_alloc());
  auto frame = make_frame("audio mixer");
  if (!impl->graph || !frame) return make_error(ErrorCode::resource, "audio mixer: out of memory");
  impl->frame = std::move(*frame);
  const char* layout = channels == 1 ? "mono" : "stereo";
  auto create = [&](AVFilterContext** ctx, const char* filter, const std::string& name,
                    const std::string& args) -> Result<void> {
    const int rc = avfilter_graph_create_filter(ctx, avfilter_get_by_name(filter), name.c_str(),
                                                args.empty() ? nullptr : args.c_str(), nullptr,
                                                impl->graph.get());
    if (rc < 0)
      return Unexpected(av_error("audio mixer", fmt::format("{} ({})", filter, args), rc));
    return {};
  };
  AVFilterContext* amix = nullptr;
  AVFilterContext* format = nullptr;
  if (auto ok = create(&amix, "amix", "mix",
                       fmt::format("inputs={}:duration=longest:dropout_transition=0", inputs));
      !ok) {
    return Unexpected(ok.error());
  }
  for (uint32_t i = 0; i < inputs; ++i) {
    AVFilterContext* src = nullptr;
    if (auto ok =
            create(&src, "abuffer", fmt::format("in{}", i),
                   fmt::format("sample_rate={}:sample_fmt=flt:channel_layout={}:time_base=1/{}",
                               rate, layout, rate));
        !ok) {
      return Unexpected(ok.error());
    }
    if (const int rc = avfilter_link(src, 0, amix, i); rc < 0) {
      return Unexpected(av_error("audio mixer", "avfilter_link", rc));
    }
    impl->sources.push_back(src);
  }
  if (auto ok =
          create(&format, "aformat", "format",
                 fmt::format("sample_fmts=flt:sample_rates={}:channel_layouts={}", rate, layout));
      !ok) {
    return Unexpected(ok.error());
  }
  if (auto ok = create(&impl->sink, "abuffersink", "out", ""); !ok) return Unexpected(ok.error());
  if (int rc = avfilter_link(amix, 0, format, 0); rc < 0)
    return Unexpected(av_error("audio mixer", "avfilter_link", rc));
  if (int rc = avfilter_link(format, 0, impl->sink, 0); rc < 0) {
    return Unexpected(av_error("audio mixer", "avfilter_link", rc));
  }
  if (const int rc = avfilter_graph_config(impl->graph.get(), nullptr); rc < 0) {
    return Unexpected(av_error("audio mixer", "avfilter_graph_config", rc));
  }
  return std::unique_ptr<AudioMixer>(new AudioMixer(std::move(impl)));
}

AudioMixer::AudioMixer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioMixer::~AudioMixer() = default;

Result<std::span<const float>> AudioMixer::mix(const std::vector<std::span<const float>>& inputs,
                                               uint32_t samples) {
  Impl& s = *impl_;
  if (inputs.size() != s.sources.size()) {
    return make_error(ErrorCode::invalid_argument, "audio mixer: {} inputs where it mixes {}",
                      inputs.size(), s.sources.size());
  }
  s.out.clear();
  if (samples == 0) return std::span<const float>(s.out);
  AVFrame* f = s.frame.get();
  for (size_t i = 0; i < inputs.size(); ++i) {
    av_frame_unref(f);
    f->format = AV_SAMPLE_FMT_FLT;
    f->sample_rate = static_cast<int>(s.rate);
    av_channel_layout_default(&f->ch_layout, static_cast<int>(s.channels));
    f->nb_samples = static_cast<int>(samples);
    if (const int rc = av_frame_get_buffer(f, 0); rc < 0)
      return Unexpected(av_error("audio mixer", "av_frame_get_buffer", rc));
    const size_t floats = static_cast<size_t>(samples) * s.channels;
    if (inputs[i].size() >= floats) {
      std::memcpy(f->data[0], inputs[i].data(), floats * sizeof(float));
    } else {
      std::memset(f->data[0], 0, floats * sizeof(float));
      std::memcpy(f->data[0], inputs[i].data(), inputs[i].size() * sizeof(float));
    }
    f->pts = s.pts;
    if (const int rc = av_buffersrc_add_frame_flags(s.sources[i], f, 0); rc < 0) {
      return Unexpected(av_error("audio mixer", "av_buffersrc_add_frame", rc));
    }
  }
  s.pts += samples;
  for (;;) {
    av_frame_unref(f);
    const int rc = av_buffersink_get_frame(s.sink, f);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) break;
    if (rc < 0) return Unexpected(av_error("audio mixer", "av_buffersink_get_frame", rc));
    const auto* data = reinterpret_cast<const float*>(f->data[0]);
    s.out.insert(s.out.end(), data, data + static_cast<size_t>(f->nb_samples) * s.channels);
  }
  av_frame_unref(f);
  return std::span<const float>(s.out);
}

}  // namespace rdmavideo::av
