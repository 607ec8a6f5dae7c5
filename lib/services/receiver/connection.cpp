// SPDX-License-Identifier: Apache-2.0
#include "receiver/connection.hpp"

#include "receiver/connection_credits.hpp"

#include "proto/checks.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::receiver {

using std::chrono::milliseconds;

// How often the connection thread looks up from a wait: for a stop, a sink's failure, credits
// to send and keepalives to write.
constexpr milliseconds kTick(200);
// A frame's payload must arrive within the peer timeout plus its size at this rate: time
// limits that restarted with every byte let a peer hold a connection with a byte now and
// then; a deadline per payload does not, and still gives a slow link time for a 4K frame.
constexpr uint64_t kSlowestPayloadBytesPerSecond = 1'000'000;

Clock::time_point payload_deadline(uint32_t bytes, milliseconds peer_timeout) {
  return Clock::now() + peer_timeout +
         milliseconds(uint64_t{bytes} * 1000 / kSlowestPayloadBytesPerSecond);
}

// A ring's memory and how the peer reaches it. The registration goes before the memory.
struct ReceiverConnection::Ring {
  std::shared_ptr<const void> reservation;          // of the budget, given back after the memory
  std::shared_ptr<const void> staging_reservation;  // a direct rung that fell back to staged
  std::shared_ptr<memory::Region> memory;
  // --memory cuda, staged: the GPU ring each frame is uploaded into, slot for slot, and the
  // host ring's page-locking for the GPU (let go before the host ring: declared after it).
  std::shared_ptr<memory::Region> gpu;
  std::shared_ptr<const void> pinned_for_gpu;
  RingAccess access;
  std::shared_ptr<const proto::StreamStart> format;
  uint64_t stride = 0;  // bytes between slot starts
};

ReceiverConnection::ReceiverConnection(std::unique_ptr<ReceiverChannel> channel,
                                       ConnectionConfig config, ConnectionHost& host)
    : channel_(std::move(channel)),
      config_(std::move(config)),
      host_(host),
      peer_(channel_->peer()),
      who_(fmt::format("recv {}", peer_)),
      credits_(std::make_shared<ConnectionCredits>(*channel_,
                                                   [this](const proto::CreditReturn& credits) {
                                                     if (auto ok = send(credits); !ok) {
                                                       log().debug("[{}] CreditReturn not sent: {}",
                                                                   who_, ok.error().message());
                                                     }
                                                   })),
      last_sent_(Clock::now()),
      last_heard_(Clock::now()) {}

ReceiverConnection::~ReceiverConnection() {
  if (!closed_) {
    credits_->detach();
    channel_->close(nullptr);
  }
}

void ReceiverConnection::stop() {
  stopping_ = true;
  channel_->interrupt();
}

void ReceiverConnection::shed() {
  stopping_ = true;
  channel_->abandon();
}

Result<void> ReceiverConnection::send(const proto::Message& message) {
  std::lock_guard lock(send_mu_);
  auto ok = channel_->send(message);
  if (ok) last_sent_ = Clock::now();
  return ok;
}

Result<void> ReceiverConnection::flush_credits() {
  if (auto credits = credits_->due()) return send(*credits);
  return {};
}

void ReceiverConnection::keepalive_if_quiet() {
  {
    std::lock_guard lock(send_mu_);
    if (closed_ || Clock::now() - last_sent_ < config_.timeouts.keepalive) return;
  }
  // A failure shows on the next read; nothing to do about it here.
  (void)send(proto::Keepalive{stats::realtime_ns()});
}

Error ReceiverConnection::fail(const Error& error, bool tell_peer) {
  Error out = error.context(who_);
  if (closed_) return out;
  closed_ = true;
  const auto last = proto::closing_message(error, tell_peer);
  credits_->detach();
  channel_->close(last ? &*last : nullptr);
  if (last) out = Error(out.code(), out.message() + "; closing", out.sys_errno());
  return out;
}

Result<proto::Message> ReceiverConnection::handshake_message(Clock::time_point deadline,
                                                             std::string_view what) {
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return make_error(ErrorCode::timeout, "no {} within {} ms", what,
                        config_.timeouts.connect.count());
    }
    if (stopping_) return make_error(ErrorCode::peer_closed, "stopped before {}", what);
    // The handshake as a whole has the deadline, not each read of it.
    auto message = channel_->receive(std::min(left, kTick), deadline);
    if (!message) return Unexpected(message.error());
    if (*message) return std::move(**message);
  }
}

Result<void> ReceiverConnection::handshake(Clock::time_point deadline) {
  if (auto ok = channel_->establish(deadline); !ok) return Unexpected(ok.error());
  peer_ = channel_->peer();
  who_ = fmt::format("recv {}", peer_);
  auto message = handshake_message(deadline, "Hello");
  if (!message) return Unexpected(message.error());
  const auto* hello = std::get_if<proto::Hello>(&*message);
  if (!hello) {
    return make_error(ErrorCode::protocol, "expected Hello, got {}",
                      proto::to_string(proto::type_of(*message)));
  }
  // With a key, HelloAck goes out before the peer has proved anything, so it says nothing of
  // this receiver: its limits are the protocol's own (docs/protocol.md §3.6), and the real
  // ones are told after the proof, in RingInfo and in the refusal of a StreamStart beyond them.
  auto ack = config_.key ? proto::answer_hello(*hello, proto::kMaxFrameBytes, proto::kMaxRingSlots,
                                               config_.max_version)
                         : proto::answer_hello(*hello, config_.max_frame_bytes, config_.ring_size,
                                               config_.max_version);
  if (!ack) return Unexpected(ack.error());
  version_ = ack->version;
  channel_->negotiated(version_);
  log().debug("[{}] Hello from \"{}\", version {}", who_, printable(hello->software), ack->version);
  if (!config_.key) {
    passed_handshake();
    return send(*ack);  // a sender that requires a key refuses us
  }
  // The peer proves the shared key before this end says anything more. Nothing about a
  // ring (no RingInfo, no address or rkey) has left the receiver yet, and nothing was
  // allocated for the peer beyond what the transport needs to talk to it.
  if (!(hello->flags & proto::kCapAuth)) {
    return make_error(ErrorCode::auth_failed,
                      "authentication failed: this receiver requires a shared key and the "
                      "sender offered none (give it the shared key)");
  }
  ack->flags |= proto::kCapAuth;
  if (auto ok = send(*ack); !ok) return ok;
  return authenticate(*hello, *ack, deadline);
}

// Before the handshake's last message leaves: the peer may act on it at once (a paused sink
// returns from its start), and from then on it is a connection that passed, never one a flood
// of anonymous peers sheds as the oldest in its handshake.
void ReceiverConnection::passed_handshake() {
  stage_ = Stage::pending;
  host_.passed_handshake(*this);
}

Result<void> ReceiverConnection::authenticate(const proto::Hello& hello, const proto::HelloAck& ack,
                                              Clock::time_point deadline) {
  const auth::SharedKey& key = *config_.key;
  auto nonce = auth::make_nonce();
  if (!nonce) return Unexpected(nonce.error());
  if (auto ok = send(proto::Auth{*nonce, {}}); !ok) return ok;
  auto message = handshake_message(deadline, "Auth");
  if (!message) return Unexpected(message.error());
  if (const auto* error = std::get_if<proto::ErrorMessage>(&*message)) {
    // The sender refused us; it is gone, nothing to tell it.
    return Unexpected(
        Error(ErrorCode::peer_closed, fmt::format("sender reported: {}", printable(error->text))));
  }
  const auto* proof = std::get_if<proto::Auth>(&*message);
  if (!proof) {
    return make_error(ErrorCode::protocol, "expected Auth, got {}",
                      proto::to_string(proto::type_of(*message)));
  }
  // Which byte was wrong is never said, here or to the peer.
  const auto proven =
      auth::verify(key, auth::Role::sender, proof->nonce, *nonce, hello, ack, proof->proof);
  if (!proven) return Unexpected(proven.error());
  if (proof->nonce == *nonce || !*proven) {
    return make_error(ErrorCode::auth_failed, "authentication failed");
  }
  const auto answer = auth::prove(key, auth::Role::receiver, proof->nonce, *nonce, hello, ack);
  if (!answer) return Unexpected(answer.error());
  passed_handshake();
  if (auto ok = send(proto::Auth{*nonce, *answer}); !ok) return ok;
  channel_->protect(
      std::make_shared<auth::ControlMac>(key, auth::Role::receiver, proof->nonce, *nonce));
  log().debug("[{}] authenticated", who_);
  return {};
}

Result<void> ReceiverConnection::start_stream(const proto::StreamStart& m) {
  const std::optional<proto::StreamStart> current =
      ring_ ? std::optional<proto::StreamStart>(*ring_->format) : std::nullopt;
  if (auto ok = proto::check_stream_start(m, current, last_epoch_, config_.max_frame_bytes); !ok) {
    return ok;
  }
  // What the sinks can take, before anything is reserved for a format they would refuse.
  if (config_.format_check) {
    if (auto ok = config_.format_check(m); !ok) return ok;
  }
  last_epoch_ = m.ring_epoch;
  auto format = std::make_shared<const proto::StreamStart>(m);
  const bool gpu = config_.memory.kind == memory::MemoryKind::cuda;
  const uint64_t stride =
      memory::round_up(m.layout.frame_bytes, gpu ? memory::kGpuPageBytes : memory::kPageBytes);
  const uint64_t ring_bytes = stride * config_.ring_size;
  // GPU memory: the ladder's rung, from what the channel and the device say.
  std::optional<gpu::PathDecision> decision;
  std::shared_ptr<cuda::Device> device;
  if (gpu) {
    auto opened = cuda::Device::shared(config_.memory.device);
    if (!opened) return Unexpected(opened.error());
    device = *opened;
    // The sinks read the ring through CUDA: a direct rung needs the NIC's writes visible.
    gpu::PathFacts facts = channel_->gpu_facts();
    facts.gpu_reads_rdma_writes = true;
    auto chosen = gpu::choose_path(config_.gpu_path, std::move(facts), *device);
    if (!chosen) return Unexpected(chosen.error());
    decision = std::move(*chosen);
  }
  bool staged = gpu && decision->path == gpu::Path::staged;
  // A format change lets the old ring go before the new one is reserved and mapped: it is
  // freed now unless the sink still holds frames of it, and counted until then.
  ring_.reset();
  auto ring = std::make_shared<Ring>();
  if (config_.budget) {
    // A staged GPU ring counts twice: itself, and the host ring it is staged through.
    auto reservation = config_.budget->reserve(
        staged ? 2 * ring_bytes : ring_bytes,
        fmt::format("StreamStart {}x{} {}: a ring of {} slots of {}{}", m.width, m.height,
                    name(m.pixel_format), config_.ring_size, memory::format_bytes(stride),
                    staged
                        ? fmt::format(" in {} and its host staging ring", to_string(config_.memory))
                    : gpu ? fmt::format(" in {}", to_string(config_.memory))
                          : ""));
    if (!reservation) return Unexpected(reservation.error());
    ring->reservation = std::move(*reservation);
  }
  // Admitted only once its ring fits the budget: a refused StreamStart is no stream.
  if (!sink_) {
    // The first StreamStart: now the peer is a stream, if the service takes one more.
    StreamInfo info{0, m.name, peer_, channel_->kind(), format, config_.budget};
    auto admitted = host_.admit(std::move(info));
    if (!admitted) return Unexpected(admitted.error());
    sink_ = admitted->sink;
    record_ = admitted->record;
    stage_ = Stage::stream;
    credits_->publish_to(record_->slots_filled);
    last_frame_ = Clock::now();
    cpu_start_ = stats::thread_cpu_seconds();
    // A peer's text is escaped wherever it is printed (rdmavideo/text.hpp).
    if (!m.name.empty()) who_ = fmt::format("recv {} \"{}\"", peer_, printable(m.name));
  }
  std::shared_ptr<memory::Region> gpu_ring;
  if (gpu) {
    auto allocated = memory::Region::allocate(config_.memory, ring_bytes);
    if (!allocated) return Unexpected(allocated.error());
    gpu_ring = std::move(*allocated);
  }
  if (gpu && !staged) {
    // Direct: the peer writes the GPU ring itself.
    auto access = channel_->expose_gpu_ring(gpu_ring, decision->path);
    if (access) {
      ring->memory = gpu_ring;
      ring->access = std::move(*access);
    } else {
      if (auto fell_back = decision->fall_back(config_.gpu_path, access.error()); !fell_back)
        return fell_back;
      staged = true;
      if (config_.budget) {
        auto more = config_.budget->reserve(ring_bytes, "the host staging ring of a GPU ring");
        if (!more) return Unexpected(more.error());
        ring->staging_reservation = std::move(*more);
      }
    }
  }
  if (!gpu || staged) {
    auto region = memory::Region::allocate(memory::MemoryKind::host, ring_bytes);
    if (!region) return Unexpected(region.error());
    ring->memory = std::move(*region);
    if (staged) {
      ring->gpu = gpu_ring;
      // Uploads from page-locked memory are DMA at full rate; from pageable memory the driver
      // copies through a bounce buffer of its own, on this thread's time.
      auto pinned = device->pin(ring->memory->bytes());
      if (!pinned) return Unexpected(pinned.error());
      ring->pinned_for_gpu = std::move(*pinned);
    }
    auto access = channel_->expose_ring(ring->memory);
    if (!access) return Unexpected(access.error());
    ring->access = std::move(*access);
  }
  ring->format = format;
  ring->stride = stride;
  ring_ = std::move(ring);
  {
    std::lock_guard lock(record_->mu);
    record_->report.format = m;
    record_->report.ring_slots = config_.ring_size;
    record_->report.memory = memory::to_string(config_.memory);
    record_->report.version = version_;
    if (decision) {
      record_->report.gpu_path = decision->summary();
      const cuda::DeviceFacts& f = device->facts();
      record_->report.gpu_rdma_writes =
          stats::GpuRdmaWrites{f.rdma_writes_ordering, cuda::needs_rdma_flush(f),
                               cuda::can_flush_rdma_writes(f, device->driver())};
    }
  }
  log().info("[{}] stream {} ring {}: {}x{} {} at {} fps, {} bytes a frame, {} slots{}{}", who_,
             m.stream_id, m.ring_epoch, m.width, m.height, name(m.pixel_format),
             to_string(m.frame_rate), m.layout.frame_bytes, config_.ring_size,
             m.flags & proto::kStreamLive ? ", live" : "",
             gpu ? fmt::format(", into {}: {}", device->describe(), decision->summary()) : "");
  // RingInfo, then every slot as the first credits, so a live sender has credits for its
  // first frame the moment it learns the ring.
  const proto::RingInfo info{.stream_id = m.stream_id,
                             .ring_epoch = m.ring_epoch,
                             .slot_count = config_.ring_size,
                             .slot_bytes = m.layout.frame_bytes,
                             .slot_stride = stride,
                             .base_addr = ring_->access.base_addr,
                             .rkey = ring_->access.rkey};
  if (auto ok = send(info); !ok) return ok;
  return send(credits_->start_ring(m.ring_epoch, config_.ring_size));
}

Result<void> ReceiverConnection::frame_written(const proto::FrameWritten& m) {
  const std::optional<proto::StreamStart> current =
      ring_ ? std::optional<proto::StreamStart>(*ring_->format) : std::nullopt;
  if (auto ok = proto::check_frame_written(m, current, config_.ring_size); !ok) return ok;
  if (auto ok = credits_->frame_arrived(m.slot); !ok) return ok;
  std::span<std::byte> slot = ring_->memory->bytes().subspan(m.slot * ring_->stride, m.bytes);
  if (auto ok = channel_->receive_payload(slot, payload_deadline(m.bytes, config_.timeouts.peer),
                                          [this] { keepalive_if_quiet(); });
      !ok) {
    return ok;
  }
  std::shared_ptr<memory::Region> gpu_ring = ring_->gpu;
  if (gpu_ring) {
    // Staged: into the same slot of the GPU ring; the lease is of that.
    if (auto ok = memory::write(*gpu_ring, m.slot * ring_->stride, slot); !ok) return ok;
    slot = gpu_ring->bytes().subspan(m.slot * ring_->stride, m.bytes);
  } else if (ring_->memory->kind() == memory::MemoryKind::cuda) {
    // Written straight into the GPU: visible to its kernels only after a flush on GPUs that
    // do not order RDMA writes (a no-op where they do).
    if (auto ok = ring_->memory->cuda_device()->flush_rdma_writes(); !ok) return ok;
    gpu_ring = ring_->memory;
  }
  // The sender's clock as the write began: a latency where the two clocks agree (one machine,
  // or synchronised ones). A frame without it (0), or sent by that clock over a minute ago,
  // says nothing of the path, and is left out of the latency (it was counted as 56 years).
  constexpr uint64_t kMostLatencyNs = 60'000'000'000;
  const uint64_t now = stats::realtime_ns();
  const uint64_t latency = now > m.sent_ns ? now - m.sent_ns : 0;
  const bool timed = m.sent_ns != 0 && latency <= kMostLatencyNs;
  {
    std::lock_guard lock(record_->mu);
    auto& s = record_->report.stats;
    if (ring_->gpu) ++s.gpu_copies;
    // Rates count from the stream's first frame: a sender that prepares its source after
    // StreamStart (rendering a test pattern into its pool) does not deflate them.
    if (s.frames == 0) s.start = std::chrono::steady_clock::now();
    // The sender's sequence counts the frames it dropped: a gap is drops.
    if (frames_ > 0 && m.sequence > next_sequence_) s.dropped += m.sequence - next_sequence_;
    ++s.frames;
    s.bytes += m.bytes;
    if (timed) s.latency.record_ns(latency);
  }
  ++frames_;
  last_frame_ = Clock::now();
  audio_.video_frame(m.pts_ns, last_frame_);
  next_sequence_ = m.sequence + 1;
  sink_->frame(FrameLease(credits_, ring_, ring_->format,
                          gpu_ring ? gpu_ring->kind() : ring_->memory->kind(), slot, m,
                          timed ? latency : 0, gpu_ring));
  return {};
}

void ReceiverConnection::finish_stream(StreamEnd end) {
  if (!record_) return;
  {
    std::lock_guard lock(record_->mu);
    auto& s = record_->report.stats;
    s.dropped = std::max(s.dropped, end.sender_dropped);  // drops after the last frame
    s.finish();
    record_->report.cpu_seconds = stats::thread_cpu_seconds() - cpu_start_;
  }
  auto record = std::move(record_);
  sink_ = nullptr;
  // The ring goes with the stream (the sink's leases may keep it a while longer), not with
  // this object, which the service reaps later: the budget sees it free when the stream ends.
  ring_.reset();
  audio_.release_queue();  // its reservation goes with the last packet the sink lets go
  host_.release(record, std::move(end));
}

Result<void> ReceiverConnection::run() {
  const auto deadline = Clock::now() + config_.timeouts.connect;
  if (auto ok = handshake(deadline); !ok) {
    if (stopping_) {
      fail(ok.error(), false);
      return {};
    }
    return Unexpected(fail(ok.error()));
  }
  last_heard_ = Clock::now();
  // Ends the stream (if one was admitted) and returns what run() returns.
  auto end_with = [&](StreamEnd end) -> Result<void> {
    if (!record_) {
      if (end.how == StreamEnd::How::failed) return Unexpected(*end.error);
      return {};
    }
    if (end.error) log().error("{}", end.error->message());
    finish_stream(std::move(end));
    return {};
  };
  auto failed = [&](const Error& error, bool tell_peer = true) {
    return end_with({StreamEnd::How::failed, fail(error, tell_peer), 0, 0});
  };
  for (;;) {
    if (stopping_) {
      const proto::Message end = proto::EndOfStream{frames_, 0};
      closed_ = true;
      credits_->detach();
      channel_->close(&end);
      return end_with({StreamEnd::How::stopped, std::nullopt, 0, 0});
    }
    if (sink_) {
      if (auto failure = sink_->failure()) return failed(*failure);
      if (config_.idle_timeout && Clock::now() - last_frame_ >= *config_.idle_timeout) {
        // The receiver's own limit, so the sender is told (a timeout on its side is not).
        const std::string why = fmt::format("no frame for {} ms (the receiver's idle timeout)",
                                            config_.idle_timeout->count());
        (void)send(proto::ErrorMessage{ErrorCode::timeout, why});
        return failed(Error(ErrorCode::timeout, why), false);
      }
    }
    if (auto ok = flush_credits(); !ok) return failed(ok.error());
    // A message that has begun must be whole within the peer timeout (bodies are small).
    auto message = channel_->receive(std::min(kTick, config_.timeouts.keepalive),
                                     Clock::now() + config_.timeouts.peer);
    if (!message) {
      if (stopping_) continue;
      return failed(message.error());
    }
    const auto now = Clock::now();
    if (!*message) {
      if (now - last_heard_ >= config_.timeouts.peer) {
        return failed(Error(ErrorCode::timeout,
                            fmt::format("peer silent for {} ms", config_.timeouts.peer.count())));
      }
      keepalive_if_quiet();
      continue;
    }
    last_heard_ = now;
    const proto::Message& m = **message;
    switch (proto::type_of(m)) {
      case proto::MessageType::StreamStart:
        if (auto ok = start_stream(std::get<proto::StreamStart>(m)); !ok) return failed(ok.error());
        break;
      case proto::MessageType::FrameWritten:
        if (auto ok = frame_written(std::get<proto::FrameWritten>(m)); !ok) {
          if (stopping_) continue;
          return failed(ok.error());
        }
        if (config_.frames_per_stream && frames_ >= *config_.frames_per_stream) {
          const proto::Message end = proto::EndOfStream{frames_, 0};
          closed_ = true;
          credits_->detach();
          channel_->close(&end);
          return end_with({StreamEnd::How::frames_reached, std::nullopt, 0, 0});
        }
        break;
      case proto::MessageType::AudioStart:
        if (auto ok = audio_.start(std::get<proto::AudioStart>(m),
                                   ring_ ? std::optional(*ring_->format) : std::nullopt, version_,
                                   config_.budget, who_, sink_, record_.get());
            !ok) {
          return failed(ok.error());
        }
        break;
      case proto::MessageType::AudioChunk:
        if (auto ok = audio_.chunk(std::get<proto::AudioChunk>(**message), sink_, record_.get());
            !ok)
          return failed(ok.error());
        break;
      case proto::MessageType::AudioEnd:
        if (auto ok = audio_.end(std::get<proto::AudioEnd>(m), sink_, record_.get()); !ok)
          return failed(ok.error());
        break;
      case proto::MessageType::Keepalive: break;
      case proto::MessageType::EndOfStream: {
        const auto& end = std::get<proto::EndOfStream>(m);
        closed_ = true;
        credits_->detach();
        channel_->close(nullptr);
        log().info("[{}] end of stream: sender sent {} frames, dropped {}", who_, end.frames,
                   end.dropped);
        return end_with({StreamEnd::How::sender_ended, std::nullopt, end.frames, end.dropped});
      }
      case proto::MessageType::Error: {
        const auto& error = std::get<proto::ErrorMessage>(m);
        return failed(Error(error.code, fmt::format("sender reported: {}", printable(error.text))),
                      false);
      }
      default:
        return failed(Error(ErrorCode::protocol, fmt::format("unexpected {} from a sender",
                                                             proto::to_string(proto::type_of(m)))));
    }
    keepalive_if_quiet();
  }
}

}  // namespace rdmavideo::receiver
