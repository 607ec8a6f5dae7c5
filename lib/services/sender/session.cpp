// SPDX-License-Identifier: Apache-2.0
// SenderSession: the facade over its parts (the stream its destinations join, the
// destinations and their fan-out, the audio): connecting, stream formats, buffers,
// submitting frames, pacing, the end.
#include "fan_out.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/process.hpp"
#include "session_audio.hpp"
#include "session_stream.hpp"

namespace rdmavideo {

using sender::Clock;
using sender::DestinationState;
using sender::kTick;

struct SenderSession::Impl {
  Impl(SenderSessionOptions o, std::shared_ptr<cuda::Device> gpu)
      : options(std::move(o)),
        stream(std::move(gpu)),
        fan_out(options, stream),
        audio(stream, fan_out) {}

  SenderSessionOptions options;
  sender::SessionStream stream;
  sender::FanOut fan_out;
  sender::SessionAudio audio;

  // The caller's.
  std::shared_ptr<std::atomic<uint32_t>> external_in_flight =
      std::make_shared<std::atomic<uint32_t>>(0);
  std::optional<Clock::time_point> pace_start;
  // An interrupted submit_external(): the frame and where it has gone already.
  const std::byte* interrupted_frame = nullptr;
  uint64_t interrupted_sequence = 0;
  uint64_t interrupted_sent = 0;
};

SenderSession::SenderSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SenderSession::~SenderSession() {
  if (auto ok = end_stream(); !ok) log().debug("[send] {}", ok.error().message());
}

Result<std::unique_ptr<SenderSession>> SenderSession::connect(SenderSessionOptions o) {
  if (o.destinations.empty()) o.destinations.push_back(o.connect.endpoint);
  if (o.destinations.size() > kMaxDestinations) {
    return make_error(ErrorCode::invalid_argument, "{} destinations; a session sends to at most {}",
                      o.destinations.size(), kMaxDestinations);
  }
  std::shared_ptr<cuda::Device> gpu;  // the pool's GPU, for GPU memory
  if (o.memory.kind == memory::MemoryKind::cuda) {
    // Before connecting: a machine without the GPU should not cost a receiver a stream.
    auto device = cuda::Device::shared(o.memory.device);
    if (!device)
      return Unexpected(device.error().context(fmt::format("frames in {}", to_string(o.memory))));
    gpu = *device;
  }
  auto impl = std::make_unique<Impl>(std::move(o), std::move(gpu));
  for (uint32_t i = 0; i < impl->options.destinations.size(); ++i) {
    impl->fan_out.destinations.push_back(std::make_unique<sender::Destination>(
        impl->stream, impl->options, impl->fan_out, i, impl->options.destinations[i]));
  }
  // Live to several receivers, each has its own thread, so that a slow one is never the
  // caller's to wait for.
  impl->fan_out.destinations.front()->direct =
      !impl->options.non_blocking && !impl->fan_out.live_fan_out();
  // Every destination connects on its own thread, at once.
  for (auto& d : impl->fan_out.destinations) {
    sender::Destination* raw = d.get();
    d->thread = std::thread([raw] { raw->run(); });
  }
  // Until each is up, or failed (for good, or for now under --reconnect).
  {
    std::unique_lock lock(impl->stream.mu);
    impl->stream.cv.wait(lock, [&] {
      return std::all_of(
          impl->fan_out.destinations.begin(), impl->fan_out.destinations.end(), [](const auto& d) {
            std::lock_guard r(d->report_mu);
            return d->report.state != DestinationState::connecting || d->report.error.has_value();
          });
    });
  }
  auto fail_all = [&](const Error& error) -> Result<std::unique_ptr<SenderSession>> {
    for (auto& d : impl->fan_out.destinations) {
      {
        std::lock_guard lock(d->mu);
        d->stop = true;
      }
      d->cv.notify_all();
    }
    for (auto& d : impl->fan_out.destinations) d->thread.join();
    return Unexpected(error);
  };
  if (auto f = impl->fan_out.failure_now()) return fail_all(*f);
  size_t up = 0;
  std::optional<Error> first_error;
  for (auto& d : impl->fan_out.destinations) {
    std::lock_guard r(d->report_mu);
    if (d->report.state == DestinationState::streaming) ++up;
    if (d->report.error && !first_error) first_error = d->report.error;
  }
  if (up == 0 && !impl->options.reconnect && first_error) return fail_all(*first_error);
  if (up == 0 && impl->options.reconnect && first_error && !sender::worth_retrying(*first_error)) {
    return fail_all(*first_error);
  }
  impl->fan_out.connected = true;
  return std::unique_ptr<SenderSession>(new SenderSession(std::move(impl)));
}

TransportKind SenderSession::kind() const {
  auto& d = *impl_->fan_out.destinations.front();
  std::lock_guard lock(d.report_mu);
  auto parsed = parse_transport(d.report.transport);
  return parsed ? *parsed : TransportKind::tcp;
}

std::string SenderSession::peer() const {
  std::string out;
  for (const auto& d : impl_->fan_out.destinations) {
    if (!out.empty()) out += ", ";
    std::lock_guard lock(d->mu);
    out += d->peer;
  }
  return out;
}

Result<proto::RingInfo> SenderSession::start_stream(const proto::StreamStart& format,
                                                    uint32_t pool_buffers) {
  auto& s = *impl_;
  if (s.fan_out.ended)
    return make_error(ErrorCode::peer_closed, "send {}: the stream has ended", peer());
  if (pool_buffers == 0) {
    return make_error(ErrorCode::invalid_argument, "send {}: a pool of 0 buffers", peer());
  }
  if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
  // Frames of the old format go out first.
  s.fan_out.drain_queues();
  uint64_t generation;
  {
    std::lock_guard lock(s.stream.mu);
    const size_t frame_bytes = format.layout.frame_bytes;
    if (!s.stream.pool || s.stream.pool->count() != pool_buffers || !s.stream.format ||
        s.stream.format->layout.frame_bytes != format.layout.frame_bytes) {
      const bool gpu = s.options.memory.kind == memory::MemoryKind::cuda;
      const size_t stride =
          memory::round_up(frame_bytes, gpu ? memory::kGpuPageBytes : memory::kPageBytes);
      auto region = memory::Region::allocate(s.options.memory, stride * pool_buffers);
      if (!region) return Unexpected(region.error().context(fmt::format("send {}", peer())));
      // Buffers of the old pool still lent keep their memory; they can no longer be sent.
      s.stream.pool = std::make_shared<detail::BufferPool>(std::move(*region), pool_buffers,
                                                           frame_bytes, stride, s.fan_out.returns);
      s.stream.stager.reset();
      s.fan_out.slot_holds.clear();
    }
    // What the session's policy says is stamped here, for every front end.
    s.stream.format = format;
    s.stream.format->name = proto::fit_name(format.name);
    if (s.options.policy.live) s.stream.format->flags |= proto::kStreamLive;
    if (s.options.policy.checksum) s.stream.format->flags |= proto::kStreamChecksums;
    const auto bound = s.options.policy.max_lateness.value_or(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(
            s.options.policy.max_lateness_periods /
            (format.frame_rate.value() * s.options.policy.readrate))));
    s.stream.lateness = std::chrono::duration_cast<Clock::duration>(bound).count();
    generation = ++s.stream.generation;
  }
  for (auto& d : s.fan_out.destinations) {
    std::lock_guard lock(d->mu);
    d->cv.notify_one();
    if (d->core) d->core->channel().wake();
  }
  s.pace_start.reset();
  // Until every connected destination has its ring (or failed).
  std::unique_lock lock(s.stream.mu);
  s.stream.cv.wait(lock, [&] {
    if (s.fan_out.failure_now()) return true;
    return std::all_of(s.fan_out.destinations.begin(), s.fan_out.destinations.end(),
                       [&](const auto& d) {
                         std::lock_guard inner(d->mu);
                         return !d->core || d->joined == generation;
                       });
  });
  lock.unlock();
  if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
  std::optional<proto::RingInfo> first;
  std::optional<Error> error;
  bool connecting = false;
  for (auto& d : s.fan_out.destinations) {
    {
      std::lock_guard inner(d->mu);
      if (d->up && d->joined == generation && !first) first = d->ring;
    }
    std::lock_guard r(d->report_mu);
    if (d->report.state == DestinationState::connecting) connecting = true;
    if (d->report.error && !error) error = d->report.error;
    if (d->report.state == DestinationState::ended && !error) {
      error = Error(ErrorCode::peer_closed, fmt::format("{}: receiver ended the stream", d->who));
    }
  }
  if (first) return *first;
  if (connecting && s.options.reconnect) {
    // Nobody up yet: the ring comes when a destination connects.
    proto::RingInfo none;
    none.ring_epoch = 0;
    return none;
  }
  return Unexpected(error ? *error : Error(ErrorCode::peer_closed, "no destination is connected"));
}

Result<FrameBuffer> SenderSession::acquire_buffer(std::optional<uint32_t> index) {
  auto& s = *impl_;
  const auto pool = s.stream.current_pool();
  if (!pool) return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
  if (index && *index >= pool->count()) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} out of range (pool of {})",
                      peer(), *index, pool->count());
  }
  uint64_t seen = s.fan_out.returns->count();
  for (;;) {
    if (auto got = pool->lend(index)) {
      return FrameBuffer(pool, *got, pool->buffer(*got), pool->region()->kind());
    }
    if (index && pool->state(*index) == detail::BufferPool::State::lent) {
      return make_error(ErrorCode::invalid_argument, "send {}: buffer {} is already lent", peer(),
                        *index);
    }
    if (pool->all_lent()) {
      return make_error(ErrorCode::invalid_argument, "send {}: all {} buffers are lent out", peer(),
                        pool->count());
    }
    if (s.options.non_blocking) {
      // Every buffer is still with a destination: this frame is dropped, not waited for.
      s.fan_out.start_counting();
      s.fan_out.count_source_drop(stats::DropCause::no_buffer);
      return FrameBuffer();
    }
    if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
    // The one we want (or every one) is still being read by a transfer.
    seen = s.fan_out.wait_for_returns(seen);
  }
}

Result<FrameBuffer> SenderSession::try_acquire_buffer(uint32_t index) {
  auto& s = *impl_;
  const auto pool = s.stream.current_pool();
  if (!pool) return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
  if (index >= pool->count()) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} out of range (pool of {})",
                      peer(), index, pool->count());
  }
  if (auto got = pool->lend(index))
    return FrameBuffer(pool, *got, pool->buffer(*got), pool->region()->kind());
  if (pool->state(index) == detail::BufferPool::State::lent) {
    return make_error(ErrorCode::invalid_argument, "send {}: buffer {} is already lent", peer(),
                      index);
  }
  return FrameBuffer();
}

Result<FrameBuffer> SenderSession::acquire_holding(uint32_t contents, uint32_t kinds) {
  if (kinds == 0 || contents >= kinds) {
    return make_error(ErrorCode::invalid_argument, "send {}: contents {} of {} kinds", peer(),
                      contents, kinds);
  }
  const auto pool = impl_->stream.current_pool();
  if (!pool) return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
  // A copy neither lent nor read by a transfer, else the first copy once it is free.
  for (uint32_t index = contents; index < pool->count(); index += kinds) {
    if (auto got = pool->lend(index))
      return FrameBuffer(pool, *got, pool->buffer(*got), pool->region()->kind());
  }
  return acquire_buffer(contents);
}

Result<SenderSession::Outcome> SenderSession::submit(FrameBuffer& buffer, const FrameMeta& meta) {
  auto& s = *impl_;
  const auto pool = s.stream.current_pool();
  if (!buffer || buffer.pool_ != pool) {
    return make_error(ErrorCode::invalid_argument,
                      "send {}: submit of a buffer that is not from the current stream's pool",
                      peer());
  }
  const uint32_t index = buffer.index_;
  // Sent: the buffer is the pool's again once every destination that has it has let it go.
  auto hold = std::make_shared<FrameHold>(
      s.fan_out.returns, [pool, index] { pool->set(index, detail::BufferPool::State::free); });
  pool->set(index, detail::BufferPool::State::in_flight);
  uint64_t sent = 0;
  const bool in_gpu = buffer.kind() == memory::MemoryKind::cuda;
  auto outcome = s.fan_out.dispatch(buffer.bytes(), meta, hold, in_gpu, buffer.sent_to_, &sent);
  if (outcome && *outcome == Outcome::interrupted) {
    // Stays the caller's; where it went already, it does not go again.
    pool->set(index, detail::BufferPool::State::lent);
    buffer.sent_to_ |= sent;
    return outcome;
  }
  if (outcome && *outcome == Outcome::sent) {
    hold->arm();  // the cores that have it (non-blocking: will have it) return it
    buffer.pool_.reset();
    buffer.bytes_ = {};
    buffer.sent_to_ = 0;
  } else {
    pool->set(index, detail::BufferPool::State::lent);
    buffer.reset();
  }
  return outcome;
}

Result<SenderSession::Outcome> SenderSession::submit_external(
    std::span<const std::byte> frame, const FrameMeta& meta,
    std::shared_ptr<const void> keep_while_sent,
    const std::shared_ptr<const void>& keep_while_registered) {
  auto& s = *impl_;
  // Registered with every destination's connection that needs it (verbs), for its life.
  for (auto& d : s.fan_out.destinations) {
    std::lock_guard cl(d->core_mu);
    if (!d->core || d->core->channel().registered(frame)) continue;
    if (!keep_while_registered) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: {} needs frame memory registered, and nothing keeps this frame's "
                        "memory alive for it",
                        d->who, to_string(d->core->kind()));
    }
    if (auto ok = d->core->channel().register_memory(frame, keep_while_registered); !ok) {
      return Unexpected(ok.error().context(d->who));
    }
    d->note_registrations();
  }
  const uint64_t sent_before =
      s.interrupted_frame == frame.data() && s.interrupted_sequence == meta.sequence
          ? s.interrupted_sent
          : 0;
  auto count = s.external_in_flight;
  auto hold = std::make_shared<FrameHold>(
      s.fan_out.returns, [count] { --*count; }, std::move(keep_while_sent));
  uint64_t sent = 0;
  ++*count;
  hold->arm();
  auto outcome = s.fan_out.dispatch(frame, meta, hold, false, sent_before, &sent);
  hold.reset();  // the cores that have it hold it; if none has, it is done now
  if (outcome && *outcome == Outcome::interrupted) {
    s.interrupted_frame = frame.data();
    s.interrupted_sequence = meta.sequence;
    s.interrupted_sent = sent_before | sent;
    return outcome;
  }
  s.interrupted_frame = nullptr;
  if (!outcome || *outcome != Outcome::sent) return outcome;
  uint64_t seen = s.fan_out.returns->count();
  while (*count > s.options.max_external_in_flight) {
    if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
    seen = s.fan_out.wait_for_returns(seen);
  }
  return outcome;
}

bool SenderSession::sends_in_place(bool registrable) const {
  if (registrable || impl_->options.transport == TransportKind::tcp) return true;
  // Verbs reads only registered memory; a destination not connected yet may become verbs.
  return std::all_of(impl_->fan_out.destinations.begin(), impl_->fan_out.destinations.end(),
                     [](const auto& d) {
                       std::lock_guard lock(d->report_mu);
                       return d->report.transport == "tcp";
                     });
}

Result<SenderSession::Pacing> SenderSession::pace(uint64_t sequence) {
  auto& s = *impl_;
  double rate;
  {
    std::lock_guard lock(s.stream.mu);
    if (!s.stream.format)
      return make_error(ErrorCode::invalid_argument, "send {}: no stream started", peer());
    rate = s.stream.format->frame_rate.value() * s.options.policy.readrate;
  }
  const auto at = [&](uint64_t n) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(n) / rate));
  };
  if (!s.pace_start) s.pace_start = Clock::now() - at(sequence);
  const auto due = *s.pace_start + at(sequence);
  // The destinations keep their connections alive while this sleeps.
  while (Clock::now() < due) {
    if (s.fan_out.interrupted()) return Pacing{Pacing::What::interrupted, due};
    platform::sleep_until(std::min(due, Clock::now() + kTick));
  }
  if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
  // Live: a frame due longer ago than the lateness bound (the link was busy with earlier
  // ones for that long) is dropped, so a slow link costs frames, not a delay that grows.
  if (s.options.policy.live && Clock::now() - due > s.stream.max_lateness()) {
    s.fan_out.start_counting();
    s.fan_out.count_source_drop(stats::DropCause::late);
    return Pacing{Pacing::What::late, due};
  }
  return Pacing{Pacing::What::due, due};
}

void SenderSession::skip(uint64_t) {
  impl_->fan_out.start_counting();
  impl_->fan_out.count_source_drop(stats::DropCause::no_buffer);
}

Result<void> SenderSession::end_stream() {
  auto& s = *impl_;
  if (s.fan_out.ended) return {};
  if (!s.fan_out.failure_now()) (void)s.audio.flush();  // what a destination cannot take it counts
  s.fan_out.ended = true;
  if (!s.fan_out.failure_now()) s.fan_out.drain_queues();
  for (auto& d : s.fan_out.destinations) {
    {
      std::lock_guard lock(d->mu);
      d->end = true;
    }
    d->cv.notify_all();
  }
  for (auto& d : s.fan_out.destinations) {
    if (d->thread.joinable()) d->thread.join();
  }
  {
    std::lock_guard lock(s.fan_out.state_mu);
    s.fan_out.counters.finish();
  }
  {
    std::lock_guard lock(s.stream.mu);
    s.stream.stager.reset();
  }
  if (auto f = s.fan_out.failure_now()) return Unexpected(*f);
  // The first destination's error, for a single destination's caller (fan-out reports each).
  if (s.fan_out.destinations.size() == 1) {
    std::lock_guard r(s.fan_out.destinations.front()->report_mu);
    const auto& report = s.fan_out.destinations.front()->report;
    if (report.state == DestinationState::failed && report.error) return Unexpected(*report.error);
  }
  return {};
}

Result<uint32_t> SenderSession::start_audio(const proto::AudioStart& format) {
  return impl_->audio.start(format);
}

Result<void> SenderSession::submit_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                                         std::span<const std::byte> data) {
  return impl_->audio.submit(track, pts_ns, samples, data);
}

Result<void> SenderSession::end_audio(uint32_t track) { return impl_->audio.end(track); }

bool SenderSession::receiver_ended() const { return impl_->fan_out.all_receivers_ended(); }

std::optional<Error> SenderSession::failure() const { return impl_->fan_out.failure_now(); }

stats::TransferStats SenderSession::stats() const {
  std::lock_guard lock(impl_->fan_out.state_mu);
  return impl_->fan_out.counters;
}

std::vector<DestinationReport> SenderSession::destinations() const {
  std::vector<DestinationReport> out;
  for (const auto& d : impl_->fan_out.destinations) {
    std::lock_guard r(d->report_mu);
    out.push_back(d->report);
  }
  return out;
}

std::string SenderSession::gpu_path() const {
  std::lock_guard lock(impl_->fan_out.state_mu);
  return impl_->fan_out.first_gpu_path.value_or("");
}

std::string_view to_string(DestinationReport::State state) {
  switch (state) {
    case DestinationReport::State::connecting: return "connecting";
    case DestinationReport::State::streaming: return "streaming";
    case DestinationReport::State::ended: return "ended";
    case DestinationReport::State::failed: return "failed";
  }
  return "unknown";
}

}  // namespace rdmavideo
