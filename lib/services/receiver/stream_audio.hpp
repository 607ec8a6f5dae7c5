// SPDX-License-Identifier: Apache-2.0
// A stream's audio tracks on its connection: each started (checked against the picture and
// the protocol version, numbered in the order they started), its chunks handed to the sink
// within a queue bounded by the memory budget, and ended, all counted in the stream's record
// with how far the sound travels from the picture. The connection's thread calls it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "channel/receiver_channel.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/protocol.hpp"
#include "receiver/stream_record.hpp"

namespace rdmavideo::receiver {

class StreamAudio {
 public:
  // `video` is the stream's picture so far, `version` the connection's, `who` names it.
  // `sink` and `record` are the admitted stream's: null before one is, when every message is
  // refused before they are looked at (a track needs a picture, a chunk or an end a track).
  Result<void> start(const proto::AudioStart& m, const std::optional<proto::StreamStart>& video,
                     uint16_t version, const std::shared_ptr<memory::Budget>& budget,
                     std::string_view who, StreamSink* sink, StreamRecord* record);
  Result<void> chunk(proto::AudioChunk& m, StreamSink* sink, StreamRecord* record);
  Result<void> end(const proto::AudioEnd& m, StreamSink* sink, StreamRecord* record);
  // A frame of the picture arrived (its pts, when): the A/V offset is reckoned from it.
  void video_frame(int64_t pts_ns, Clock::time_point arrival);
  // The stream is over: the queue's reservation goes with the last packet the sink lets go.
  void release_queue();

 private:
  // The tracks by stream_id: running, or ended (kept so an id is never started twice).
  struct Track {
    AudioTrack track;
    bool ended = false;
  };
  std::map<uint32_t, Track> tracks_;
  struct Queue;
  std::shared_ptr<Queue> queue_;  // samples at the sink, bounded; shared with packets
  bool video_ = false;            // a frame of the picture has arrived
  int64_t last_video_pts_ = 0;    // the last frame's pts, for the A/V offset
  Clock::time_point last_video_arrival_{};
};

}  // namespace rdmavideo::receiver
