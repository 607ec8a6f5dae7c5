// SPDX-License-Identifier: Apache-2.0
#include "proto/checks.hpp"

#include <algorithm>

namespace rdmavideo::proto {

Result<HelloAck> answer_hello(const Hello& hello, uint64_t max_frame_bytes, uint32_t credits,
                              uint16_t max_version) {
  if (hello.max_version < kMinVersion || hello.min_version > max_version) {
    return Unexpected(
        Error(ErrorCode::unsupported,
              fmt::format("Hello versions {}..{} do not overlap this receiver's {}..{}",
                          hello.min_version, hello.max_version, kMinVersion, max_version)));
  }
  HelloAck ack;
  ack.version = std::min(hello.max_version, max_version);
  ack.flags = kCapChecksum;
  ack.max_frame_bytes = max_frame_bytes;
  ack.credits = credits;
  ack.software = "rdmavideo " RDMAVIDEO_VERSION;
  return ack;
}

Result<void> check_stream_start(const StreamStart& m, const std::optional<StreamStart>& current,
                                uint32_t last_epoch, uint64_t max_frame_bytes) {
  if (m.ring_epoch <= last_epoch) {
    return make_error(ErrorCode::protocol, "StreamStart.ring_epoch {} not after the current {}",
                      m.ring_epoch, last_epoch);
  }
  if (m.media != MediaKind::video) {
    return make_error(ErrorCode::unsupported,
                      "StreamStart.media {} ({}): a StreamStart starts the video stream; audio "
                      "streams start with AudioStart",
                      static_cast<uint32_t>(m.media), to_string(m.media));
  }
  if (current && m.stream_id != current->stream_id) {
    return make_error(ErrorCode::unsupported,
                      "StreamStart.stream_id {}: this connection carries stream {} (one stream "
                      "per connection)",
                      m.stream_id, current->stream_id);
  }
  if (m.layout.frame_bytes > max_frame_bytes) {
    return make_error(ErrorCode::unsupported,
                      "StreamStart.frame_bytes {} exceeds this receiver's limit of {} bytes",
                      m.layout.frame_bytes, max_frame_bytes);
  }
  return {};
}

Result<void> check_frame_written(const FrameWritten& m, const std::optional<StreamStart>& current,
                                 uint32_t slot_count) {
  if (!current) return make_error(ErrorCode::protocol, "FrameWritten before StreamStart");
  if (m.ring_epoch != current->ring_epoch) {
    return make_error(ErrorCode::protocol,
                      "FrameWritten.ring_epoch {} is not the current ring ({})", m.ring_epoch,
                      current->ring_epoch);
  }
  if (m.slot >= slot_count) {
    return make_error(ErrorCode::protocol, "FrameWritten.slot {} out of range (ring has {} slots)",
                      m.slot, slot_count);
  }
  if (m.bytes > current->layout.frame_bytes) {
    return make_error(ErrorCode::protocol, "FrameWritten.bytes {} larger than the slot ({} bytes)",
                      m.bytes, current->layout.frame_bytes);
  }
  if (m.bytes != current->layout.frame_bytes) {
    return make_error(ErrorCode::protocol,
                      "FrameWritten.bytes {} does not match StreamStart.frame_bytes {}", m.bytes,
                      current->layout.frame_bytes);
  }
  return {};
}

Result<void> check_audio_start(const AudioStart& m, const std::optional<StreamStart>& video,
                               size_t started, bool id_started, uint16_t version) {
  if (version < kAudioVersion) {
    return make_error(ErrorCode::protocol,
                      "AudioStart on a version {} connection (audio is version {})", version,
                      kAudioVersion);
  }
  if (!video) {
    return make_error(ErrorCode::unsupported,
                      "AudioStart before the video's StreamStart: audio travels only as tracks "
                      "of a video stream (an audio-only connection is refused)");
  }
  if (m.stream_id == video->stream_id) {
    return make_error(ErrorCode::protocol, "AudioStart.stream_id {} is the video stream's",
                      m.stream_id);
  }
  if (id_started) {
    return make_error(ErrorCode::protocol,
                      "AudioStart.stream_id {} already started on this connection", m.stream_id);
  }
  if (started >= kMaxAudioStreams) {
    return make_error(ErrorCode::unsupported,
                      "AudioStart.stream_id {}: a connection carries at most {} audio streams",
                      m.stream_id, kMaxAudioStreams);
  }
  return {};
}

Result<void> check_audio_chunk(const AudioChunk& m, const AudioStart* stream) {
  if (!stream)
    return make_error(ErrorCode::protocol, "AudioChunk.stream_id {} names no running audio stream",
                      m.stream_id);
  const uint64_t want =
      uint64_t{m.samples} * stream->channels * bytes_per_sample(stream->sample_format);
  if (m.data.size() != want) {
    return make_error(ErrorCode::protocol,
                      "AudioChunk of {} bytes of samples does not match {} samples x {} channels "
                      "of {} ({} bytes)",
                      m.data.size(), m.samples, stream->channels, to_string(stream->sample_format),
                      want);
  }
  return {};
}

std::optional<Message> closing_message(const Error& error, bool tell_peer) {
  const bool peer_gone =
      error.code() == ErrorCode::peer_closed || error.code() == ErrorCode::timeout;
  if (!tell_peer || peer_gone) return std::nullopt;
  return ErrorMessage{error.code(), error.message()};
}

}  // namespace rdmavideo::proto
