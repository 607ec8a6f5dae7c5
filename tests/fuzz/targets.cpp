// SPDX-License-Identifier: Apache-2.0
#include "targets.hpp"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <span>

#include "auth/handshake.hpp"
#include "rdmavideo/text.hpp"
#include "receiver/connection.hpp"

namespace rdmavideo::fuzz {
namespace {

using Bytes = std::span<const std::byte>;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

// Touches every text a peer sends the way logging does.
void print_texts(const proto::Message& m) {
  std::string out;
  if (const auto* h = std::get_if<proto::Hello>(&m)) out = printable(h->software);
  if (const auto* s = std::get_if<proto::StreamStart>(&m)) out = printable(s->name);
  if (const auto* e = std::get_if<proto::ErrorMessage>(&m)) out = printable(e->text);
  if (out.size() > 4 * 1024 * 4) finding("printable() grew a text beyond 4x its bytes");
}

// A peer made of the fuzz input: messages framed as on TCP, each payload after its
// FrameWritten; what the receiver sends is encoded (so it must be encodable) and dropped.
class InputChannel final : public receiver::ReceiverChannel {
 public:
  explicit InputChannel(Bytes input) : input_(input) {}

  TransportKind kind() const override { return TransportKind::tcp; }
  const std::string& peer() const override { return peer_; }
  Result<void> establish(receiver::Clock::time_point) override { return {}; }

  Result<std::optional<proto::Message>> receive(std::chrono::milliseconds,
                                                receiver::Clock::time_point) override {
    if (interrupted_) return make_error(ErrorCode::peer_closed, "stopped");
    if (input_.size() < proto::kHeaderBytes) return closed();
    auto header = proto::decode_header(input_);
    if (!header) return Unexpected(header.error());
    const size_t whole = proto::kHeaderBytes + header->length + auth::tag_bytes(mac_.get());
    if (input_.size() < whole) return closed();
    auto message = auth::decode_sealed(input_.first(whole), mac_.get());
    input_ = input_.subspan(whole);
    if (!message) return Unexpected(message.error());
    print_texts(*message);
    return std::optional<proto::Message>(std::move(*message));
  }

  Result<void> receive_payload(std::span<std::byte> slot, receiver::Clock::time_point,
                               const std::function<void()>&) override {
    if (input_.size() < slot.size()) return closed();
    std::copy_n(input_.begin(), slot.size(), slot.begin());
    input_ = input_.subspan(slot.size());
    return {};
  }

  Result<void> send(const proto::Message& message) override {
    std::vector<std::byte> out;
    auth::encode_sealed(message, out, mac_.get(), version_);
    if (out.size() < proto::kHeaderBytes) finding("a message encoded shorter than its header");
    return {};
  }
  void protect(std::shared_ptr<auth::ControlMac> mac) override { mac_ = std::move(mac); }
  void negotiated(uint16_t version) override { version_ = version; }
  bool sends_from_any_thread() const override { return true; }
  void wake() override {}
  void interrupt() override { interrupted_ = true; }
  Result<receiver::RingAccess> expose_ring(const std::shared_ptr<memory::Region>&) override {
    return receiver::RingAccess{};
  }
  void close(const proto::Message* last) override {
    if (last) (void)send(*last);
  }

 private:
  static Unexpected closed() { return Unexpected(Error(ErrorCode::peer_closed, "peer closed")); }

  Bytes input_;
  std::string peer_ = "fuzz:1";
  std::shared_ptr<auth::ControlMac> mac_;
  uint16_t version_ = proto::kVersion;
  bool interrupted_ = false;
};

// Holds up to `hold` frames (the oldest let go first), as a slow consumer does.
class HoldingSink final : public StreamSink {
 public:
  HoldingSink(size_t hold, uint64_t& frames) : hold_(hold), frames_(frames) {}
  void frame(FrameLease frame) override {
    ++frames_;
    if (frame.data().size() != frame.format().layout.frame_bytes) {
      finding("a lease's bytes differ from its format's frame_bytes");
    }
    held_.push_back(std::move(frame));
    while (held_.size() > hold_) held_.pop_front();
  }
  Result<void> finish(const StreamEnd&) override {
    held_.clear();
    audio_held_.clear();
    return {};
  }
  void audio_started(const AudioTrack& track) override {
    if (track.index != tracks_.size()) finding("an audio track numbered out of order");
    tracks_.push_back(track.format);
  }
  bool audio(AudioPacket packet) override {
    if (packet.track >= tracks_.size()) finding("audio for a track that never started");
    const auto& f = tracks_[packet.track];
    if (packet.data.size() !=
        size_t{packet.samples} * f.channels * proto::bytes_per_sample(f.sample_format)) {
      finding("an audio packet's bytes differ from its samples");
    }
    // Held as frames are, so the stream's audio queue fills and drops.
    audio_held_.push_back(std::move(packet));
    while (audio_held_.size() > 4 * hold_) audio_held_.pop_front();
    return true;
  }

 private:
  size_t hold_;
  uint64_t& frames_;
  std::deque<FrameLease> held_;
  std::vector<proto::AudioStart> tracks_;
  std::deque<AudioPacket> audio_held_;
};

// The front end's check of every StreamStart (ReceiverServiceOptions::format_check), as an
// encoder with a top frame rate has it: rates above 240 fps are refused.
Result<void> rate_check(const proto::StreamStart& format) {
  if (format.frame_rate.num > 240 * uint64_t{format.frame_rate.den}) {
    return make_error(ErrorCode::unsupported, "StreamStart.frame_rate {} above 240 fps",
                      to_string(format.frame_rate));
  }
  return {};
}

class Host final : public receiver::ConnectionHost {
 public:
  Host(size_t hold, bool shed_when_waiting, bool checks_rate)
      : hold_(hold), shed_when_waiting_(shed_when_waiting), checks_rate_(checks_rate) {}
  // The connection this host runs, for shedding it.
  void runs(receiver::ReceiverConnection* connection) { connection_ = connection; }
  void passed_handshake(const receiver::ReceiverConnection& connection) override {
    if (connection.stage() != receiver::ReceiverConnection::Stage::pending) {
      finding("told of a passed handshake by a connection not waiting for StreamStart");
    }
    if (passed_++) finding("a connection passed its handshake twice");
    // As the service sheds the oldest waiting connection when its cap is full.
    if (shed_when_waiting_) connection_->shed();
  }
  Result<Admitted> admit(StreamInfo info) override {
    if (shed_when_waiting_) finding("a shed connection admitted a stream");
    if (!passed_) finding("a stream admitted before its handshake passed");
    if (checks_rate_ && !rate_check(*info.format)) finding("admitted a format the check refused");
    if (record_) finding("a connection admitted a second stream");
    record_ = std::make_shared<receiver::StreamRecord>();
    record_->report.info = std::move(info);
    record_->sink = std::make_unique<HoldingSink>(hold_, frames);
    return Admitted{record_->sink.get(), record_};
  }
  void release(const std::shared_ptr<receiver::StreamRecord>& record, StreamEnd end) override {
    if (record != record_) finding("released a stream that was not admitted");
    (void)record->sink->finish(end);
    record->sink.reset();
  }

  uint64_t frames = 0;  // given to the sink

 private:
  size_t hold_;
  bool shed_when_waiting_;
  bool checks_rate_;
  receiver::ReceiverConnection* connection_ = nullptr;
  int passed_ = 0;
  std::shared_ptr<receiver::StreamRecord> record_;
};

}  // namespace

void decode_one(const uint8_t* data, size_t size) {
  const Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  auto header = proto::decode_header(bytes);
  if (!header) return;
  const size_t body = std::min<size_t>(header->length, size - proto::kHeaderBytes);
  auto message = proto::decode(*header, bytes.subspan(proto::kHeaderBytes, body));
  if (!message) return;
  print_texts(*message);
  // Encoded with the version it came with, as the connection that negotiated it would.
  const uint16_t version = header->version;
  const auto encoded = proto::encode(*message, version);
  auto again_header = proto::decode_header(encoded);
  if (!again_header) finding("an encoded message's header does not decode");
  auto again = proto::decode(*again_header, Bytes(encoded).subspan(proto::kHeaderBytes));
  if (!again) finding("an encoded message does not decode");
  if (proto::encode(*again, version) != encoded) finding("decode(encode(m)) encodes differently");
  // Sealed and opened under the same session keys, it comes back the same.
  static const auth::SharedKey key(std::vector<std::byte>(32, std::byte{7}));
  static const proto::Nonce s{}, r{std::byte{1}};
  auth::ControlMac sender(key, auth::Role::sender, s, r);
  auth::ControlMac receiver(key, auth::Role::receiver, s, r);
  std::vector<std::byte> sealed;
  auth::encode_sealed(*message, sealed, &sender, version);
  auto opened = auth::decode_sealed(sealed, &receiver);
  if (!opened || proto::encode(*opened, version) != encoded)
    finding("a sealed message did not open");
}

uint64_t receive_stream(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  receiver::ConnectionConfig config;
  config.ring_size = 1 + (mode & 3);  // 1..4 slots
  config.max_frame_bytes = 1 << 20;
  config.timeouts.connect = std::chrono::milliseconds(2000);
  if (mode & 4) {
    config.key = std::make_shared<auth::SharedKey>(std::vector<std::byte>(32, std::byte{'k'}));
  }
  // Room for exactly one ring of the seeds' frames (8 KiB slots).
  if (mode & 8) config.budget = std::make_shared<memory::Budget>(8192 * config.ring_size);
  if (mode & 16) config.frames_per_stream = 3;
  if (mode & 64) config.format_check = rate_check;
  Host host(mode & 32 ? 2 : 0, mode & 128, mode & 64);
  {
    receiver::ReceiverConnection connection(
        std::make_unique<InputChannel>(
            Bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1)),
        config, host);
    host.runs(&connection);
    (void)connection.run();
  }
  if (config.budget && config.budget->used() != 0) finding("memory budget not given back");
  return host.frames;
}

}  // namespace rdmavideo::fuzz
