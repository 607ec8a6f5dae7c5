// SPDX-License-Identifier: Apache-2.0
#include "sender/sender_core.hpp"

#include <algorithm>
#include <cerrno>

#include "rdmavideo/log.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::sender {

using std::chrono::milliseconds;

namespace {

// Our Hello. A sender that does not know its largest frame yet (max_frame_bytes 0) claims
// the protocol's limit; the receiver then judges each StreamStart's frame size.
proto::Hello make_hello(uint64_t max_frame_bytes, uint32_t credits_requested, bool keyed,
                        uint16_t max_version) {
  proto::Hello hello;
  hello.max_version = max_version;
  hello.max_frame_bytes = max_frame_bytes ? max_frame_bytes : proto::kMaxFrameBytes;
  hello.credits_requested = credits_requested;
  hello.flags = proto::kCapChecksum | (keyed ? proto::kCapAuth : 0);
  hello.software = "rdmavideo " RDMAVIDEO_VERSION;
  return hello;
}

// The receiver's answer to our Hello: a HelloAck that takes our frames, or why not.
Result<void> check_hello_reply(const proto::Message& reply, uint64_t max_frame_bytes) {
  if (const auto* error = std::get_if<proto::ErrorMessage>(&reply)) {
    return Unexpected(
        Error(error->code, fmt::format("receiver refused: {}", printable(error->text))));
  }
  const auto* ack = std::get_if<proto::HelloAck>(&reply);
  if (!ack) {
    return make_error(ErrorCode::protocol, "expected HelloAck, got {}",
                      proto::to_string(proto::type_of(reply)));
  }
  if (ack->max_frame_bytes < max_frame_bytes) {
    return make_error(ErrorCode::unsupported,
                      "receiver accepts frames up to {} bytes (HelloAck.max_frame_bytes); this "
                      "stream's are {} bytes",
                      ack->max_frame_bytes, max_frame_bytes);
  }
  return {};
}

// Whether fail() tells the receiver why before closing: when it broke the protocol or did
// not authenticate (a dead or silent receiver is told nothing).
bool tell_receiver(const Error& error) {
  return error.code() == ErrorCode::protocol || error.code() == ErrorCode::auth_failed;
}

ChannelFactory& channel_factory() {
  static ChannelFactory factory;
  return factory;
}

}  // namespace

void replace_channel_factory(ChannelFactory factory) { channel_factory() = std::move(factory); }

Result<std::unique_ptr<SenderCore>> SenderCore::connect(TransportKind kind,
                                                        const ConnectOptions& options) {
  auto attempt = [&](TransportKind k) -> Result<std::unique_ptr<SenderCore>> {
    auto channel = channel_factory() ? channel_factory()(k, options) : connect_channel(k, options);
    if (!channel) return Unexpected(channel.error());
    auto core = std::make_unique<SenderCore>(std::move(*channel), options);
    if (auto ok = core->handshake(); !ok) return Unexpected(ok.error());
    return core;
  };
  if (kind != TransportKind::automatic || channel_factory()) return attempt(kind);
  // Verbs when an RDMA device reaches the receiver and it takes verbs; else TCP.
  if (!why_not_verbs()) {
    auto core = attempt(TransportKind::verbs);
    if (core) return core;
    log().warn("transport auto: verbs did not connect ({}); falling back to tcp",
               core.error().message());
  }
  return attempt(TransportKind::tcp);
}

SenderCore::SenderCore(std::unique_ptr<SenderChannel> channel, const ConnectOptions& options)
    : channel_(std::move(channel)),
      timeouts_(options.timeouts),
      who_(fmt::format("send {}", channel_->peer())),
      key_(options.key),
      max_frame_bytes_(options.max_frame_bytes),
      credits_requested_(options.credits_requested),
      max_version_(std::clamp(options.max_version, proto::kMinVersion, proto::kVersion)),
      stop_(options.stop) {}

SenderCore::~SenderCore() {
  // The channel first: once it is closed nothing reads the frames' memory, and their holds
  // can go.
  channel_->close(nullptr, milliseconds(0));
  in_flight_.clear();
}

Result<void> SenderCore::send(const proto::Message& message) {
  auto ok = channel_->send(message);
  if (!ok) return Unexpected(closed_by_receiver(ok.error()));
  last_sent_ = Clock::now();
  return ok;
}

Result<void> SenderCore::handshake() {
  hello_ = make_hello(max_frame_bytes_, credits_requested_, key_ != nullptr, max_version_);
  if (auto ok = send(hello_); !ok) return fail(ok.error());
  const auto deadline = Clock::now() + timeouts_.connect;
  while (step_ != Step::done) {
    // Whoever started the connect stopped it (OBS's Stop): given up at once, not at the
    // deadline, so a connect to a receiver that never answers holds no thread on.
    if (stop_ && stop_->load()) {
      return fail(Error(ErrorCode::system, "connect stopped before the handshake ended", EINTR));
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(
          Error(ErrorCode::timeout,
                fmt::format("no {} within {} ms", step_ == Step::hello_sent ? "HelloAck" : "Auth",
                            timeouts_.connect.count())));
    }
    // A receiver that refuses says why and closes: its answer counts, not the close.
    auto ok = pump(std::min(left, milliseconds(100)));
    if (handshake_error_) return fail(*handshake_error_);
    if (!ok) return fail(ok.error());
  }
  handshaken_ = true;
  return {};
}

Result<void> SenderCore::handshake_step(const proto::Message& message) {
  auto failed = [&](Error error) -> Result<void> {
    if (!handshake_error_) handshake_error_ = error;
    return Unexpected(std::move(error));
  };
  if (const auto* error = std::get_if<proto::ErrorMessage>(&message)) {
    return failed(Error(error->code, fmt::format("receiver refused: {}", printable(error->text))));
  }
  auto not_auth = [&] {
    return Error(ErrorCode::protocol,
                 fmt::format("expected Auth, got {}", proto::to_string(proto::type_of(message))));
  };
  switch (step_) {
    case Step::hello_sent: {
      if (auto ok = check_hello_reply(message, max_frame_bytes_); !ok) return failed(ok.error());
      ack_ = std::get<proto::HelloAck>(message);
      if (ack_.version < hello_.min_version || ack_.version > hello_.max_version) {
        return failed(
            Error(ErrorCode::protocol,
                  fmt::format("HelloAck.version {} is not one this sender offered ({}..{})",
                              ack_.version, hello_.min_version, hello_.max_version)));
      }
      // Every message after HelloAck (Auth included) goes with the version chosen.
      channel_->negotiated(ack_.version);
      const bool receiver_proves = ack_.flags & proto::kCapAuth;
      if (key_ && !receiver_proves) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver holds no key, and this sender "
                            "sends only to a receiver that proves the shared key"));
      }
      if (!key_ && receiver_proves) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver requires a shared key; give "
                            "this sender the shared key"));
      }
      step_ = key_ ? Step::challenge_awaited : Step::done;
      return {};
    }
    case Step::challenge_awaited: {
      const auto* challenge = std::get_if<proto::Auth>(&message);
      if (!challenge) return failed(not_auth());
      auto nonce = auth::make_nonce();
      if (!nonce) return failed(nonce.error());
      nonce_ = *nonce;
      receiver_nonce_ = challenge->nonce;
      auto proven = auth::prove(*key_, auth::Role::sender, nonce_, receiver_nonce_, hello_, ack_);
      if (!proven) return failed(proven.error());
      if (auto ok = send(proto::Auth{nonce_, *proven}); !ok) return failed(ok.error());
      step_ = Step::proof_awaited;
      return {};
    }
    case Step::proof_awaited: {
      const auto* proof = std::get_if<proto::Auth>(&message);
      if (!proof) return failed(not_auth());
      // The receiver proves the key too, so nothing is sent to an impostor.
      const auto proven = auth::verify(*key_, auth::Role::receiver, nonce_, receiver_nonce_, hello_,
                                       ack_, proof->proof);
      if (!proven) return failed(proven.error());
      if (proof->nonce != receiver_nonce_ || !*proven) {
        return failed(Error(ErrorCode::auth_failed,
                            "authentication failed: the receiver did not prove the shared key"));
      }
      // Messages after this one are sealed.
      channel_->protect(
          std::make_shared<auth::ControlMac>(*key_, auth::Role::sender, nonce_, receiver_nonce_));
      step_ = Step::done;
      return {};
    }
    case Step::done: break;
  }
  return {};
}

Result<void> SenderCore::handle(const proto::Message& message) {
  if (step_ != Step::done) return handshake_step(message);
  switch (proto::type_of(message)) {
    case proto::MessageType::RingInfo: {
      const auto& m = std::get<proto::RingInfo>(message);
      if (m.ring_epoch != ring_epoch_) {
        return make_error(ErrorCode::protocol,
                          "RingInfo.ring_epoch {} does not answer StreamStart.ring_epoch {}",
                          m.ring_epoch, ring_epoch_);
      }
      if (m.stream_id != kStreamId) {
        return make_error(ErrorCode::protocol,
                          "RingInfo.stream_id {} is not this sender's stream {}", m.stream_id,
                          kStreamId);
      }
      ring_ = m;
      pool_.emplace(m.slot_count);
      return {};
    }
    case proto::MessageType::CreditReturn: {
      const auto& m = std::get<proto::CreditReturn>(message);
      if (!ring_ || m.ring_epoch != ring_->ring_epoch) return {};  // an older ring's credits
      return pool_->add(m.slots);
    }
    case proto::MessageType::Keepalive: return {};
    case proto::MessageType::EndOfStream: receiver_ended_ = true; return {};
    case proto::MessageType::Error: {
      const auto& m = std::get<proto::ErrorMessage>(message);
      return Unexpected(Error(m.code == ErrorCode::peer_closed ? ErrorCode::protocol : m.code,
                              fmt::format("receiver reported: {}", printable(m.text))));
    }
    default:
      return make_error(ErrorCode::protocol, "unexpected {} from a receiver",
                        proto::to_string(proto::type_of(message)));
  }
}

Result<void> SenderCore::pump(milliseconds wait) {
  // Also before the first StreamStart: a GStreamer sink connects long before its caps.
  if (handshaken_ && Clock::now() - last_sent_ >= timeouts_.keepalive) {
    if (auto ok = send(proto::Keepalive{stats::realtime_ns()}); !ok) return ok;
  }
  // Whatever has arrived, then (if nothing had) whatever arrives within `wait`.
  bool got_any = false;
  for (;;) {
    auto message =
        channel_->receive(got_any ? milliseconds(0) : std::min(wait, timeouts_.keepalive));
    if (!message) {
      // The receiver closed: after EndOfStream it may; otherwise it is the connection's end.
      if (message.error().code() == ErrorCode::peer_closed && receiver_ended_) break;
      return Unexpected(message.error());
    }
    if (!*message) break;
    got_any = true;
    last_heard_ = Clock::now();
    if (auto ok = handle(**message); !ok) return ok;
  }
  if (Clock::now() - last_heard_ >= timeouts_.peer) {
    return make_error(ErrorCode::timeout, "receiver silent for {} ms", timeouts_.peer.count());
  }
  return {};
}

Error SenderCore::closed_by_receiver(const Error& error) {
  if (error.code() != ErrorCode::peer_closed || reading_last_words_) return error;
  reading_last_words_ = true;
  for (;;) {
    auto message = channel_->receive(milliseconds(0));
    if (!message || !*message) break;
    if (auto ok = handle(**message); !ok) return ok.error();
  }
  reading_last_words_ = false;
  return error;
}

Unexpected SenderCore::fail(const Error& error) {
  if (!closed_) {
    closed_ = true;
    // The receiver broke the protocol or failed to authenticate: tell it why before closing
    // (best effort).
    const proto::Message why = proto::ErrorMessage{error.code(), error.message()};
    channel_->close(tell_receiver(error) ? &why : nullptr, milliseconds(0));
  }
  return Unexpected(error.context(who_));
}

Result<void> SenderCore::start_audio(const proto::AudioStart& format) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (!carries_audio()) {
    return make_error(ErrorCode::unsupported,
                      "{}: the receiver speaks protocol version {}, without audio", who_,
                      version());
  }
  if (format.stream_id == kStreamId) {
    return make_error(ErrorCode::invalid_argument, "audio stream id {} is the video's",
                      format.stream_id);
  }
  if (auto ok = send(format); !ok) return fail(ok.error());
  return {};
}

Result<void> SenderCore::send_audio(const proto::AudioStart& format, int64_t pts_ns,
                                    uint32_t samples, std::span<const std::byte> data) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  const uint32_t sample_bytes = proto::bytes_per_sample(format.sample_format);
  const uint64_t frame_bytes =
      uint64_t{sample_bytes} * format.channels;  // one sample of every channel
  if (samples == 0 || data.size() != frame_bytes * samples) {
    return make_error(ErrorCode::invalid_argument,
                      "{} samples of {} channels of {} are {} bytes, not {}", samples,
                      format.channels, proto::to_string(format.sample_format),
                      frame_bytes * samples, data.size());
  }
  // Each chunk fits one control message with its tag (sealed or not, the room is kept).
  const size_t room = channel_->max_control_bytes() - proto::kHeaderBytes -
                      proto::kAudioChunkFixedBytes - auth::ControlMac::kTagBytes;
  const auto per_chunk = static_cast<uint32_t>(std::max<uint64_t>(1, room / frame_bytes));
  const bool is_planar = proto::planar(format.sample_format);
  for (uint32_t first = 0; first < samples; first += per_chunk) {
    const uint32_t n = std::min(per_chunk, samples - first);
    proto::AudioChunk chunk;
    chunk.stream_id = format.stream_id;
    chunk.samples = n;
    // The chunk's first sample, on the same clock: rounded to the ns.
    chunk.pts_ns =
        pts_ns + static_cast<int64_t>((uint64_t{first} * 1'000'000'000 + format.sample_rate / 2) /
                                      format.sample_rate);
    if (is_planar) {
      chunk.data.reserve(size_t{n} * frame_bytes);
      for (uint32_t c = 0; c < format.channels; ++c) {
        const auto plane =
            data.subspan(size_t{c} * samples * sample_bytes + size_t{first} * sample_bytes,
                         size_t{n} * sample_bytes);
        chunk.data.insert(chunk.data.end(), plane.begin(), plane.end());
      }
    } else {
      const auto part = data.subspan(size_t{first} * frame_bytes, size_t{n} * frame_bytes);
      chunk.data.assign(part.begin(), part.end());
    }
    if (auto ok = send(chunk); !ok) return fail(ok.error());
  }
  return {};
}

Result<void> SenderCore::end_audio(uint32_t stream_id) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (auto ok = send(proto::AudioEnd{stream_id}); !ok) return fail(ok.error());
  return {};
}

Result<proto::RingInfo> SenderCore::start_stream(const proto::StreamStart& format) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  proto::StreamStart m = format;
  m.stream_id = kStreamId;
  m.ring_epoch = ++ring_epoch_;
  // The flash is version 3's flag: a version 2 receiver would refuse it.
  if (version() < proto::kAudioVersion) m.flags &= ~proto::kStreamFlash;
  if (!m.name.empty()) who_ = fmt::format("send {} \"{}\"", peer(), printable(m.name));
  ring_.reset();
  pool_.reset();
  if (auto ok = send(m); !ok) return fail(ok.error());
  // Wait for the RingInfo that answers this StreamStart and its first credits (so a live
  // sender does not drop its first frame); credits of an older ring that cross it on the
  // wire are dropped by handle().
  const auto deadline = Clock::now() + timeouts_.connect;
  while (!ring_ || pool_->available() == 0) {
    if (receiver_ended_)
      return make_error(ErrorCode::peer_closed, "{}: receiver ended the stream", who_);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(Error(ErrorCode::timeout, fmt::format("no {} within {} ms of StreamStart",
                                                        ring_ ? "CreditReturn" : "RingInfo",
                                                        timeouts_.connect.count())));
    }
    if (auto ok = pump(std::min(left, milliseconds(100))); !ok) return fail(ok.error());
  }
  if (ring_->slot_bytes < m.layout.frame_bytes) {
    return fail(Error(ErrorCode::protocol,
                      fmt::format("RingInfo.slot_bytes {} smaller than a frame ({} bytes)",
                                  ring_->slot_bytes, m.layout.frame_bytes)));
  }
  if (channel_->needs_ring_address() && ring_->rkey == 0 && ring_->base_addr == 0) {
    return fail(Error(ErrorCode::protocol,
                      fmt::format("RingInfo has no base_addr and rkey for {}", to_string(kind()))));
  }
  frame_bytes_ = m.layout.frame_bytes;
  return *ring_;
}

Result<std::optional<Credit>> SenderCore::acquire(milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    if (!pool_)
      return make_error(ErrorCode::invalid_argument, "{}: acquire before start_stream", who_);
    if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
    if (receiver_ended_) return std::optional<Credit>{};
    if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (wait.count() > 0 && left.count() <= 0) return std::optional<Credit>{};
    const auto slice = wait.count() > 0 ? std::min(left, timeouts_.keepalive) : milliseconds(0);
    if (auto ok = pump(slice); !ok) return fail(ok.error());
    if (wait.count() == 0) {
      if (auto slot = pool_->take()) return Credit{ring_->ring_epoch, *slot};
      return std::optional<Credit>{};
    }
  }
}

Result<void> SenderCore::send_frame(Credit credit, std::span<const std::byte> frame,
                                    const proto::FrameWritten& info,
                                    std::shared_ptr<const void> hold) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (!ring_ || credit.ring_epoch != ring_->ring_epoch) {
    return make_error(ErrorCode::invalid_argument, "{}: credit for ring {} is not the current ring",
                      who_, credit.ring_epoch);
  }
  if (frame.size() != frame_bytes_) {
    return make_error(ErrorCode::invalid_argument, "{}: frame of {} bytes, stream needs {}", who_,
                      frame.size(), frame_bytes_);
  }
  if (!channel_->registered(frame)) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: frame at {} is in memory not registered for {}", who_,
                      static_cast<const void*>(frame.data()), to_string(kind()));
  }
  proto::FrameWritten m = info;
  m.ring_epoch = credit.ring_epoch;
  m.slot = credit.slot;
  m.bytes = static_cast<uint32_t>(frame.size());
  const RemoteSlot slot{ring_->base_addr + uint64_t{credit.slot} * ring_->slot_stride, ring_->rkey};
  auto ticket = channel_->send_frame(frame, m, slot);
  if (!ticket) return fail(closed_by_receiver(ticket.error()));
  last_sent_ = Clock::now();
  // Not waiting here: over verbs the next frame's WRITE goes out while this one completes,
  // so the wire never idles for a round trip. The hold goes once the frame is done, at the
  // next retire() at the earliest (never inside this call: the caller may still be making
  // the hold ready).
  in_flight_.push_back({*ticket, info.sequence, std::move(hold), last_sent_});
  return {};
}

void SenderCore::retire() {
  while (!in_flight_.empty() && channel_->done(in_flight_.front().ticket)) in_flight_.pop_front();
}

Result<void> SenderCore::retire_oldest() {
  retire();
  if (in_flight_.empty()) return {};
  const uint64_t ticket = in_flight_.front().ticket;
  const auto start = Clock::now();
  while (!channel_->done(ticket)) {
    if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
    if (Clock::now() - start >= timeouts_.peer) return fail_oldest_frame();
    // Completions come with whatever else the transport does: the receiver's messages too.
    if (auto ok = pump(milliseconds(10)); !ok) return fail(ok.error());
  }
  retire();
  return {};
}

Result<void> SenderCore::progress(milliseconds wait) {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (auto ok = pump(wait); !ok) return fail(ok.error());
  retire();
  if (!in_flight_.empty() && Clock::now() - in_flight_.front().sent >= timeouts_.peer) {
    return fail_oldest_frame();
  }
  return {};
}

Unexpected SenderCore::fail_oldest_frame() {
  return fail(
      Error(ErrorCode::timeout, fmt::format("frame {} not complete after {} ms",
                                            in_flight_.front().sequence, timeouts_.peer.count())));
}

Result<void> SenderCore::retire_all() {
  while (!in_flight_.empty()) {
    if (auto ok = retire_oldest(); !ok) return ok;
  }
  return {};
}

Result<void> SenderCore::keep_alive() {
  if (closed_) return make_error(ErrorCode::peer_closed, "{}: connection closed", who_);
  if (auto ok = pump(milliseconds(0)); !ok) return fail(ok.error());
  retire();
  return {};
}

Result<void> SenderCore::end_stream(const proto::EndOfStream& end) {
  if (closed_) return {};
  auto ok = retire_all();  // every frame out, its memory free
  if (closed_) return ok;
  if (ok) {
    ok = send(end);
    // The receiver ended the stream itself (its frame limit) and may have closed already:
    // our EndOfStream is then only courtesy.
    if (!ok && receiver_ended_ && ok.error().code() == ErrorCode::peer_closed) ok = {};
  }
  closed_ = true;
  // Closing waits for the receiver to close first: it has then taken every frame.
  channel_->close(nullptr, ok ? timeouts_.peer : milliseconds(0));
  if (!ok) return Unexpected(ok.error().context(who_));
  return {};
}

}  // namespace rdmavideo::sender
