// SPDX-License-Identifier: Apache-2.0
// Encoding: a header, then the message's body as its layout says (docs/protocol.md).
#include <algorithm>
#include <variant>

#include "proto/codec.hpp"
#include "proto/wire.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto {

using namespace codec;  // NOLINT(google-build-using-namespace): the codec's own words

namespace {

struct BodyEncoder {
  WireWriter& w;

  void operator()(const Hello& m) const {
    w.put(m.min_version);
    w.put(m.max_version);
    w.put(m.flags);
    w.put(m.max_frame_bytes);
    w.put(m.credits_requested);
    w.put(uint32_t{0});
    w.put_fixed_text(m.software, kSoftwareBytes);
  }
  void operator()(const HelloAck& m) const {
    w.put(m.version);
    w.put(uint16_t{0});
    w.put(m.flags);
    w.put(m.max_frame_bytes);
    w.put(m.credits);
    w.put(uint32_t{0});
    w.put_fixed_text(m.software, kSoftwareBytes);
  }
  void operator()(const StreamStart& m) const {
    w.put(m.stream_id);
    w.put(m.ring_epoch);
    w.put(static_cast<uint32_t>(m.media));
    w.put(static_cast<uint32_t>(m.pixel_format));
    w.put(m.width);
    w.put(m.height);
    w.put(m.frame_rate.num);
    w.put(m.frame_rate.den);
    w.put(m.flags);
    w.put(static_cast<uint32_t>(m.layout.plane_count));
    for (const auto& plane : m.layout.planes) {
      w.put(plane.offset);
      w.put(plane.stride);
      w.put(plane.rows);
    }
    w.put(m.layout.frame_bytes);
    w.put(m.colour.primaries);
    w.put(m.colour.transfer);
    w.put(m.colour.matrix);
    w.put(m.colour.range);
    w.put_fixed_text(m.name, kNameBytes);
  }
  void operator()(const RingInfo& m) const {
    w.put(m.stream_id);
    w.put(m.ring_epoch);
    w.put(m.slot_count);
    w.put(m.rkey);
    w.put(m.slot_bytes);
    w.put(m.slot_stride);
    w.put(m.base_addr);
  }
  void operator()(const FrameWritten& m) const {
    w.put(m.ring_epoch);
    w.put(m.slot);
    w.put(m.sequence);
    w.put(m.pts_ns);
    w.put(m.sent_ns);
    w.put(m.bytes);
    w.put(m.flags);
    w.put(m.checksum);
  }
  void operator()(const CreditReturn& m) const {
    w.put(m.ring_epoch);
    w.put(static_cast<uint32_t>(m.slots.size()));
    for (uint32_t slot : m.slots) w.put(slot);
  }
  void operator()(const Keepalive& m) const { w.put(m.sent_ns); }
  void operator()(const EndOfStream& m) const {
    w.put(m.frames);
    w.put(m.dropped);
  }
  void operator()(const ErrorMessage& m) const {
    const std::string_view text(m.text.data(), std::min(m.text.size(), kMaxErrorText));
    w.put(static_cast<uint32_t>(m.code));
    w.put(static_cast<uint32_t>(text.size()));
    w.put_bytes(text);
  }
  void operator()(const Auth& m) const {
    w.put_bytes(std::string_view(reinterpret_cast<const char*>(m.nonce.data()), m.nonce.size()));
    w.put_bytes(std::string_view(reinterpret_cast<const char*>(m.proof.data()), m.proof.size()));
  }
  void operator()(const AudioStart& m) const {
    w.put(m.stream_id);
    w.put(static_cast<uint32_t>(m.sample_format));
    w.put(m.sample_rate);
    w.put(m.channels);
    w.put(uint16_t{0});
    w.put(m.channel_layout);
    w.put(uint64_t{0});
    w.put_fixed_text(m.name, kNameBytes);
  }
  void operator()(const AudioChunk& m) const {
    w.put(m.stream_id);
    w.put(m.samples);
    w.put(m.pts_ns);
    w.put(uint32_t{0});
    w.put(uint32_t{0});
    w.put_bytes(std::string_view(reinterpret_cast<const char*>(m.data.data()), m.data.size()));
  }
  void operator()(const AudioEnd& m) const {
    w.put(m.stream_id);
    w.put(uint32_t{0});
  }
};

}  // namespace

void encode(const Message& message, std::vector<std::byte>& out, uint16_t version) {
  const size_t start = out.size();
  WireWriter w(out);
  const MessageType type = type_of(message);
  w.put(kMagic);
  w.put(handshake_message(type) ? kHandshakeHeaderVersion : version);
  w.put(static_cast<uint16_t>(type));
  w.put(uint32_t{0});  // length, patched below
  w.put(uint32_t{0});  // reserved
  std::visit(BodyEncoder{w}, message);
  const auto length = static_cast<uint32_t>(out.size() - start - kHeaderBytes);
  std::vector<std::byte> patch;
  WireWriter(patch).put(length);
  std::copy(patch.begin(), patch.end(), out.begin() + static_cast<ptrdiff_t>(start + 8));
}

std::vector<std::byte> encode(const Message& message, uint16_t version) {
  std::vector<std::byte> out;
  out.reserve(kHeaderBytes + kStreamStartBytes);
  encode(message, out, version);
  return out;
}

}  // namespace rdmavideo::proto
