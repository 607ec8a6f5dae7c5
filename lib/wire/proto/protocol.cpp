// SPDX-License-Identifier: Apache-2.0
// The messages' names and kinds, and what a sender fits into them. The codec is decode.cpp
// and encode.cpp; layouts are specified in docs/protocol.md, keep the two in step.
#include "rdmavideo/protocol.hpp"

#include "proto/codec.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::proto {

using namespace codec;  // NOLINT(google-build-using-namespace): the codec's own words

uint16_t lowest_version(MessageType type) {
  if (handshake_message(type)) return kHandshakeHeaderVersion;
  if (type == MessageType::AudioStart || type == MessageType::AudioChunk ||
      type == MessageType::AudioEnd) {
    return kAudioVersion;
  }
  return kMinVersion;
}

std::string_view to_string(SampleFormat format) {
  switch (format) {
    case SampleFormat::s16: return "s16";
    case SampleFormat::s32: return "s32";
    case SampleFormat::f32: return "f32";
    case SampleFormat::s16p: return "s16p";
    case SampleFormat::s32p: return "s32p";
    case SampleFormat::f32p: return "f32p";
  }
  return "unknown";
}

uint32_t bytes_per_sample(SampleFormat format) {
  return format == SampleFormat::s16 || format == SampleFormat::s16p ? 2 : 4;
}

bool planar(SampleFormat format) {
  return format == SampleFormat::s16p || format == SampleFormat::s32p ||
         format == SampleFormat::f32p;
}

std::string_view to_string(MediaKind kind) {
  switch (kind) {
    case MediaKind::video: return "video";
    case MediaKind::audio: return "audio";
  }
  return "unknown";
}

std::string_view to_string(MessageType type) {
  switch (type) {
    case MessageType::Hello: return "Hello";
    case MessageType::HelloAck: return "HelloAck";
    case MessageType::StreamStart: return "StreamStart";
    case MessageType::RingInfo: return "RingInfo";
    case MessageType::FrameWritten: return "FrameWritten";
    case MessageType::CreditReturn: return "CreditReturn";
    case MessageType::Keepalive: return "Keepalive";
    case MessageType::EndOfStream: return "EndOfStream";
    case MessageType::Error: return "Error";
    case MessageType::Auth: return "Auth";
    case MessageType::AudioStart: return "AudioStart";
    case MessageType::AudioChunk: return "AudioChunk";
    case MessageType::AudioEnd: return "AudioEnd";
  }
  return "unknown";
}

MessageType type_of(const Message& message) {
  // The variant's alternatives are in MessageType order, starting at Hello = 1.
  return static_cast<MessageType>(message.index() + 1);
}

Result<StreamStart> make_stream_start(PixelFormat format, uint32_t width, uint32_t height,
                                      Rational frame_rate) {
  auto layout = canonical_layout(format, width, height);
  if (!layout) return Unexpected(layout.error());
  if (frame_rate.num == 0 || frame_rate.den == 0) {
    return make_error(ErrorCode::invalid_argument, "frame rate {}/{} invalid", frame_rate.num,
                      frame_rate.den);
  }
  StreamStart m;
  m.pixel_format = format;
  m.width = width;
  m.height = height;
  m.frame_rate = frame_rate;
  m.layout = *layout;
  return m;
}

std::string fit_name(std::string_view text) {
  std::string name = cut_utf8(valid_utf8(text), kNameBytes - 1);
  for (char& c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return name;
}

}  // namespace rdmavideo::proto
