// SPDX-License-Identifier: Apache-2.0
// The message codec: every message type round trips with every field intact, and every
// rejection path in proto/protocol.cpp is hit once, asserting that the error names the field
// and the value it saw. Bad inputs are valid encodings with bytes patched at the offsets of
// the layouts in protocol.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
// Hello

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
// CreditReturn: ring_epoch 0, count 4, slots from 8.

Bytes credit_return_body(uint32_t count, std::vector<uint32_t> slots) {
  Bytes body(8 + 4 * slots.size());
  poke(body, 0, uint32_t{2});
  poke(body, 4, count);
  for (size_t i = 0; i < slots.size(); ++i) poke(body, 8 + 4 * i, slots[i]);
  return body;
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
// Rejections: each a valid encoding with bytes patched at the layouts' offsets (or a body
// built by hand), and the words the error must have: the field and the value it saw.
//
// Hello: min_version 0, max_version 2, flags 4, max_frame_bytes 8, credits_requested 16,
// software 24 (32 bytes). HelloAck: version 0, flags 4, max_frame_bytes 8, credits 16,
// software 24. RingInfo: stream_id 0, ring_epoch 4, slot_count 8, rkey 12, slot_bytes 16,
// slot_stride 24, base_addr 32. FrameWritten: ring_epoch 0, slot 4, sequence 8, pts_ns 16,
// sent_ns 24, bytes 32, flags 36, checksum 40. StreamStart and the bodies built by hand:
// above.

// Bytes laid over an encoding: `width` bytes of `value`, little-endian, `count` times.
struct Patch {
  size_t at;
  uint64_t value;
  size_t width;
  size_t count = 1;
};
Patch u8(size_t at, uint8_t v, size_t count = 1) { return {at, v, 1, count}; }
Patch u16(size_t at, uint16_t v) { return {at, v, 2}; }
Patch u32(size_t at, uint32_t v) { return {at, v, 4}; }
Patch u64(size_t at, uint64_t v) { return {at, v, 8}; }

Bytes patched(const Message& message, std::initializer_list<Patch> patches) {
  Bytes bytes = encode(message);
  for (const Patch& p : patches) {
    for (size_t n = 0; n < p.count; ++n) {
      for (size_t i = 0; i < p.width; ++i)
        bytes.at(p.at + n * p.width + i) = std::byte((p.value >> (8 * i)) & 0xff);
    }
  }
  return bytes;
}

struct Rejected {
  std::string what;
  Bytes bytes;
  std::vector<std::string> says;  // every one in the error's text
  ErrorCode code = ErrorCode::protocol;
};

std::vector<Rejected> rejections() {
  const Message keepalive{Keepalive{1}}, hello{sample_hello()}, ack{sample_hello_ack()},
      start{sample_stream_start()}, ring{sample_ring_info()}, written{sample_frame_written()};
  const auto big = [](uint64_t v) { return fmt::format("{}", v); };
  std::vector<Rejected> rows = {
      // Header
      {"magic", patched(keepalive, {u32(kMagicAt, 0x12345678)}), {"Header.magic", "0x12345678"}},
      // Version 1 headers are the handshake's only: a version 1 peer's StreamStart is refused.
      {"version 1 outside the handshake",
       patched(start, {u16(kVersionAt, kHandshakeHeaderVersion)}),
       {"Header.version 1 not spoken here (2..3 for StreamStart)"},
       ErrorCode::unsupported},
      // Hello
      {"Hello software without NUL",
       patched(hello, {u8(kBody + 24, 'a', kSoftwareBytes)}),
       {"Hello.software", "NUL", "32"}},
      {"Hello software BEL",
       patched(hello, {u8(kBody + 24 + 3, 0x07)}),
       {"Hello.software", "0x07 at byte 3"}},
      {"Hello software DEL", patched(hello, {u8(kBody + 24 + 3, 0x7f)}), {"0x7f at byte 3"}},
      {"Hello min above max",
       patched(hello, {u16(kBody + 0, 3), u16(kBody + 2, 2)}),
       {"Hello.min_version 3", "max_version 2"}},
      {"Hello max_frame_bytes 0", patched(hello, {u64(kBody + 8, 0)}), {"Hello.max_frame_bytes 0"}},
      {"Hello max_frame_bytes over",
       patched(hello, {u64(kBody + 8, kMaxFrame + 1)}),
       {"Hello.max_frame_bytes " + big(kMaxFrame + 1)}},
      // HelloAck
      {"HelloAck max_frame_bytes 0",
       patched(ack, {u64(kBody + 8, 0)}),
       {"HelloAck.max_frame_bytes 0"}},
      {"HelloAck max_frame_bytes over",
       patched(ack, {u64(kBody + 8, kMaxFrame + 1)}),
       {"HelloAck.max_frame_bytes " + big(kMaxFrame + 1)}},
      {"HelloAck credits 0", patched(ack, {u32(kBody + 16, 0)}), {"HelloAck.credits 0"}},
      {"HelloAck credits over",
       patched(ack, {u32(kBody + 16, kMaxRingSlots + 1)}),
       {"HelloAck.credits " + big(kMaxRingSlots + 1)}},
      {"HelloAck software without NUL",
       patched(ack, {u8(kBody + 24, 'b', kSoftwareBytes)}),
       {"HelloAck.software", "NUL"}},
      {"HelloAck software LF",
       patched(ack, {u8(kBody + 24, 0x0a)}),
       {"HelloAck.software has control character 0x0a at byte 0"}},
      // StreamStart
      {"ring_epoch 0", patched(start, {u32(kBody + 4, 0)}), {"StreamStart.ring_epoch is 0"}},
      {"width 0", patched(start, {u32(kBody + 16, 0)}), {"StreamStart.width 0"}},
      {"width over",
       patched(start, {u32(kBody + 16, kMaxDimension + 1)}),
       {"StreamStart.width 16385"}},
      {"height 0", patched(start, {u32(kBody + 20, 0)}), {"StreamStart.height 0"}},
      {"height over", patched(start, {u32(kBody + 20, 70000)}), {"StreamStart.height 70000"}},
      {"frame rate 0/n", patched(start, {u32(kBody + 24, 0)}), {"StreamStart.frame_rate 0/1001"}},
      {"frame rate n/0", patched(start, {u32(kBody + 28, 0)}), {"StreamStart.frame_rate 60000/0"}},
      {"flags",
       patched(start, {u32(kBody + 32, kStreamKnownFlags | 0x100u)}),
       {"StreamStart.flags 0x10f", "unknown bits 0x100"}},
      {"plane count for nv12",
       patched(start, {u32(kBody + 36, 3)}),
       {"StreamStart.plane_count 3", "nv12"}},
      {"stride short",
       patched(start, {u32(plane_field(0, kStride), 1917)}),
       {"StreamStart.planes[0].stride 1917", "1918"}},
      {"rows",
       patched(start, {u32(plane_field(1, kRows), 540)}),
       {"StreamStart.planes[1].rows 540", "539"}},
      {"planes overlap",
       patched(start, {u32(plane_field(1, kOffset), 1918 * 1078 - 1)}),
       {"StreamStart.planes[1].offset " + big(1918 * 1078 - 1)}},
      {"frame_bytes short",
       patched(start, {u32(kBody + 88, 1918 * 1078 + 1918 * 539 - 1)}),
       {"StreamStart.frame_bytes " + big(1918 * 1078 + 1918 * 539 - 1),
        big(1918 * 1078 + 1918 * 539)}},
      {"an unused plane set",
       patched(start, {u32(plane_field(2, kStride), 64)}),
       {"StreamStart.planes[2]"}},
      {"name without NUL",
       patched(start, {u8(kBody + 96, 'n', kNameBytes)}),
       {"StreamStart.name", "NUL", "64"}},
      {"name ESC",
       patched(start, {u8(kBody + 96 + 2, 0x1b)}),
       {"StreamStart.name has control character 0x1b at byte 2"}},
      // RingInfo
      {"slot_count 0", patched(ring, {u32(kBody + 8, 0)}), {"RingInfo.slot_count 0"}},
      {"slot_count over",
       patched(ring, {u32(kBody + 8, kMaxRingSlots + 1)}),
       {"RingInfo.slot_count " + big(kMaxRingSlots + 1)}},
      {"slot_bytes 0", patched(ring, {u64(kBody + 16, 0)}), {"RingInfo.slot_bytes 0"}},
      {"slot_bytes over",
       patched(ring, {u64(kBody + 16, kMaxFrame + 1)}),
       {"RingInfo.slot_bytes " + big(kMaxFrame + 1)}},
      {"slot_stride under slot_bytes",
       patched(ring, {u64(kBody + 16, 4096), u64(kBody + 24, 4095)}),
       {"RingInfo.slot_stride 4095", "4096"}},
      // FrameWritten
      {"slot over",
       patched(written, {u32(kBody + 4, kMaxRingSlots)}),
       {"FrameWritten.slot " + big(kMaxRingSlots)}},
      {"bytes 0", patched(written, {u32(kBody + 32, 0)}), {"FrameWritten.bytes is 0"}},
      {"FrameWritten flags",
       patched(written, {u32(kBody + 36, 0x3)}),
       {"FrameWritten.flags 0x3", "unknown bits 0x2"}},
      // CreditReturn
      {"CreditReturn short",
       raw_message(MessageType::CreditReturn, Bytes(4)),
       {"CreditReturn length 4"}},
      {"CreditReturn count 0",
       raw_message(MessageType::CreditReturn, credit_return_body(0, {})),
       {"CreditReturn.count 0"}},
      {"CreditReturn count over",
       raw_message(
           MessageType::CreditReturn,
           credit_return_body(kMaxRingSlots + 1, std::vector<uint32_t>(kMaxRingSlots + 1, 0))),
       {"CreditReturn.count " + big(kMaxRingSlots + 1)}},
      {"CreditReturn length and count",
       raw_message(MessageType::CreditReturn, credit_return_body(3, {1, 2})),
       {"CreditReturn length 16", "count 3", "must be 20"}},
      {"CreditReturn slot over",
       raw_message(MessageType::CreditReturn, credit_return_body(3, {1, kMaxRingSlots, 2})),
       {"CreditReturn.slots[1] " + big(kMaxRingSlots)}},
      // Error
      {"Error short", raw_message(MessageType::Error, Bytes(6)), {"Error length 6"}},
      {"Error code", raw_message(MessageType::Error, error_body(8, 2, "hi")), {"Error.code 8"}},
      {"Error text over",
       raw_message(MessageType::Error,
                   error_body(0, kMaxErrorText + 1, std::string(kMaxErrorText + 1, 't'))),
       {"Error.length 1025", "1024"}},
      {"Error length and text",
       raw_message(MessageType::Error, error_body(1, 10, "short")),
       {"Error length 13", "10 bytes", "must be 18"}},
  };
  // Values out of a field's range, each its own row.
  for (uint16_t version : {uint16_t{0}, uint16_t{kVersion + 1}, uint16_t{0xffff}}) {
    rows.push_back({"header version " + big(version),
                    patched(keepalive, {u16(kVersionAt, version)}),
                    {"Header.version " + big(version)},
                    ErrorCode::unsupported});
  }
  for (uint16_t type : {uint16_t{0}, uint16_t{14}, uint16_t{0xffff}}) {
    rows.push_back({"header type " + big(type),
                    patched(keepalive, {u16(kTypeAt, type)}),
                    {"Header.type " + big(type)}});
  }
  for (uint16_t version : {uint16_t{0}, uint16_t{kVersion + 1}}) {
    rows.push_back({"HelloAck version " + big(version),
                    patched(ack, {u16(kBody + 0, version)}),
                    {"HelloAck.version " + big(version)}});
  }
  for (uint32_t media : {0u, 3u, 0xffffffffu}) {
    rows.push_back({"media " + big(media),
                    patched(start, {u32(kBody + 8, media)}),
                    {fmt::format("StreamStart.media {} unknown", media)}});
  }
  for (uint32_t format : {0u, 14u, 0xffffffffu}) {
    rows.push_back({"pixel format " + big(format),
                    patched(start, {u32(kBody + 12, format)}),
                    {"StreamStart.pixel_format " + big(format)}});
  }
  for (uint32_t count : {0u, 5u}) {
    rows.push_back({"plane count " + big(count),
                    patched(start, {u32(kBody + 36, count)}),
                    {"StreamStart.plane_count " + big(count)}});
  }
  // Colour: primaries, transfer, matrix and range at 92..95, each an H.273 code point.
  struct Colour {
    size_t at;
    uint8_t value;
    const char* says;
  };
  for (const Colour& c :
       {Colour{92, 3, "colour primaries 3"}, Colour{92, 13, "colour primaries 13"},
        Colour{92, 23, "colour primaries 23"}, Colour{93, 19, "colour transfer 19"},
        Colour{93, 3, "colour transfer 3"}, Colour{94, 15, "colour matrix 15"},
        Colour{95, 3, "colour range 3"}, Colour{95, 255, "colour range 255"}}) {
    rows.push_back({c.says,
                    patched(start, {u8(kBody + c.at, c.value)}),
                    {std::string("StreamStart.") + c.says, "H.273"}});
  }
  return rows;
}

TEST(ProtocolRejects, EachNamesTheFieldAndTheValueItSaw) {
  for (const Rejected& r : rejections()) {
    SCOPED_TRACE(r.what);
    const std::string error = rejection(r.bytes, r.code);
    for (const std::string& part : r.says) EXPECT_TRUE(contains(error, part));
  }
}

// And the edges of those ranges are taken.
TEST(ProtocolRejects, TheEdgesOfEachRangeAreTaken) {
  const std::vector<std::pair<std::string, Bytes>> taken = {
      {"Hello max_frame_bytes at the most",
       patched(Message{sample_hello()}, {u64(kBody + 8, kMaxFrame)})},
      {"RingInfo slot_stride equal to slot_bytes",
       patched(Message{sample_ring_info()}, {u64(kBody + 16, 4096), u64(kBody + 24, 4096)})},
      {"HelloAck credits at the most",
       patched(Message{sample_hello_ack()}, {u32(kBody + 16, kMaxRingSlots)})},
  };
  for (const auto& [what, bytes] : taken) {
    SCOPED_TRACE(what);
    auto decoded = decode_message(bytes);
    EXPECT_TRUE(decoded) << decoded.error().message();
  }
  auto at_most = decode_message(taken[0].second);
  ASSERT_TRUE(at_most);
  EXPECT_EQ(std::get<Hello>(*at_most).max_frame_bytes, kMaxFrame);
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
