// SPDX-License-Identifier: Apache-2.0
// The wire protocol: fixed-layout little-endian messages, each a 16-byte Header followed by
// a body. docs/protocol.md is the specification; the struct and field names here are the
// names used there and in error messages.
//
// decode_header() and decode() check every field that can be checked without knowing the
// connection's state (magic, version, lengths, ranges, format sanity) and name the first bad
// field in the error. Checks that need state (is this slot granted? does the frame fit the
// slot?) belong to the ring and the receiver core. encode() never fails for a message that
// decode() would accept. All functions are pure and thread-safe.
//
// Version 2 makes the stream the unit of the protocol: StreamStart names a stream (stream_id,
// stable for the stream's life), the ring it opens (ring_epoch, new with every format) and the
// stream's media kind. Hello, HelloAck and Error keep their version 1 layouts and always
// travel with Header.version 1, so that ends of any version can refuse each other clearly.
// Version 3 adds audio beside the video, on the same pts clock: up to 16 audio streams per
// connection (AudioStart, AudioChunk, AudioEnd), and the test pattern's flash flag. Every
// other message is written with the version the two ends negotiated, so a version 3 end
// still talks to a version 2 end (video only).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "rdmavideo/format.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::proto {

inline constexpr uint32_t kMagic = 0x46564452;  // "RDVF" in memory order
inline constexpr uint16_t kVersion = 3;         // the highest version this build speaks
inline constexpr uint16_t kMinVersion = 2;      // the lowest
/// The first version with audio streams and the kStreamFlash flag.
inline constexpr uint16_t kAudioVersion = 3;
/// Header.version of Hello, HelloAck and Error, whatever version is negotiated (§4).
inline constexpr uint16_t kHandshakeHeaderVersion = 1;
inline constexpr size_t kHeaderBytes = 16;
inline constexpr uint32_t kMaxBodyBytes = 65536;
/// Slots in a ring, on every transport: the one limit (`--ring`, `ring-size`). It keeps
/// every CreditReturn within one verbs control buffer and the credits in flight within the
/// receives a verbs connection posts.
inline constexpr uint32_t kMaxRingSlots = 240;
inline constexpr size_t kNameBytes = 64;
/// A stream's or a track's name as the protocol carries it: at most kNameBytes - 1 bytes, cut
/// where a UTF-8 character starts, each control character a space. SenderSession sends every
/// name so.
std::string fit_name(std::string_view text);
inline constexpr size_t kSoftwareBytes = 32;
inline constexpr size_t kMaxErrorText = 1024;
/// The largest frame the protocol describes: kMaxDimension squared, 4 bytes a pixel.
inline constexpr uint64_t kMaxFrameBytes = kMaxFrameBytesOfAnyFormat;  // 16384x16384 RGBA

enum class MessageType : uint16_t {
  Hello = 1,
  HelloAck = 2,
  StreamStart = 3,
  RingInfo = 4,
  FrameWritten = 5,
  CreditReturn = 6,
  Keepalive = 7,
  EndOfStream = 8,
  Error = 9,
  Auth = 10,        ///< version 2: the shared-key proof (§4.1)
  AudioStart = 11,  ///< version 3: an audio stream begins (§3.15)
  AudioChunk = 12,  ///< version 3: samples of an audio stream
  AudioEnd = 13,    ///< version 3: one audio stream ends, its video goes on
};
std::string_view to_string(MessageType type);

struct Header {
  uint16_t version = kVersion;
  MessageType type = MessageType::Keepalive;
  uint32_t length = 0;  ///< body bytes that follow the header (never the frame payload)
};

/// What a stream carries (StreamStart.media). Wire values: never renumber.
enum class MediaKind : uint32_t {
  video = 1,
  audio = 2,  ///< never in a StreamStart: audio streams start with AudioStart (version 3)
};
std::string_view to_string(MediaKind kind);

/// Capability and stream flags.
inline constexpr uint32_t kCapChecksum = 1u << 0;  // Hello/HelloAck: can verify checksums
/// Hello/HelloAck: this end holds a shared key and will prove it (Auth messages follow).
inline constexpr uint32_t kCapAuth = 1u << 1;

inline constexpr uint32_t kStreamLive = 1u << 0;         // source is real-time; drops allowed
inline constexpr uint32_t kStreamChecksums = 1u << 1;    // every FrameWritten has a checksum
inline constexpr uint32_t kStreamTestPattern = 1u << 2;  // payload is the built-in pattern
/// Version 3: the test pattern flashes white for one frame at every whole second of pts, and
/// the test tone beeps at the same instants, so audio/video sync can be measured.
inline constexpr uint32_t kStreamFlash = 1u << 3;
/// The StreamStart flags of version 2, and of version 3.
inline constexpr uint32_t kStreamKnownFlagsV2 = kStreamLive | kStreamChecksums | kStreamTestPattern;
inline constexpr uint32_t kStreamKnownFlags = kStreamKnownFlagsV2 | kStreamFlash;

inline constexpr uint32_t kFrameHasChecksum = 1u << 0;

/// Sender -> receiver, first message: which versions it speaks and what it needs.
struct Hello {
  uint16_t min_version = kMinVersion;
  uint16_t max_version = kVersion;
  uint32_t flags = 0;
  uint64_t max_frame_bytes = 0;  ///< largest frame the sender will send
  uint32_t credits_requested = 0;
  std::string software;  ///< e.g. "rdmavideo 0.1.0"; at most kSoftwareBytes - 1
  bool operator==(const Hello&) const = default;
};

/// Receiver -> sender: the chosen version and the receiver's limits.
struct HelloAck {
  uint16_t version = kVersion;
  uint32_t flags = 0;
  uint64_t max_frame_bytes = 0;  ///< largest frame the receiver accepts
  uint32_t credits = 0;          ///< ring slots the receiver will grant
  std::string software;
  bool operator==(const HelloAck&) const = default;
};

/// Sender -> receiver: the format of the frames that follow. May be sent again to change
/// format; the receiver answers each with a RingInfo for the new ring epoch.
struct StreamStart {
  uint32_t stream_id = 0;   ///< the stream, the same for every format it changes to
  uint32_t ring_epoch = 0;  ///< the ring this opens; increases with every StreamStart
  MediaKind media = MediaKind::video;
  PixelFormat pixel_format = PixelFormat::uyvy;
  uint32_t width = 0;
  uint32_t height = 0;
  Rational frame_rate{};
  uint32_t flags = 0;
  FrameLayout layout{};
  /// The frames' colour (the u32 at offset 92, reserved before: a receiver that predates it
  /// ignores it, and a sender that predates it sends 0, "not said").
  Colour colour{};
  std::string name;  ///< at most kNameBytes - 1 bytes, no control characters
  bool operator==(const StreamStart&) const = default;
};

/// Receiver -> sender: the ring the sender writes into.
struct RingInfo {
  uint32_t stream_id = 0;    ///< the stream this ring belongs to
  uint32_t ring_epoch = 0;   ///< the StreamStart.ring_epoch this ring answers
  uint32_t slot_count = 0;   ///< 1..kMaxRingSlots
  uint64_t slot_bytes = 0;   ///< usable bytes per slot, at least the frame
  uint64_t slot_stride = 0;  ///< bytes between slot starts (verbs addressing)
  uint64_t base_addr = 0;    ///< verbs: remote address of slot 0; TCP: 0
  uint32_t rkey = 0;         ///< verbs: remote key of the ring; TCP: 0
  bool operator==(const RingInfo&) const = default;
};

/// Sender -> receiver: a frame is in a slot (verbs) or follows this message (TCP: exactly
/// `bytes` payload bytes after the body).
struct FrameWritten {
  uint32_t ring_epoch = 0;
  uint32_t slot = 0;
  uint64_t sequence = 0;  ///< frame number from the source, dropped frames included
  int64_t pts_ns = 0;     ///< presentation time from the source
  uint64_t sent_ns = 0;   ///< sender's CLOCK_REALTIME as the frame's write began
  uint32_t bytes = 0;     ///< payload bytes; equals StreamStart's frame_bytes
  uint32_t flags = 0;
  uint64_t checksum = 0;  ///< XXH3-64 of the payload when kFrameHasChecksum
  bool operator==(const FrameWritten&) const = default;
};

/// Receiver -> sender: slots the sender may write again (batched credits).
struct CreditReturn {
  uint32_t ring_epoch = 0;
  std::vector<uint32_t> slots;
  bool operator==(const CreditReturn&) const = default;
};

/// Either way, when nothing else was sent for a while; proves the peer is alive.
struct Keepalive {
  uint64_t sent_ns = 0;
  bool operator==(const Keepalive&) const = default;
};

/// Sender -> receiver: no more frames. Receiver -> sender: stop, I have what I wanted.
struct EndOfStream {
  uint64_t frames = 0;
  uint64_t dropped = 0;
  bool operator==(const EndOfStream&) const = default;
};

/// Either way, before closing: why.
struct ErrorMessage {
  ErrorCode code = ErrorCode::protocol;
  std::string text;
  bool operator==(const ErrorMessage&) const = default;
};

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;
using Nonce = std::array<std::byte, kNonceBytes>;
using Proof = std::array<std::byte, kProofBytes>;

/// Either way, after Hello and HelloAck when both ends hold a key (§4.1): the receiver's
/// challenge (its nonce, proof all zero), the sender's proof and nonce, the receiver's proof.
struct Auth {
  Nonce nonce{};
  Proof proof{};
  bool operator==(const Auth&) const = default;
};

/// Audio streams on one connection, beside its one video stream.
inline constexpr uint32_t kMaxAudioStreams = 16;
inline constexpr uint32_t kMaxAudioChannels = 16;
inline constexpr uint32_t kMinSampleRate = 1000;
inline constexpr uint32_t kMaxSampleRate = 768000;

/// How samples are laid out (AudioStart.sample_format). Wire values: never renumber.
/// Interleaved: one sample of every channel, then the next. Planar: every sample of channel
/// 0, then of channel 1, ... (within each chunk).
enum class SampleFormat : uint32_t {
  s16 = 1,   ///< signed 16-bit, interleaved
  s32 = 2,   ///< signed 32-bit, interleaved
  f32 = 3,   ///< IEEE float, interleaved, nominally -1..1
  s16p = 4,  ///< the same three, planar
  s32p = 5,
  f32p = 6,
};
std::string_view to_string(SampleFormat format);
/// Bytes of one sample of one channel: 2 or 4.
uint32_t bytes_per_sample(SampleFormat format);
bool planar(SampleFormat format);

/// Sender -> receiver, version 3: an audio stream of the connection's video stream begins.
/// Nothing answers it (audio has no ring and no credits).
struct AudioStart {
  uint32_t stream_id = 0;  ///< not the video's stream_id; 1 of at most kMaxAudioStreams
  SampleFormat sample_format = SampleFormat::f32;
  uint32_t sample_rate = 48000;
  uint16_t channels = 2;  ///< 1..kMaxAudioChannels
  uint64_t channel_layout =
      0;             ///< WAVE/FFmpeg channel mask (bit 0 front left, ...); 0: unspecified
  std::string name;  ///< the track's name; at most kNameBytes - 1 bytes
  bool operator==(const AudioStart&) const = default;
};

/// Sender -> receiver, version 3: consecutive samples of one audio stream. The samples are
/// the body after the fixed fields: samples x channels x bytes_per_sample bytes.
struct AudioChunk {
  uint32_t stream_id = 0;
  uint32_t samples = 0;  ///< per channel, at least 1
  int64_t pts_ns = 0;    ///< of the first sample, on the video's pts clock
  std::vector<std::byte> data;
  bool operator==(const AudioChunk&) const = default;
};
/// AudioChunk's fixed fields before the samples.
inline constexpr uint32_t kAudioChunkFixedBytes = 24;

/// Sender -> receiver, version 3: this audio stream ends; the video and other audio go on.
struct AudioEnd {
  uint32_t stream_id = 0;
  bool operator==(const AudioEnd&) const = default;
};

using Message =
    std::variant<Hello, HelloAck, StreamStart, RingInfo, FrameWritten, CreditReturn, Keepalive,
                 EndOfStream, ErrorMessage, Auth, AudioStart, AudioChunk, AudioEnd>;

MessageType type_of(const Message& message);
/// The lowest Header.version a message of `type` travels with: 1 for Hello, HelloAck and
/// Error, kAudioVersion for the audio messages, kMinVersion for the others.
uint16_t lowest_version(MessageType type);

Result<Header> decode_header(std::span<const std::byte> bytes);
/// Decodes a body of exactly header.length bytes.
Result<Message> decode(const Header& header, std::span<const std::byte> body);

/// Appends header and body to out. Hello, HelloAck and Error always go with Header.version 1;
/// every other message with `version`, the version the two ends negotiated (the audio
/// messages exist from version 3 only: a caller never sends them on an older connection).
void encode(const Message& message, std::vector<std::byte>& out, uint16_t version = kVersion);
std::vector<std::byte> encode(const Message& message, uint16_t version = kVersion);

/// The stream's format as a StreamStart without ids, flags or name.
Result<StreamStart> make_stream_start(PixelFormat format, uint32_t width, uint32_t height,
                                      Rational frame_rate);

}  // namespace rdmavideo::proto
