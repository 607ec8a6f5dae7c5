// SPDX-License-Identifier: Apache-2.0
#include "audio_caps.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <charconv>

namespace rdmavideo::gst {
namespace {

// The WAVE channel mask's bits (bit 0 front left ... bit 17 top back right), as GStreamer
// names those places.
constexpr std::array<GstAudioChannelPosition, 18> kWavePositions = {
    GST_AUDIO_CHANNEL_POSITION_FRONT_LEFT,
    GST_AUDIO_CHANNEL_POSITION_FRONT_RIGHT,
    GST_AUDIO_CHANNEL_POSITION_FRONT_CENTER,
    GST_AUDIO_CHANNEL_POSITION_LFE1,
    GST_AUDIO_CHANNEL_POSITION_REAR_LEFT,
    GST_AUDIO_CHANNEL_POSITION_REAR_RIGHT,
    GST_AUDIO_CHANNEL_POSITION_FRONT_LEFT_OF_CENTER,
    GST_AUDIO_CHANNEL_POSITION_FRONT_RIGHT_OF_CENTER,
    GST_AUDIO_CHANNEL_POSITION_REAR_CENTER,
    GST_AUDIO_CHANNEL_POSITION_SIDE_LEFT,
    GST_AUDIO_CHANNEL_POSITION_SIDE_RIGHT,
    GST_AUDIO_CHANNEL_POSITION_TOP_CENTER,
    GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_LEFT,
    GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_CENTER,
    GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_RIGHT,
    GST_AUDIO_CHANNEL_POSITION_TOP_REAR_LEFT,
    GST_AUDIO_CHANNEL_POSITION_TOP_REAR_CENTER,
    GST_AUDIO_CHANNEL_POSITION_TOP_REAR_RIGHT,
};

std::optional<int> wave_bit(GstAudioChannelPosition position) {
  for (size_t bit = 0; bit < kWavePositions.size(); ++bit) {
    if (kWavePositions[bit] == position) return static_cast<int>(bit);
  }
  return std::nullopt;
}

// The WAVE mask for GStreamer's positions, where the channels are in WAVE order (each on a
// higher bit than the one before); 0 (unspecified) otherwise.
uint64_t wave_mask(const GstAudioInfo& info) {
  if (GST_AUDIO_INFO_IS_UNPOSITIONED(&info)) return 0;
  uint64_t mask = 0;
  int last = -1;
  for (int c = 0; c < GST_AUDIO_INFO_CHANNELS(&info); ++c) {
    const auto bit = wave_bit(info.position[c]);
    if (!bit || *bit <= last) return 0;
    mask |= uint64_t{1} << *bit;
    last = *bit;
  }
  return mask;
}

}  // namespace

GstCaps* audio_template_caps() {
  const std::string caps = fmt::format(
      "audio/x-raw, format=(string){{ F32LE, S32LE, S16LE }}, "
      "layout=(string){{ interleaved, non-interleaved }}, rate=(int)[ {}, {} ], "
      "channels=(int)[ 1, {} ]",
      proto::kMinSampleRate, proto::kMaxSampleRate, proto::kMaxAudioChannels);
  return gst_caps_from_string(caps.c_str());
}

Result<proto::AudioStart> audio_start(const GstAudioInfo& info) {
  const GstAudioFormat format = GST_AUDIO_INFO_FORMAT(&info);
  const bool planar = GST_AUDIO_INFO_LAYOUT(&info) == GST_AUDIO_LAYOUT_NON_INTERLEAVED;
  proto::AudioStart start;
  switch (format) {
    case GST_AUDIO_FORMAT_F32LE:
      start.sample_format = planar ? proto::SampleFormat::f32p : proto::SampleFormat::f32;
      break;
    case GST_AUDIO_FORMAT_S32LE:
      start.sample_format = planar ? proto::SampleFormat::s32p : proto::SampleFormat::s32;
      break;
    case GST_AUDIO_FORMAT_S16LE:
      start.sample_format = planar ? proto::SampleFormat::s16p : proto::SampleFormat::s16;
      break;
    default:
      return make_error(ErrorCode::unsupported,
                        "{} audio is not carried: the protocol carries F32LE, S32LE and S16LE, "
                        "interleaved or planar (put audioconvert in front)",
                        gst_audio_format_to_string(format));
  }
  const int channels = GST_AUDIO_INFO_CHANNELS(&info);
  if (channels < 1 || static_cast<uint32_t>(channels) > proto::kMaxAudioChannels) {
    return make_error(ErrorCode::unsupported, "{} channels are not carried: at most {}", channels,
                      proto::kMaxAudioChannels);
  }
  const int rate = GST_AUDIO_INFO_RATE(&info);
  if (rate < static_cast<int>(proto::kMinSampleRate) ||
      rate > static_cast<int>(proto::kMaxSampleRate)) {
    return make_error(ErrorCode::unsupported, "a rate of {} Hz is not carried: {}..{} Hz", rate,
                      proto::kMinSampleRate, proto::kMaxSampleRate);
  }
  start.sample_rate = static_cast<uint32_t>(rate);
  start.channels = static_cast<uint16_t>(channels);
  start.channel_layout = wave_mask(info);
  return start;
}

Result<ReceivedAudio> audio_info(const proto::AudioStart& format) {
  GstAudioFormat sample = GST_AUDIO_FORMAT_UNKNOWN;
  switch (format.sample_format) {
    case proto::SampleFormat::f32:
    case proto::SampleFormat::f32p: sample = GST_AUDIO_FORMAT_F32LE; break;
    case proto::SampleFormat::s32:
    case proto::SampleFormat::s32p: sample = GST_AUDIO_FORMAT_S32LE; break;
    case proto::SampleFormat::s16:
    case proto::SampleFormat::s16p: sample = GST_AUDIO_FORMAT_S16LE; break;
  }
  if (sample == GST_AUDIO_FORMAT_UNKNOWN) {
    return make_error(ErrorCode::unsupported, "sample format {} has no GStreamer name",
                      static_cast<uint32_t>(format.sample_format));
  }
  const int channels = format.channels;
  std::array<GstAudioChannelPosition, 64> positions{};
  ReceivedAudio out;
  const uint64_t mask = format.channel_layout;
  bool described = mask != 0 && std::popcount(mask) == channels && mask < (uint64_t{1} << 18);
  if (described) {
    int c = 0;
    for (size_t bit = 0; bit < kWavePositions.size(); ++bit) {
      if (mask & (uint64_t{1} << bit)) positions[c++] = kWavePositions[bit];
    }
    // GStreamer's order for these places must be the order they were sent in.
    described = gst_audio_check_valid_channel_positions(positions.data(), channels, TRUE);
    out.positioned = described;
  }
  if (!described) {
    // Unspecified: GStreamer's default places for the count (mono, stereo, ... 7.1).
    const uint64_t fallback = gst_audio_channel_get_fallback_mask(channels);
    if (fallback != 0 && format.channel_layout == 0) {
      gst_audio_channel_positions_from_mask(channels, fallback, positions.data());
    } else {
      for (int c = 0; c < channels; ++c) positions[c] = GST_AUDIO_CHANNEL_POSITION_NONE;
      out.positioned = format.channel_layout == 0;
    }
  }
  gst_audio_info_init(&out.info);
  gst_audio_info_set_format(&out.info, sample, static_cast<gint>(format.sample_rate), channels,
                            positions.data());
  out.info.layout = proto::planar(format.sample_format) ? GST_AUDIO_LAYOUT_NON_INTERLEAVED
                                                        : GST_AUDIO_LAYOUT_INTERLEAVED;
  return out;
}

Result<std::optional<std::vector<uint32_t>>> parse_tracks(const std::string& value) {
  if (value.empty() || value == "all") return std::optional<std::vector<uint32_t>>();
  std::vector<uint32_t> tracks;
  if (value == "none") return std::optional<std::vector<uint32_t>>(tracks);
  for (size_t at = 0; at <= value.size();) {
    size_t comma = value.find(',', at);
    if (comma == std::string::npos) comma = value.size();
    uint32_t n = 0;
    const char* first = value.data() + at;
    const char* last = value.data() + comma;
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || end != last || first == last || n >= proto::kMaxAudioStreams) {
      return make_error(ErrorCode::invalid_argument,
                        "tracks \"{}\" is not all, none or track numbers N[,M] (0..{})", value,
                        proto::kMaxAudioStreams - 1);
    }
    tracks.push_back(n);
    at = comma + 1;
  }
  return std::optional<std::vector<uint32_t>>(tracks);
}

}  // namespace rdmavideo::gst
