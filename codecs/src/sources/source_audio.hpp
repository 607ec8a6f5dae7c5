// SPDX-License-Identifier: Apache-2.0
// The sound beside a Source's picture (--audio): the input's audio streams the options
// choose, each decoded and, where the protocol does not carry the decoder's format, converted
// to float planar; held until the pass over the input they belong to has its clock's origin
// (its first frame), then placed on the picture's clock.
#pragma once

extern "C" {
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <string>
#include <vector>

#include "av_util.hpp"
#include "rdmavideo/av/source_options.hpp"

namespace rdmavideo::av {

class SourceAudio {
 public:
  /// The audio streams of `input` that `options` choose (none for --audio none); `picture`
  /// is the picture's stream, which "the first" goes by. Errors name a stream it does not
  /// have, too many streams, or one that cannot be decoded.
  static Result<SourceAudio> open(AVFormatContext& input, int picture, const SourceOptions& options,
                                  const std::string& who);
  SourceAudio() = default;

  std::vector<proto::AudioStart> tracks() const;
  /// Whether packets of input stream `index` are its.
  bool takes(int index) const;
  /// One of its packets, decoded and held until place().
  Result<void> decode(const AVPacket& packet);
  /// The input ended: what every decoder still holds.
  Result<void> drain();
  /// The input was sought back to its start: the decoders forget what they held.
  void seeked();
  /// What is held, placed on the picture's clock: the pass's first frame was at `origin_ns`
  /// in the input's time and is at `pass_offset_ns` on the picture's clock.
  void place(int64_t origin_ns, int64_t pass_offset_ns);
  /// What was placed since the last call, in order per track.
  std::vector<DecodedAudio> take();

 private:
  // One audio stream of the input, decoded beside the picture.
  struct Input {
    int stream_index = -1;
    AVRational time_base{1, 1};
    AudioDecoder audio;
    uint32_t track = 0;
  };
  // Decoded before its pass's first frame gave the clock's origin: placed once it has.
  struct Pending {
    uint32_t track;
    int64_t ts_ns;  // the input's timestamp, in ns
    uint32_t samples;
    std::vector<std::byte> data;
  };
  Result<void> decode_one(Input& in, const AVPacket* packet);  // null: drain

  std::string who_;
  std::vector<Input> inputs_;
  std::vector<Pending> pending_;       // this pass's, origin not applied yet
  std::vector<DecodedAudio> decoded_;  // on the frames' clock
  UniqueFrame frame_;
};

}  // namespace rdmavideo::av
