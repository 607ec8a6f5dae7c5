// SPDX-License-Identifier: Apache-2.0
// What a recording is made of: the containers and codecs a recorder knows, and the choice of
// muxer, codec and encoder for an output path and its options, checked before anything opens.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <optional>
#include <string>

#include "rdmavideo/av/recorder_options.hpp"

namespace rdmavideo::av {

struct Container {
  const char* extension;
  const char* muxer;
  const char* default_codec;
  bool fragmented;  // mov/mp4: written as fragments so a crash loses at most about a second
};

struct CodecChoice {
  const char* name;  // --codec
  AVCodecID id;
  const char* encoder;  // default FFmpeg encoder
  const char* profile;  // private "profile" option (prores_ks, dnxhd); nullptr: none
  int av_profile;       // AVCodecContext.profile (prores_aw); FF_PROFILE_UNKNOWN: none
  AVPixelFormat fixed;  // the pixel format the profile needs; NONE: the input's if possible
};

// What yuv4mpegpipe can carry (AV_PIX_FMT_NONE ends it).
extern const AVPixelFormat kY4mFormats[];

// The container a path's extension names; nullptr for none the recorder knows.
const Container* find_container(const std::string& path);

struct Choice {
  const Container* container;
  const CodecChoice* codec;
  const AVCodec* encoder;  // nullptr: the library's own ProRes encoder (kOwnProresEncoder)
};

// `format`: the stream's, when known. A 4:4:4 stream goes into ProRes 4444 in a .mov unless
// --codec says otherwise: the default ProRes HQ would halve its chroma.
Result<Choice> choose(const RecorderOptions& o, std::optional<PixelFormat> format = std::nullopt);

// The recording encoder's threads: o.threads where given, else one a core (up to 16). The
// project's ProRes encoder on the CPU (its twin) codes a frame's slices on as many.
int encoder_threads(const RecorderOptions& o);

}  // namespace rdmavideo::av
