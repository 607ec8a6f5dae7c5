// SPDX-License-Identifier: Apache-2.0
// The message codec: every message type round trips with every field intact, and every
// rejection path in proto/protocol.cpp is hit once, asserting that the error names the field
// and the value it saw. Bad inputs are valid encodings with bytes patched at the offsets of
// the layouts in protocol.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "decoding.hpp"
#include "rdmavideo/format.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto {
namespace {

using Bytes = std::vector<std::byte>;

// Offsets in a message: the header, then the body from kBody.
constexpr size_t kMagicAt = 0;
constexpr size_t kVersionAt = 4;
constexpr size_t kTypeAt = 6;
constexpr size_t kLengthAt = 8;
constexpr size_t kBody = kHeaderBytes;
constexpr uint64_t kMaxFrame = uint64_t{kMaxDimension} * kMaxDimension * 4;  // 1 GiB

::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

template <typename T>
void poke(Bytes& bytes, size_t offset, T value) {
  static_assert(std::is_integral_v<T>);
  const auto bits = static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(value));
  ASSERT_LE(offset + sizeof(T), bytes.size());
  for (size_t i = 0; i < sizeof(T); ++i) bytes[offset + i] = std::byte((bits >> (8 * i)) & 0xff);
}

/// A header for `type` with the body's length, then the body.
Bytes raw_message(MessageType type, const Bytes& body) {
  Bytes out(kHeaderBytes);
  poke(out, kMagicAt, kMagic);
  const bool handshake =
      type == MessageType::Hello || type == MessageType::HelloAck || type == MessageType::Error;
  poke(out, kVersionAt, handshake ? kHandshakeHeaderVersion : kVersion);
  poke(out, kTypeAt, static_cast<uint16_t>(type));
  poke(out, kLengthAt, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

using testing::decode_message;
using testing::rejection;

template <typename T>
T round_trip(const T& message) {
  const Bytes bytes = encode(Message{message});
  auto header = decode_header(bytes);
  EXPECT_TRUE(header) << header.error().message();
  if (!header) return T{};
  const MessageType type = type_of(Message{message});
  // Hello, HelloAck and Error travel with version 1 headers in every version (§4).
  const bool handshake =
      type == MessageType::Hello || type == MessageType::HelloAck || type == MessageType::Error;
  EXPECT_EQ(header->version, handshake ? kHandshakeHeaderVersion : kVersion);
  EXPECT_EQ(header->type, type);
  EXPECT_EQ(header->length, bytes.size() - kHeaderBytes);
  auto decoded = decode(*header, std::span(bytes).subspan(kHeaderBytes));
  EXPECT_TRUE(decoded) << decoded.error().message();
  if (!decoded) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*decoded));
  if (!std::holds_alternative<T>(*decoded)) return T{};
  return std::get<T>(*decoded);
}

// Valid messages with every field set to something other than its default.

Hello sample_hello() {
  Hello m;
  m.min_version = 1;
  m.max_version = 7;
  m.flags = kCapChecksum | 0x80000000u;  // unknown capability bits are allowed
  m.max_frame_bytes = 0x3a0b0c0d;
  m.credits_requested = kMaxRingSlots;
  m.software = "rdmavideo-send 0.1.0";
  return m;
}

HelloAck sample_hello_ack() {
  HelloAck m;
  m.version = kVersion;
  m.flags = kCapChecksum;
  m.max_frame_bytes = kMaxFrame;
  m.credits = 17;
  m.software = "rdmavideo-recv 0.1.0 \xc3\xa9";  // UTF-8 beyond ASCII is allowed
  return m;
}

StreamStart sample_stream_start() {
  auto m = make_stream_start(PixelFormat::nv12, 1918, 1078, Rational{60000, 1001});
  EXPECT_TRUE(m) << m.error().message();
  m->stream_id = 0xdeadbeef;
  m->ring_epoch = 0xfeedf00d;
  m->media = MediaKind::video;
  m->flags = kStreamKnownFlags;
  m->name = "cam 1 \xe2\x80\x94 studio";
  return *m;
}

RingInfo sample_ring_info() {
  RingInfo m;
  m.stream_id = 0x0badf00d;
  m.ring_epoch = 0xdeadbeef;
  m.slot_count = kMaxRingSlots;
  m.slot_bytes = 0x3fff0001;
  m.slot_stride = 0x1'0000'1000;
  m.base_addr = 0xffff8000'12345000;
  m.rkey = 0xcafebabe;
  return m;
}

FrameWritten sample_frame_written() {
  FrameWritten m;
  m.ring_epoch = 0xfffffffe;
  m.slot = kMaxRingSlots - 1;
  m.sequence = 0x0123456789abcdef;
  m.pts_ns = -123456789012;
  m.sent_ns = 0xfedcba9876543210;
  m.bytes = 0xfffffff0;
  m.flags = kFrameHasChecksum;
  m.checksum = 0x8877665544332211;
  return m;
}

CreditReturn sample_credit_return() {
  CreditReturn m;
  m.ring_epoch = 0x01020304;
  m.slots = {5, 0, kMaxRingSlots - 1, 7, 128};
  return m;
}

ErrorMessage sample_error() {
  ErrorMessage m;
  m.code = ErrorCode::unsupported;
  m.text = "StreamStart.pixel_format 6 unknown to this receiver";
  return m;
}

// ---------------------------------------------------------------------------------------
// Round trips

// Every message comes back from encode() and decode() as it went, field for field (each has
// a defaulted ==), with the header its type and version call for.
TEST(ProtocolRoundTrip, EveryMessageComesBackAsItWent) {
  std::vector<std::pair<std::string, Message>> table = {
      {"Hello", sample_hello()},
      {"HelloAck", sample_hello_ack()},
      {"StreamStart", sample_stream_start()},
      {"RingInfo", sample_ring_info()},
      {"FrameWritten", sample_frame_written()},
      {"CreditReturn", sample_credit_return()},
      {"Keepalive", Keepalive{0xfffffffffffffffe}},
      {"EndOfStream", EndOfStream{1'000'000'000'007, 0x1'0000'0002}},
  };
  // Rows padded to 2048 bytes and a gap between the planes, as GStreamer may lay them out.
  StreamStart padded = sample_stream_start();
  padded.layout.planes[0] = Plane{0, 2048, 1078};
  padded.layout.planes[1] = Plane{2048 * 1078 + 4096, 2048, 539};
  padded.layout.frame_bytes = padded.layout.planes[1].offset + 2048 * 539 + 100;
  table.emplace_back("StreamStart with padded rows", padded);
  for (PixelFormat format : all_pixel_formats()) {
    auto start = make_stream_start(format, 1921, 1081, Rational{25, 1});
    ASSERT_TRUE(start) << start.error().message();
    start->stream_id = static_cast<uint32_t>(format) * 1000 + 7;
    start->ring_epoch = static_cast<uint32_t>(format);
    start->flags = kStreamLive;
    start->colour = {colour::kBt709, colour::kBt709, colour::kBt709, colour::kLimited};
    start->name = std::string(name(format));
    table.emplace_back("StreamStart " + std::string(name(format)), *start);
  }
  CreditReturn whole_ring;
  whole_ring.ring_epoch = 9;
  for (uint32_t slot = kMaxRingSlots; slot-- > 0;) whole_ring.slots.push_back(slot);
  table.emplace_back("CreditReturn of the whole ring", whole_ring);
  for (ErrorCode code :
       {ErrorCode::protocol, ErrorCode::peer_closed, ErrorCode::timeout, ErrorCode::resource,
        ErrorCode::unsupported, ErrorCode::invalid_argument, ErrorCode::system}) {
    ErrorMessage error = sample_error();
    error.code = code;
    table.emplace_back("Error " + std::string(to_string(code)), error);
  }
  for (const auto& [what, message] : table) {
    SCOPED_TRACE(what);
    const Message got = std::visit([](const auto& m) { return Message{round_trip(m)}; }, message);
    EXPECT_TRUE(got == message);
  }
}

TEST(ProtocolRoundTrip, ErrorEmptyText) {
  const ErrorMessage want{ErrorCode::timeout, ""};
  const Bytes bytes = encode(Message{want});
  EXPECT_EQ(bytes.size(), kHeaderBytes + 8);
  const ErrorMessage got = round_trip(want);
  EXPECT_EQ(got.code, want.code);
  EXPECT_EQ(got.text, "");
}

TEST(ProtocolRoundTrip, ErrorTextLongerThanMaxIsCutByEncode) {
  ErrorMessage want{ErrorCode::resource, std::string(kMaxErrorText + 500, 'x')};
  want.text[kMaxErrorText - 1] = 'y';
  const ErrorMessage got = round_trip(want);
  EXPECT_EQ(got.text, want.text.substr(0, kMaxErrorText));
}

TEST(ProtocolRoundTrip, SoftwareLongerThanFieldIsCutByEncode) {
  Hello want = sample_hello();
  want.software = std::string(kSoftwareBytes + 10, 's');
  EXPECT_EQ(round_trip(want).software, std::string(kSoftwareBytes - 1, 's'));
}

TEST(ProtocolRoundTrip, NameOfMaxLength) {
  StreamStart want = sample_stream_start();
  want.name = std::string(kNameBytes - 1, 'n');
  EXPECT_EQ(round_trip(want).name, want.name);
}

TEST(ProtocolRoundTrip, EncodeAppendsAfterExistingBytes) {
  Bytes out;
  encode(Message{Keepalive{11}}, out);
  const size_t first = out.size();
  encode(Message{sample_credit_return()}, out);
  auto m1 = decode_message(std::span(out).first(first));
  ASSERT_TRUE(m1) << m1.error().message();
  EXPECT_EQ(std::get<Keepalive>(*m1).sent_ns, 11u);
  auto m2 = decode_message(std::span(out).subspan(first));
  ASSERT_TRUE(m2) << m2.error().message();
  EXPECT_EQ(std::get<CreditReturn>(*m2).slots, sample_credit_return().slots);
}

TEST(ProtocolRoundTrip, TypeOfMatchesWireType) {
  EXPECT_EQ(type_of(Message{Hello{}}), MessageType::Hello);
  EXPECT_EQ(type_of(Message{HelloAck{}}), MessageType::HelloAck);
  EXPECT_EQ(type_of(Message{StreamStart{}}), MessageType::StreamStart);
  EXPECT_EQ(type_of(Message{RingInfo{}}), MessageType::RingInfo);
  EXPECT_EQ(type_of(Message{FrameWritten{}}), MessageType::FrameWritten);
  EXPECT_EQ(type_of(Message{CreditReturn{}}), MessageType::CreditReturn);
  EXPECT_EQ(type_of(Message{Keepalive{}}), MessageType::Keepalive);
  EXPECT_EQ(type_of(Message{EndOfStream{}}), MessageType::EndOfStream);
  EXPECT_EQ(type_of(Message{ErrorMessage{}}), MessageType::Error);
  EXPECT_EQ(to_string(MessageType::CreditReturn), "CreditReturn");
}

TEST(ProtocolRoundTrip, HeaderBytesAreLittleEndian) {
  const Bytes bytes = encode(Message{Keepalive{0x0807060504030201}});
  ASSERT_EQ(bytes.size(), kHeaderBytes + 8);
  const Bytes want_header = {std::byte{'R'}, std::byte{'D'}, std::byte{'V'}, std::byte{'F'},
                             std::byte{3},   std::byte{0},   std::byte{7},   std::byte{0},
                             std::byte{8},   std::byte{0},   std::byte{0},   std::byte{0},
                             std::byte{0},   std::byte{0},   std::byte{0},   std::byte{0}};
  EXPECT_EQ(Bytes(bytes.begin(), bytes.begin() + kHeaderBytes), want_header);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(bytes[kBody + i], std::byte(i + 1)) << i;
}

// ---------------------------------------------------------------------------------------
// Header

TEST(ProtocolHeader, RejectsTruncatedHeader) {
  const Bytes bytes = encode(Message{Keepalive{1}});
  auto header = decode_header(std::span(bytes).first(kHeaderBytes - 1));
  ASSERT_FALSE(header);
  EXPECT_EQ(header.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(header.error().message(), "Header"));
  EXPECT_TRUE(contains(header.error().message(), "15 bytes"));
}

TEST(ProtocolHeader, RejectsBadMagic) {
  Bytes bytes = encode(Message{Keepalive{1}});
  poke(bytes, kMagicAt, uint32_t{0x12345678});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Header.magic"));
  EXPECT_TRUE(contains(error, "0x12345678"));
}

// Version 1 headers are the handshake's only: a version 1 peer's StreamStart is refused.
TEST(ProtocolHeader, RejectsVersionOneOutsideTheHandshake) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kVersionAt, kHandshakeHeaderVersion);
  const std::string error = rejection(bytes, ErrorCode::unsupported);
  EXPECT_TRUE(contains(error, "Header.version 1 not spoken here (2..3 for StreamStart)"));
}

TEST(ProtocolHeader, HandshakeMessagesGoWithVersionOneHeaders) {
  for (const Message& m :
       {Message{sample_hello()}, Message{sample_hello_ack()}, Message{sample_error()}}) {
    SCOPED_TRACE(to_string(type_of(m)));
    const Bytes bytes = encode(m);
    auto header = decode_header(bytes);
    ASSERT_TRUE(header) << header.error().message();
    EXPECT_EQ(header->version, kHandshakeHeaderVersion);
    Bytes newer = bytes;  // and a version 2 header is read as well
    poke(newer, kVersionAt, kVersion);
    EXPECT_TRUE(decode_message(newer));
  }
}

TEST(ProtocolHeader, RejectsUnsupportedVersion) {
  for (uint16_t version : {uint16_t{0}, uint16_t{kVersion + 1}, uint16_t{0xffff}}) {
    SCOPED_TRACE(version);
    Bytes bytes = encode(Message{Keepalive{1}});
    poke(bytes, kVersionAt, version);
    const std::string error = rejection(bytes, ErrorCode::unsupported);
    EXPECT_TRUE(contains(error, fmt::format("Header.version {}", version)));
  }
}

TEST(ProtocolHeader, RejectsUnknownType) {
  for (uint16_t type : {uint16_t{0}, uint16_t{14}, uint16_t{0xffff}}) {
    SCOPED_TRACE(type);
    Bytes bytes = encode(Message{Keepalive{1}});
    poke(bytes, kTypeAt, type);
    const std::string error = rejection(bytes);
    EXPECT_TRUE(contains(error, fmt::format("Header.type {}", type)));
  }
}

TEST(ProtocolHeader, RejectsBodyLengthOverMax) {
  Bytes bytes = encode(Message{Keepalive{1}});
  poke(bytes, kLengthAt, kMaxBodyBytes + 1);
  auto header = decode_header(bytes);
  ASSERT_FALSE(header);
  EXPECT_EQ(header.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(header.error().message(), "Header.length 65537"));

  poke(bytes, kLengthAt, kMaxBodyBytes);  // the largest allowed
  auto at_max = decode_header(bytes);
  ASSERT_TRUE(at_max) << at_max.error().message();
  EXPECT_EQ(at_max->length, kMaxBodyBytes);
}

TEST(ProtocolHeader, DecodeRejectsHeaderWithUnknownType) {
  // A Header not produced by decode_header() still cannot smuggle in an unknown type.
  const Header header{kVersion, static_cast<MessageType>(42), 0};
  auto decoded = decode(header, {});
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(decoded.error().message(), "Header.type 42"));
}

TEST(ProtocolHeader, RejectsTruncatedBody) {
  const Bytes bytes = encode(Message{sample_frame_written()});
  auto header = decode_header(bytes);
  ASSERT_TRUE(header);
  auto decoded = decode(*header, std::span(bytes).subspan(kBody, 47));
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), ErrorCode::protocol);
  EXPECT_TRUE(contains(decoded.error().message(), "FrameWritten body truncated"));
  EXPECT_TRUE(contains(decoded.error().message(), "47 bytes of 48"));
}

// A fixed-size body announced with the wrong length, one size short and one long.
TEST(ProtocolHeader, RejectsWrongFixedLengthPerType) {
  const std::vector<Message> messages = {
      Message{sample_hello()},     Message{sample_hello_ack()},     Message{sample_stream_start()},
      Message{sample_ring_info()}, Message{sample_frame_written()}, Message{Keepalive{5}},
      Message{EndOfStream{3, 1}},
  };
  for (const Message& message : messages) {
    const std::string_view type = to_string(type_of(message));
    SCOPED_TRACE(type);
    const Bytes good = encode(message);
    const uint32_t length = static_cast<uint32_t>(good.size() - kHeaderBytes);

    Bytes shorter(good.begin(), good.end() - 4);
    poke(shorter, kLengthAt, length - 4);
    std::string error = rejection(shorter);
    EXPECT_TRUE(contains(error, fmt::format("{} length {}", type, length - 4)));
    EXPECT_TRUE(contains(error, fmt::format("must be {}", length)));

    Bytes longer = good;
    longer.resize(good.size() + 8);
    poke(longer, kLengthAt, length + 8);
    error = rejection(longer);
    EXPECT_TRUE(contains(error, fmt::format("{} length {}", type, length + 8)));
  }
}

// ---------------------------------------------------------------------------------------
// Hello: software at 24 (32 bytes), min_version 0, max_version 2, flags 4,
// max_frame_bytes 8, credits_requested 16.

TEST(ProtocolHello, RejectsSoftwareNotNulTerminated) {
  Bytes bytes = encode(Message{sample_hello()});
  for (size_t i = 0; i < kSoftwareBytes; ++i) bytes[kBody + 24 + i] = std::byte{'a'};
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Hello.software"));
  EXPECT_TRUE(contains(error, "NUL"));
  EXPECT_TRUE(contains(error, "32"));
}

TEST(ProtocolHello, RejectsControlCharacterInSoftware) {
  Bytes bytes = encode(Message{sample_hello()});
  bytes[kBody + 24 + 3] = std::byte{0x07};
  std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Hello.software"));
  EXPECT_TRUE(contains(error, "0x07 at byte 3"));

  bytes[kBody + 24 + 3] = std::byte{0x7f};  // DEL is a control character too
  error = rejection(bytes);
  EXPECT_TRUE(contains(error, "0x7f at byte 3"));
}

TEST(ProtocolHello, RejectsMinVersionGreaterThanMax) {
  Bytes bytes = encode(Message{sample_hello()});
  poke(bytes, kBody + 0, uint16_t{3});
  poke(bytes, kBody + 2, uint16_t{2});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Hello.min_version 3"));
  EXPECT_TRUE(contains(error, "max_version 2"));
}

TEST(ProtocolHello, RejectsMaxFrameBytesZero) {
  Bytes bytes = encode(Message{sample_hello()});
  poke(bytes, kBody + 8, uint64_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "Hello.max_frame_bytes 0"));
}

TEST(ProtocolHello, RejectsMaxFrameBytesTooBig) {
  Bytes bytes = encode(Message{sample_hello()});
  poke(bytes, kBody + 8, kMaxFrame + 1);
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("Hello.max_frame_bytes {}", kMaxFrame + 1)));

  poke(bytes, kBody + 8, kMaxFrame);
  auto decoded = decode_message(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(std::get<Hello>(*decoded).max_frame_bytes, kMaxFrame);
}

// Hello means the same in every version: a version 1 sender asking for 1024 credits is
// refused for its versions, not for its request.
TEST(ProtocolHello, CreditsRequestedIsNotChecked) {
  Bytes bytes = encode(Message{sample_hello()});
  poke(bytes, kBody + 16, uint32_t{1024});
  auto decoded = decode_message(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(std::get<Hello>(*decoded).credits_requested, 1024u);
}

// ---------------------------------------------------------------------------------------
// HelloAck: version 0, flags 4, max_frame_bytes 8, credits 16, software 24.

TEST(ProtocolHelloAck, RejectsUnsupportedVersion) {
  for (uint16_t version : {uint16_t{0}, uint16_t{kVersion + 1}}) {
    SCOPED_TRACE(version);
    Bytes bytes = encode(Message{sample_hello_ack()});
    poke(bytes, kBody + 0, version);
    EXPECT_TRUE(contains(rejection(bytes), fmt::format("HelloAck.version {}", version)));
  }
}

TEST(ProtocolHelloAck, RejectsMaxFrameBytesOutOfRange) {
  Bytes bytes = encode(Message{sample_hello_ack()});
  poke(bytes, kBody + 8, uint64_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "HelloAck.max_frame_bytes 0"));
  poke(bytes, kBody + 8, kMaxFrame + 1);
  EXPECT_TRUE(
      contains(rejection(bytes), fmt::format("HelloAck.max_frame_bytes {}", kMaxFrame + 1)));
}

TEST(ProtocolHelloAck, RejectsCreditsOutOfRange) {
  Bytes bytes = encode(Message{sample_hello_ack()});
  poke(bytes, kBody + 16, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "HelloAck.credits 0"));
  poke(bytes, kBody + 16, kMaxRingSlots + 1);
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("HelloAck.credits {}", kMaxRingSlots + 1)));
}

TEST(ProtocolHelloAck, RejectsSoftwareNotNulTerminated) {
  Bytes bytes = encode(Message{sample_hello_ack()});
  for (size_t i = 0; i < kSoftwareBytes; ++i) bytes[kBody + 24 + i] = std::byte{'b'};
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "HelloAck.software"));
  EXPECT_TRUE(contains(error, "NUL"));
}

TEST(ProtocolHelloAck, RejectsControlCharacterInSoftware) {
  Bytes bytes = encode(Message{sample_hello_ack()});
  bytes[kBody + 24] = std::byte{0x0a};
  EXPECT_TRUE(contains(rejection(bytes), "HelloAck.software has control character 0x0a at byte 0"));
}

// ---------------------------------------------------------------------------------------
// StreamStart: stream_id 0, ring_epoch 4, media 8, pixel_format 12, width 16, height 20,
// frame_rate 24/28, flags 32, plane_count 36, planes[p] at 40 + 12p (offset, stride, rows),
// frame_bytes 88, name 96.
// The sample is nv12 1918x1078: plane 0 stride 1918 rows 1078, plane 1 at 2067604 stride
// 1918 rows 539.

constexpr size_t plane_field(int plane, int field) { return kBody + 40 + 12 * plane + 4 * field; }
constexpr int kOffset = 0, kStride = 1, kRows = 2;

TEST(ProtocolStreamStart, SampleLayoutIsWhatTheTestsAssume) {
  const StreamStart m = sample_stream_start();
  EXPECT_EQ(m.layout.plane_count, 2);
  EXPECT_EQ(m.layout.planes[0].stride, 1918u);
  EXPECT_EQ(m.layout.planes[1].offset, 1918u * 1078);
  EXPECT_EQ(m.layout.planes[1].rows, 539u);
  EXPECT_EQ(m.layout.frame_bytes, 1918u * 1078 + 1918u * 539);
}

TEST(ProtocolStreamStart, RejectsRingEpochZero) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 4, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.ring_epoch is 0"));
}

TEST(ProtocolStreamStart, RejectsUnknownMedia) {
  for (uint32_t media : {0u, 3u, 0xffffffffu}) {
    SCOPED_TRACE(media);
    Bytes bytes = encode(Message{sample_stream_start()});
    poke(bytes, kBody + 8, media);
    EXPECT_TRUE(contains(rejection(bytes), fmt::format("StreamStart.media {} unknown", media)));
  }
}

TEST(ProtocolStreamStart, DecodesAudioMediaForTheReceiverToRefuse) {
  StreamStart m = sample_stream_start();
  m.media = MediaKind::audio;
  EXPECT_EQ(round_trip(m).media, MediaKind::audio);
}

TEST(ProtocolStreamStart, ColourIsTheU32AtOffset92) {
  StreamStart m = sample_stream_start();
  m.colour = {colour::kBt2020, colour::kTransferPq, colour::kMatrixBt2020Ncl, colour::kFull};
  const Bytes bytes = encode(Message{m});
  // Byte by byte: primaries, transfer, matrix, range, where version 2 had a reserved u32.
  EXPECT_EQ(bytes[kBody + 92], std::byte{9});
  EXPECT_EQ(bytes[kBody + 93], std::byte{16});
  EXPECT_EQ(bytes[kBody + 94], std::byte{9});
  EXPECT_EQ(bytes[kBody + 95], std::byte{2});
  EXPECT_EQ(round_trip(m).colour, m.colour);
  // A sender from before sends 0 there: "not said".
  Bytes old = encode(Message{sample_stream_start()});
  poke(old, kBody + 92, uint32_t{0});
  EXPECT_FALSE(round_trip(sample_stream_start()).colour.said());
}

TEST(ProtocolStreamStart, RejectsColourThatIsNoH273CodePoint) {
  struct Case {
    size_t at;
    uint8_t value;
    std::string_view says;
  };
  for (const Case& c : {Case{92, 3, "colour primaries 3"}, Case{92, 13, "colour primaries 13"},
                        Case{92, 23, "colour primaries 23"}, Case{93, 19, "colour transfer 19"},
                        Case{93, 3, "colour transfer 3"}, Case{94, 15, "colour matrix 15"},
                        Case{95, 3, "colour range 3"}, Case{95, 255, "colour range 255"}}) {
    SCOPED_TRACE(c.says);
    Bytes bytes = encode(Message{sample_stream_start()});
    bytes[kBody + c.at] = std::byte{c.value};
    const std::string why = rejection(bytes);
    EXPECT_TRUE(contains(why, "StreamStart." + std::string(c.says))) << why;
    EXPECT_TRUE(contains(why, "H.273")) << why;
  }
}

TEST(ProtocolStreamStart, RejectsUnknownPixelFormat) {
  for (uint32_t format : {0u, 14u, 0xffffffffu}) {
    SCOPED_TRACE(format);
    Bytes bytes = encode(Message{sample_stream_start()});
    poke(bytes, kBody + 12, format);
    EXPECT_TRUE(contains(rejection(bytes), fmt::format("StreamStart.pixel_format {}", format)));
  }
}

TEST(ProtocolStreamStart, RejectsWidthZero) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 16, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.width 0"));
}

TEST(ProtocolStreamStart, RejectsWidthTooBig) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 16, kMaxDimension + 1);
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.width 16385"));
}

TEST(ProtocolStreamStart, RejectsHeightZero) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 20, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.height 0"));
}

TEST(ProtocolStreamStart, RejectsHeightTooBig) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 20, uint32_t{70000});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.height 70000"));
}

TEST(ProtocolStreamStart, RejectsFrameRateNumeratorZero) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 24, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.frame_rate 0/1001"));
}

TEST(ProtocolStreamStart, RejectsFrameRateDenominatorZero) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 28, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.frame_rate 60000/0"));
}

TEST(ProtocolStreamStart, RejectsUnknownFlags) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 32, kStreamKnownFlags | 0x100u);
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.flags 0x10f"));
  EXPECT_TRUE(contains(error, "unknown bits 0x100"));
}

TEST(ProtocolStreamStart, RejectsPlaneCountOutOfRange) {
  for (uint32_t count : {0u, 5u}) {
    SCOPED_TRACE(count);
    Bytes bytes = encode(Message{sample_stream_start()});
    poke(bytes, kBody + 36, count);
    EXPECT_TRUE(contains(rejection(bytes), fmt::format("StreamStart.plane_count {}", count)));
  }
}

TEST(ProtocolStreamStart, RejectsPlaneCountWrongForFormat) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, kBody + 36, uint32_t{3});  // nv12 has 2
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.plane_count 3"));
  EXPECT_TRUE(contains(error, "nv12"));
}

TEST(ProtocolStreamStart, RejectsStrideTooSmall) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, plane_field(0, kStride), uint32_t{1917});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.planes[0].stride 1917"));
  EXPECT_TRUE(contains(error, "1918"));
}

TEST(ProtocolStreamStart, RejectsWrongRows) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, plane_field(1, kRows), uint32_t{540});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.planes[1].rows 540"));
  EXPECT_TRUE(contains(error, "539"));
}

TEST(ProtocolStreamStart, RejectsOverlappingPlanes) {
  Bytes bytes = encode(Message{sample_stream_start()});
  const uint32_t overlapping = 1918 * 1078 - 1;
  poke(bytes, plane_field(1, kOffset), overlapping);
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, fmt::format("StreamStart.planes[1].offset {}", overlapping)));
}

TEST(ProtocolStreamStart, RejectsFrameBytesTooSmall) {
  Bytes bytes = encode(Message{sample_stream_start()});
  const uint32_t frame_bytes = 1918 * 1078 + 1918 * 539;
  poke(bytes, kBody + 88, frame_bytes - 1);
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, fmt::format("StreamStart.frame_bytes {}", frame_bytes - 1)));
  EXPECT_TRUE(contains(error, fmt::format("{}", frame_bytes)));
}

TEST(ProtocolStreamStart, RejectsUnusedPlaneSet) {
  Bytes bytes = encode(Message{sample_stream_start()});
  poke(bytes, plane_field(2, kStride), uint32_t{64});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.planes[2]"));
}

TEST(ProtocolStreamStart, RejectsNameNotNulTerminated) {
  Bytes bytes = encode(Message{sample_stream_start()});
  for (size_t i = 0; i < kNameBytes; ++i) bytes[kBody + 96 + i] = std::byte{'n'};
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "StreamStart.name"));
  EXPECT_TRUE(contains(error, "NUL"));
  EXPECT_TRUE(contains(error, "64"));
}

TEST(ProtocolStreamStart, RejectsControlCharacterInName) {
  Bytes bytes = encode(Message{sample_stream_start()});
  bytes[kBody + 96 + 2] = std::byte{0x1b};
  EXPECT_TRUE(contains(rejection(bytes), "StreamStart.name has control character 0x1b at byte 2"));
}

// A name that is not UTF-8 (a Latin-1 byte, half a character, an overlong form) is taken, each
// bad byte made U+FFFD: what reaches logs, tags and GStreamer is always valid UTF-8.
TEST(ProtocolStreamStart, ANameThatIsNotUtf8ArrivesAsValidUtf8) {
  StreamStart m = sample_stream_start();
  m.name = "cam";
  Bytes bytes = encode(Message{m});
  bytes[kBody + 96 + 1] = std::byte{0xe9};  // Latin-1 "é"
  bytes[kBody + 96 + 3] = std::byte{0xc3};  // the first byte of a 2-byte character, alone
  auto decoded = decode_message(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(std::get<StreamStart>(*decoded).name, "c\xef\xbf\xbdm\xef\xbf\xbd");
}

// ---------------------------------------------------------------------------------------
// RingInfo: stream_id 0, ring_epoch 4, slot_count 8, rkey 12, slot_bytes 16, slot_stride 24,
// base_addr 32.

TEST(ProtocolRingInfo, RejectsSlotCountZero) {
  Bytes bytes = encode(Message{sample_ring_info()});
  poke(bytes, kBody + 8, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "RingInfo.slot_count 0"));
}

TEST(ProtocolRingInfo, RejectsSlotCountTooBig) {
  Bytes bytes = encode(Message{sample_ring_info()});
  poke(bytes, kBody + 8, kMaxRingSlots + 1);
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("RingInfo.slot_count {}", kMaxRingSlots + 1)));
}

TEST(ProtocolRingInfo, RejectsSlotBytesOutOfRange) {
  Bytes bytes = encode(Message{sample_ring_info()});
  poke(bytes, kBody + 16, uint64_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "RingInfo.slot_bytes 0"));
  poke(bytes, kBody + 16, kMaxFrame + 1);
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("RingInfo.slot_bytes {}", kMaxFrame + 1)));
}

TEST(ProtocolRingInfo, RejectsSlotStrideLessThanSlotBytes) {
  Bytes bytes = encode(Message{sample_ring_info()});
  poke(bytes, kBody + 16, uint64_t{4096});
  poke(bytes, kBody + 24, uint64_t{4095});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "RingInfo.slot_stride 4095"));
  EXPECT_TRUE(contains(error, "4096"));

  poke(bytes, kBody + 24, uint64_t{4096});  // equal is fine
  EXPECT_TRUE(decode_message(bytes));
}

// ---------------------------------------------------------------------------------------
// FrameWritten: ring_epoch 0, slot 4, sequence 8, pts_ns 16, sent_ns 24, bytes 32, flags 36,
// checksum 40.

TEST(ProtocolFrameWritten, RejectsSlotOutOfRange) {
  Bytes bytes = encode(Message{sample_frame_written()});
  poke(bytes, kBody + 4, kMaxRingSlots);
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("FrameWritten.slot {}", kMaxRingSlots)));
}

TEST(ProtocolFrameWritten, RejectsBytesZero) {
  Bytes bytes = encode(Message{sample_frame_written()});
  poke(bytes, kBody + 32, uint32_t{0});
  EXPECT_TRUE(contains(rejection(bytes), "FrameWritten.bytes is 0"));
}

TEST(ProtocolFrameWritten, RejectsUnknownFlags) {
  Bytes bytes = encode(Message{sample_frame_written()});
  poke(bytes, kBody + 36, uint32_t{0x3});
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "FrameWritten.flags 0x3"));
  EXPECT_TRUE(contains(error, "unknown bits 0x2"));
}

// ---------------------------------------------------------------------------------------
// CreditReturn: ring_epoch 0, count 4, slots from 8.

Bytes credit_return_body(uint32_t count, std::vector<uint32_t> slots) {
  Bytes body(8 + 4 * slots.size());
  poke(body, 0, uint32_t{2});
  poke(body, 4, count);
  for (size_t i = 0; i < slots.size(); ++i) poke(body, 8 + 4 * i, slots[i]);
  return body;
}

TEST(ProtocolCreditReturn, RejectsBodyShorterThanFixedPart) {
  const Bytes bytes = raw_message(MessageType::CreditReturn, Bytes(4));
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "CreditReturn length 4"));
}

TEST(ProtocolCreditReturn, RejectsCountZero) {
  const Bytes bytes = raw_message(MessageType::CreditReturn, credit_return_body(0, {}));
  EXPECT_TRUE(contains(rejection(bytes), "CreditReturn.count 0"));
}

TEST(ProtocolCreditReturn, RejectsCountTooBig) {
  std::vector<uint32_t> slots(kMaxRingSlots + 1, 0);
  const Bytes bytes =
      raw_message(MessageType::CreditReturn, credit_return_body(kMaxRingSlots + 1, slots));
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("CreditReturn.count {}", kMaxRingSlots + 1)));
}

TEST(ProtocolCreditReturn, RejectsLengthMismatchWithCount) {
  const Bytes bytes = raw_message(MessageType::CreditReturn, credit_return_body(3, {1, 2}));
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "CreditReturn length 16"));
  EXPECT_TRUE(contains(error, "count 3"));
  EXPECT_TRUE(contains(error, "must be 20"));
}

TEST(ProtocolCreditReturn, RejectsSlotOutOfRange) {
  const Bytes bytes =
      raw_message(MessageType::CreditReturn, credit_return_body(3, {1, kMaxRingSlots, 2}));
  EXPECT_TRUE(contains(rejection(bytes), fmt::format("CreditReturn.slots[1] {}", kMaxRingSlots)));
}

// ---------------------------------------------------------------------------------------
// Error: code 0, text length 4, text from 8.

Bytes error_body(uint32_t code, uint32_t text_bytes, std::string_view text) {
  Bytes body(8);
  poke(body, 0, code);
  poke(body, 4, text_bytes);
  for (char c : text) body.push_back(static_cast<std::byte>(c));
  return body;
}

TEST(ProtocolError, RejectsBodyShorterThanFixedPart) {
  const Bytes bytes = raw_message(MessageType::Error, Bytes(6));
  EXPECT_TRUE(contains(rejection(bytes), "Error length 6"));
}

TEST(ProtocolError, RejectsUnknownCode) {
  const Bytes bytes = raw_message(MessageType::Error, error_body(8, 2, "hi"));
  EXPECT_TRUE(contains(rejection(bytes), "Error.code 8"));
}

TEST(ProtocolError, RejectsTextTooLong) {
  const std::string text(kMaxErrorText + 1, 't');
  const Bytes bytes = raw_message(MessageType::Error, error_body(0, kMaxErrorText + 1, text));
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Error.length 1025"));
  EXPECT_TRUE(contains(error, "1024"));
}

TEST(ProtocolError, RejectsLengthMismatchWithText) {
  const Bytes bytes = raw_message(MessageType::Error, error_body(1, 10, "short"));
  const std::string error = rejection(bytes);
  EXPECT_TRUE(contains(error, "Error length 13"));
  EXPECT_TRUE(contains(error, "10 bytes"));
  EXPECT_TRUE(contains(error, "must be 18"));
}

TEST(ProtocolError, ControlCharactersInTextAreReplaced) {
  const std::string text = "bad\nframe\x1b[31m\x7f\t\xc3\xa9!";
  const Bytes bytes = encode(Message{ErrorMessage{ErrorCode::protocol, text}});
  auto decoded = decode_message(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message();
  const auto& m = std::get<ErrorMessage>(*decoded);
  EXPECT_EQ(m.code, ErrorCode::protocol);
  EXPECT_EQ(m.text, "bad?frame?[31m??\xc3\xa9!");  // UTF-8 beyond ASCII is kept
}

// ---------------------------------------------------------------------------------------

TEST(ProtocolMakeStreamStart, BuildsCanonicalLayout) {
  auto m = make_stream_start(PixelFormat::i420, 33, 17, Rational{30000, 1001});
  ASSERT_TRUE(m) << m.error().message();
  auto layout = canonical_layout(PixelFormat::i420, 33, 17);
  ASSERT_TRUE(layout);
  EXPECT_EQ(m->layout, *layout);
  EXPECT_EQ(m->frame_rate.num, 30000u);
  EXPECT_EQ(m->frame_rate.den, 1001u);
  EXPECT_EQ(m->stream_id, 0u);
  EXPECT_EQ(m->flags, 0u);
  EXPECT_EQ(m->name, "");
}

TEST(ProtocolMakeStreamStart, RejectsBadRateAndSize) {
  auto rate = make_stream_start(PixelFormat::i420, 64, 64, Rational{0, 1});
  ASSERT_FALSE(rate);
  EXPECT_EQ(rate.error().code(), ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(rate.error().message(), "0/1"));
  auto size = make_stream_start(PixelFormat::i420, 0, 64, Rational{30, 1});
  ASSERT_FALSE(size);
  EXPECT_EQ(size.error().code(), ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(size.error().message(), "0x64"));
}

// A name as the protocol carries it: at most kNameBytes - 1 bytes, cut where a UTF-8 character
// starts, control characters as spaces; a short clean name unchanged.
TEST(FitName, CutsAtACharacterAndBlanksControlCharacters) {
  EXPECT_EQ(fit_name("cam 1"), "cam 1");
  EXPECT_EQ(fit_name("a\tb\nc\x7f"), "a b c ");
  const std::string long_ascii(100, 'x');
  EXPECT_EQ(fit_name(long_ascii), std::string(kNameBytes - 1, 'x'));
  // 62 ASCII bytes then "é" (2 bytes): the cut at 63 would split it, so it goes whole.
  const std::string accented = std::string(62, 'a') + "\xc3\xa9" + "z";
  EXPECT_EQ(fit_name(accented), std::string(62, 'a'));
  // 61 bytes then "é": it fits exactly.
  const std::string fits = std::string(61, 'a') + "\xc3\xa9" + "z";
  EXPECT_EQ(fit_name(fits), std::string(61, 'a') + "\xc3\xa9");
  // Bytes that are not UTF-8 become U+FFFD (3 bytes), and the cut still falls between
  // characters of the valid text.
  EXPECT_EQ(fit_name("a\xffz"), "a\xef\xbf\xbdz");
  const std::string latin = std::string(61, 'a') + "\xe9" + "z";
  EXPECT_EQ(fit_name(latin), std::string(61, 'a'));
  // Whatever it gets, the result goes over the wire and back as it is.
  StreamStart m = *make_stream_start(PixelFormat::uyvy, 64, 36, Rational{30, 1});
  m.ring_epoch = 1;
  m.name = fit_name(std::string(200, '\x01'));
  EXPECT_EQ(m.name, std::string(kNameBytes - 1, ' '));
  EXPECT_EQ(round_trip(m).name, m.name);
}

}  // namespace
}  // namespace rdmavideo::proto
