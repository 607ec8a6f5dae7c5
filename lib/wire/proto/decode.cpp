// SPDX-License-Identifier: Apache-2.0
// Decoding: a header, then a body of its type, every field checked (docs/protocol.md).
#include <algorithm>

#include "proto/codec.hpp"
#include "proto/wire.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::proto {

using namespace codec;  // NOLINT(google-build-using-namespace): the codec's own words

namespace {

// A NUL-terminated text field of fixed size. `field` names it for errors.
Result<std::string> get_fixed_text(WireReader& in, size_t size, std::string_view field) {
  auto bytes = in.get_bytes(size);
  const auto* chars = reinterpret_cast<const char*>(bytes.data());
  const auto* end = std::find(chars, chars + bytes.size(), '\0');
  if (end == chars + bytes.size()) {
    return bad("{} is not NUL-terminated within {} bytes", field, size);
  }
  for (const char* c = chars; c != end; ++c) {
    if (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f) {
      return bad("{} has control character 0x{:02x} at byte {}", field,
                 static_cast<unsigned char>(*c), c - chars);
    }
  }
  // Names are shown and tagged, never parsed: bytes that are not UTF-8 are replaced, not
  // refused. Each replacement (U+FFFD) is three bytes: the text is cut to what the field holds,
  // so that it is sent on as it was read.
  return cut_utf8(valid_utf8(std::string_view(chars, static_cast<size_t>(end - chars))), size - 1);
}

Result<void> expect_length(const Header& header, uint32_t expected) {
  if (header.length != expected) {
    return bad("{} length {} wrong (must be {})", to_string(header.type), header.length, expected);
  }
  return {};
}

Result<Message> decode_hello(WireReader& in) {
  Hello m;
  m.min_version = in.get<uint16_t>();
  m.max_version = in.get<uint16_t>();
  m.flags = in.get<uint32_t>();
  m.max_frame_bytes = in.get<uint64_t>();
  m.credits_requested = in.get<uint32_t>();
  in.get<uint32_t>();  // reserved
  auto software = get_fixed_text(in, kSoftwareBytes, "Hello.software");
  if (!software) return Unexpected(software.error());
  m.software = std::move(*software);
  if (m.min_version > m.max_version) {
    return bad("Hello.min_version {} greater than max_version {}", m.min_version, m.max_version);
  }
  if (m.max_frame_bytes == 0 || m.max_frame_bytes > kMaxFrameBytes) {
    return bad("Hello.max_frame_bytes {} out of range (1..{})", m.max_frame_bytes, kMaxFrameBytes);
  }
  // credits_requested is not checked: Hello keeps its meaning in every version, so that a
  // peer of another version is refused for its versions, and the receiver ignores it.
  return m;
}

Result<Message> decode_hello_ack(WireReader& in) {
  HelloAck m;
  m.version = in.get<uint16_t>();
  in.get<uint16_t>();  // reserved
  m.flags = in.get<uint32_t>();
  m.max_frame_bytes = in.get<uint64_t>();
  m.credits = in.get<uint32_t>();
  in.get<uint32_t>();  // reserved
  auto software = get_fixed_text(in, kSoftwareBytes, "HelloAck.software");
  if (!software) return Unexpected(software.error());
  m.software = std::move(*software);
  if (m.version < kMinVersion || m.version > kVersion) {
    return bad("HelloAck.version {} not spoken here ({}..{})", m.version, kMinVersion, kVersion);
  }
  if (m.max_frame_bytes == 0 || m.max_frame_bytes > kMaxFrameBytes) {
    return bad("HelloAck.max_frame_bytes {} out of range (1..{})", m.max_frame_bytes,
               kMaxFrameBytes);
  }
  if (m.credits == 0 || m.credits > kMaxRingSlots) {
    return bad("HelloAck.credits {} out of range (1..{})", m.credits, kMaxRingSlots);
  }
  return m;
}

Result<Message> decode_stream_start(const Header& header, WireReader& in) {
  StreamStart m;
  m.stream_id = in.get<uint32_t>();
  m.ring_epoch = in.get<uint32_t>();
  const uint32_t media = in.get<uint32_t>();
  const uint32_t format = in.get<uint32_t>();
  m.width = in.get<uint32_t>();
  m.height = in.get<uint32_t>();
  m.frame_rate.num = in.get<uint32_t>();
  m.frame_rate.den = in.get<uint32_t>();
  m.flags = in.get<uint32_t>();
  const uint32_t plane_count = in.get<uint32_t>();
  for (auto& plane : m.layout.planes) {
    plane.offset = in.get<uint32_t>();
    plane.stride = in.get<uint32_t>();
    plane.rows = in.get<uint32_t>();
  }
  m.layout.frame_bytes = in.get<uint32_t>();
  m.colour.primaries = in.get<uint8_t>();
  m.colour.transfer = in.get<uint8_t>();
  m.colour.matrix = in.get<uint8_t>();
  m.colour.range = in.get<uint8_t>();
  auto name = get_fixed_text(in, kNameBytes, "StreamStart.name");
  if (!name) return Unexpected(name.error());
  m.name = std::move(*name);

  if (m.ring_epoch == 0) return bad("StreamStart.ring_epoch is 0 (epochs count from 1)");
  if (media != static_cast<uint32_t>(MediaKind::video) &&
      media != static_cast<uint32_t>(MediaKind::audio)) {
    return bad("StreamStart.media {} unknown", media);
  }
  m.media = static_cast<MediaKind>(media);
  auto pixel_format = pixel_format_from_wire(format);
  if (!pixel_format) return bad("StreamStart.pixel_format {} unknown", format);
  m.pixel_format = *pixel_format;
  if (m.width == 0 || m.width > kMaxDimension) {
    return bad("StreamStart.width {} out of range (1..{})", m.width, kMaxDimension);
  }
  if (m.height == 0 || m.height > kMaxDimension) {
    return bad("StreamStart.height {} out of range (1..{})", m.height, kMaxDimension);
  }
  if (m.frame_rate.num == 0 || m.frame_rate.den == 0) {
    return bad("StreamStart.frame_rate {}/{} invalid (both must be non-zero)", m.frame_rate.num,
               m.frame_rate.den);
  }
  // The flash flag is version 3's: a version 2 message with it is refused as a version 2
  // end would refuse it.
  const uint32_t known = header.version >= kAudioVersion ? kStreamKnownFlags : kStreamKnownFlagsV2;
  if (m.flags & ~known) {
    return bad("StreamStart.flags 0x{:x} has unknown bits 0x{:x}", m.flags, m.flags & ~known);
  }
  if (plane_count == 0 || plane_count > kMaxPlanes) {
    return bad("StreamStart.plane_count {} out of range (1..{})", plane_count, kMaxPlanes);
  }
  m.layout.plane_count = static_cast<int>(plane_count);
  if (auto ok = validate_layout(m.pixel_format, m.width, m.height, m.layout); !ok) {
    return Unexpected(Error(ok.error().code(), "StreamStart." + ok.error().message()));
  }
  if (auto ok = validate(m.colour); !ok) {
    return Unexpected(Error(ok.error().code(), "StreamStart." + ok.error().message()));
  }
  return m;
}

Result<Message> decode_ring_info(WireReader& in) {
  RingInfo m;
  m.stream_id = in.get<uint32_t>();
  m.ring_epoch = in.get<uint32_t>();
  m.slot_count = in.get<uint32_t>();
  m.rkey = in.get<uint32_t>();
  m.slot_bytes = in.get<uint64_t>();
  m.slot_stride = in.get<uint64_t>();
  m.base_addr = in.get<uint64_t>();
  if (m.slot_count == 0 || m.slot_count > kMaxRingSlots) {
    return bad("RingInfo.slot_count {} out of range (1..{})", m.slot_count, kMaxRingSlots);
  }
  if (m.slot_bytes == 0 || m.slot_bytes > kMaxFrameBytes) {
    return bad("RingInfo.slot_bytes {} out of range (1..{})", m.slot_bytes, kMaxFrameBytes);
  }
  if (m.slot_stride < m.slot_bytes) {
    return bad("RingInfo.slot_stride {} less than slot_bytes {}", m.slot_stride, m.slot_bytes);
  }
  return m;
}

Result<Message> decode_frame_written(WireReader& in) {
  FrameWritten m;
  m.ring_epoch = in.get<uint32_t>();
  m.slot = in.get<uint32_t>();
  m.sequence = in.get<uint64_t>();
  m.pts_ns = in.get<int64_t>();
  m.sent_ns = in.get<uint64_t>();
  m.bytes = in.get<uint32_t>();
  m.flags = in.get<uint32_t>();
  m.checksum = in.get<uint64_t>();
  if (m.slot >= kMaxRingSlots) {
    return bad("FrameWritten.slot {} out of range (0..{})", m.slot, kMaxRingSlots - 1);
  }
  if (m.bytes == 0) return bad("FrameWritten.bytes is 0");
  if (m.flags & ~kFrameHasChecksum) {
    return bad("FrameWritten.flags 0x{:x} has unknown bits 0x{:x}", m.flags,
               m.flags & ~kFrameHasChecksum);
  }
  return m;
}

Result<Message> decode_credit_return(const Header& header, WireReader& in) {
  CreditReturn m;
  if (header.length < 8) {
    return bad("CreditReturn length {} too short (at least 8)", header.length);
  }
  m.ring_epoch = in.get<uint32_t>();
  const uint32_t count = in.get<uint32_t>();
  if (count == 0 || count > kMaxRingSlots) {
    return bad("CreditReturn.count {} out of range (1..{})", count, kMaxRingSlots);
  }
  if (header.length != 8 + 4 * count) {
    return bad("CreditReturn length {} wrong for count {} (must be {})", header.length, count,
               8 + 4 * count);
  }
  m.slots.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t slot = in.get<uint32_t>();
    if (slot >= kMaxRingSlots) {
      return bad("CreditReturn.slots[{}] {} out of range (0..{})", i, slot, kMaxRingSlots - 1);
    }
    m.slots.push_back(slot);
  }
  return m;
}

Result<Message> decode_error(const Header& header, WireReader& in) {
  if (header.length < 8) return bad("Error length {} too short (at least 8)", header.length);
  const uint32_t code = in.get<uint32_t>();
  const uint32_t text_bytes = in.get<uint32_t>();
  if (code > static_cast<uint32_t>(ErrorCode::auth_failed)) {
    return bad("Error.code {} unknown", code);
  }
  if (text_bytes > kMaxErrorText) {
    return bad("Error.length {} out of range (0..{})", text_bytes, kMaxErrorText);
  }
  if (header.length != 8 + text_bytes) {
    return bad("Error length {} wrong for text of {} bytes (must be {})", header.length, text_bytes,
               8 + text_bytes);
  }
  auto text = in.get_bytes(text_bytes);
  ErrorMessage m;
  m.code = static_cast<ErrorCode>(code);
  m.text.assign(reinterpret_cast<const char*>(text.data()), text.size());
  // Printable only: the text ends up in our logs.
  std::replace_if(
      m.text.begin(), m.text.end(),
      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }, '?');
  return m;
}

Result<Message> decode_audio_start(WireReader& in) {
  AudioStart m;
  m.stream_id = in.get<uint32_t>();
  const uint32_t format = in.get<uint32_t>();
  m.sample_rate = in.get<uint32_t>();
  m.channels = in.get<uint16_t>();
  in.get<uint16_t>();  // reserved
  m.channel_layout = in.get<uint64_t>();
  in.get<uint64_t>();  // reserved
  auto name = get_fixed_text(in, kNameBytes, "AudioStart.name");
  if (!name) return Unexpected(name.error());
  m.name = std::move(*name);
  if (m.stream_id == 0) return bad("AudioStart.stream_id is 0");
  if (format < static_cast<uint32_t>(SampleFormat::s16) ||
      format > static_cast<uint32_t>(SampleFormat::f32p)) {
    return bad("AudioStart.sample_format {} unknown", format);
  }
  m.sample_format = static_cast<SampleFormat>(format);
  if (m.sample_rate < kMinSampleRate || m.sample_rate > kMaxSampleRate) {
    return bad("AudioStart.sample_rate {} out of range ({}..{})", m.sample_rate, kMinSampleRate,
               kMaxSampleRate);
  }
  if (m.channels == 0 || m.channels > kMaxAudioChannels) {
    return bad("AudioStart.channels {} out of range (1..{})", m.channels, kMaxAudioChannels);
  }
  if (m.channel_layout != 0 && std::popcount(m.channel_layout) != m.channels) {
    return bad("AudioStart.channel_layout 0x{:x} has {} channels, not {}", m.channel_layout,
               std::popcount(m.channel_layout), m.channels);
  }
  return m;
}

Result<Message> decode_audio_chunk(const Header& header, WireReader& in) {
  if (header.length <= kAudioChunkFixedBytes) {
    return bad("AudioChunk length {} too short (at least {})", header.length,
               kAudioChunkFixedBytes + 1);
  }
  AudioChunk m;
  m.stream_id = in.get<uint32_t>();
  m.samples = in.get<uint32_t>();
  m.pts_ns = in.get<int64_t>();
  const uint32_t flags = in.get<uint32_t>();
  in.get<uint32_t>();  // reserved
  if (m.stream_id == 0) return bad("AudioChunk.stream_id is 0");
  if (m.samples == 0) return bad("AudioChunk.samples is 0");
  if (flags != 0) return bad("AudioChunk.flags 0x{:x} has unknown bits 0x{:x}", flags, flags);
  // That the samples fill the rest exactly needs the stream's format: the receiver's check.
  auto data = in.get_bytes(header.length - kAudioChunkFixedBytes);
  m.data.assign(data.begin(), data.end());
  return m;
}

}  // namespace

Result<Header> decode_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kHeaderBytes) {
    return bad("Header truncated: {} bytes (needs {})", bytes.size(), kHeaderBytes);
  }
  WireReader in(bytes.first(kHeaderBytes));
  const uint32_t magic = in.get<uint32_t>();
  const uint16_t version = in.get<uint16_t>();
  const uint16_t type = in.get<uint16_t>();
  const uint32_t length = in.get<uint32_t>();
  in.get<uint32_t>();  // reserved
  if (magic != kMagic) {
    return bad("Header.magic 0x{:08x} is not RDVF (0x{:08x})", magic, kMagic);
  }
  if (type < static_cast<uint16_t>(MessageType::Hello) ||
      type > static_cast<uint16_t>(MessageType::AudioEnd)) {
    return bad("Header.type {} unknown", type);
  }
  const auto message_type = static_cast<MessageType>(type);
  const uint16_t lowest = lowest_version(message_type);
  if (version < lowest || version > kVersion) {
    return Unexpected(Error(ErrorCode::unsupported,
                            fmt::format("Header.version {} not spoken here ({}..{} for {})",
                                        version, lowest, kVersion, to_string(message_type))));
  }
  if (length > kMaxBodyBytes) {
    return bad("Header.length {} exceeds {}", length, kMaxBodyBytes);
  }
  return Header{version, message_type, length};
}

Result<Message> decode(const Header& header, std::span<const std::byte> body) {
  if (body.size() != header.length) {
    return bad("{} body truncated: {} bytes of {}", to_string(header.type), body.size(),
               header.length);
  }
  WireReader in(body);
  auto fixed = [&](uint32_t size, auto&& fn) -> Result<Message> {
    if (auto ok = expect_length(header, size); !ok) return Unexpected(ok.error());
    return fn();
  };
  switch (header.type) {
    case MessageType::Hello: return fixed(kHelloBytes, [&] { return decode_hello(in); });
    case MessageType::HelloAck: return fixed(kHelloAckBytes, [&] { return decode_hello_ack(in); });
    case MessageType::StreamStart:
      return fixed(kStreamStartBytes, [&] { return decode_stream_start(header, in); });
    case MessageType::RingInfo: return fixed(kRingInfoBytes, [&] { return decode_ring_info(in); });
    case MessageType::FrameWritten:
      return fixed(kFrameWrittenBytes, [&] { return decode_frame_written(in); });
    case MessageType::CreditReturn: return decode_credit_return(header, in);
    case MessageType::Keepalive:
      return fixed(kKeepaliveBytes,
                   [&]() -> Result<Message> { return Keepalive{in.get<uint64_t>()}; });
    case MessageType::EndOfStream:
      return fixed(kEndOfStreamBytes, [&]() -> Result<Message> {
        EndOfStream m;
        m.frames = in.get<uint64_t>();
        m.dropped = in.get<uint64_t>();
        return m;
      });
    case MessageType::Error: return decode_error(header, in);
    case MessageType::Auth:
      return fixed(kAuthBytes, [&]() -> Result<Message> {
        Auth m;
        auto nonce = in.get_bytes(kNonceBytes);
        std::copy(nonce.begin(), nonce.end(), m.nonce.begin());
        auto proof = in.get_bytes(kProofBytes);
        std::copy(proof.begin(), proof.end(), m.proof.begin());
        return m;
      });
    case MessageType::AudioStart:
      return fixed(kAudioStartBytes, [&] { return decode_audio_start(in); });
    case MessageType::AudioChunk: return decode_audio_chunk(header, in);
    case MessageType::AudioEnd:
      return fixed(kAudioEndBytes, [&]() -> Result<Message> {
        AudioEnd m;
        m.stream_id = in.get<uint32_t>();
        in.get<uint32_t>();  // reserved
        if (m.stream_id == 0) return bad("AudioEnd.stream_id is 0");
        return m;
      });
  }
  return bad("Header.type {} unknown", static_cast<uint16_t>(header.type));
}

}  // namespace rdmavideo::proto
