// SPDX-License-Identifier: Apache-2.0
// The mapping between GStreamer's raw audio caps and the protocol's AudioStart, which both
// elements use for their audio pads: sample formats (F32, S32, S16, interleaved or planar, as
// the protocol carries them), rates, channels and their positions (the protocol's WAVE
// channel mask against GStreamer's channel positions).
//
// Pure translation, like common.hpp.
#pragma once

#include <gst/audio/audio.h>

#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/protocol.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::gst {

/// audio/x-raw in every carried sample format and layout, any rate, 1..16 channels: the
/// template of both elements' audio pads.
GstCaps* audio_template_caps();

/// The AudioStart for negotiated audio caps (no stream id); an error naming what the
/// protocol cannot carry (S24, U8, big-endian, more than 16 channels).
Result<proto::AudioStart> audio_start(const GstAudioInfo& info);
/// GStreamer's description of a received track. Channels whose WAVE positions GStreamer's
/// channel order cannot express as they are sent are marked unpositioned (`positioned` false).
struct ReceivedAudio {
  GstAudioInfo info{};
  bool positioned = true;
};
Result<ReceivedAudio> audio_info(const proto::AudioStart& format);

/// The `tracks` property of rdmasrc: "all", "none", or track numbers "N[,M...]" (0-based, in
/// the order the sender started them). nullopt for "all"; an error naming a bad value.
Result<std::optional<std::vector<uint32_t>>> parse_tracks(const std::string& value);

}  // namespace rdmavideo::gst
