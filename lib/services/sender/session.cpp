// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/sender_session.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "gpu/stager.hpp"
#include "rdmavideo/checksum.hpp"
#include "rdmavideo/log.hpp"
#include "sender/sender_core.hpp"
#include "util/signals.hpp"

namespace rdmavideo {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
// How often the service thread looks at the connection, and how long a wait slices itself
// to notice the interrupt flag.
constexpr milliseconds kTick(200);
}  // namespace

namespace detail {

// The buffers of one stream format: one region, `count` buffers at a page-rounded stride.
// A buffer is free, lent (a FrameBuffer holds it), or in flight (the session holds it until
// no transfer reads it). FrameBuffers release from any thread, so state is under a mutex.
class BufferPool {
 public:
  enum class State : uint8_t { free, lent, in_flight };

  BufferPool(std::shared_ptr<memory::Region> region, uint32_t count, size_t frame_bytes,
             size_t stride)
      : region_(std::move(region)), frame_bytes_(frame_bytes), stride_(stride),
        states_(count, State::free) {}

  uint32_t count() const { return static_cast<uint32_t>(states_.size()); }
  const std::shared_ptr<memory::Region>& region() const { return region_; }
  size_t offset(uint32_t index) const { return index * stride_; }
  std::span<std::byte> buffer(uint32_t index) const {
    return region_->bytes().subspan(index * stride_, frame_bytes_);
  }

  State state(uint32_t index) {
    std::lock_guard lock(mu_);
    return states_[index];
  }
  // A free buffer (the asked-for one, or any), now lent; nullopt when there is none.
  std::optional<uint32_t> lend(std::optional<uint32_t> index) {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < states_.size(); ++i) {
      if ((!index || *index == i) && states_[i] == State::free) {
        states_[i] = State::lent;
        return i;
      }
    }
    return std::nullopt;
  }
  bool all_lent() {
    std::lock_guard lock(mu_);
    return std::all_of(states_.begin(), states_.end(), [](State s) { return s == State::lent; });
  }
  void set(uint32_t index, State state) {
    std::lock_guard lock(mu_);
    states_[index] = state;
  }

 private:
  std::shared_ptr<memory::Region> region_;
  size_t frame_bytes_;
  size_t stride_;
  std::mutex mu_;
  std::vector<State> states_;  // under mu_
};

}  // namespace detail

FrameBuffer::FrameBuffer(FrameBuffer&& other) noexcept { *this = std::move(other); }

FrameBuffer& FrameBuffer::operator=(FrameBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    bytes_ = std::exchange(other.bytes_, {});
    index_ = other.index_;
    kind_ = other.kind_;
  }
  return *this;
}

FrameBuffer::~FrameBuffer() { reset(); }

Result<void> FrameBuffer::write(std::span<const std::byte> from, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "write into an empty FrameBuffer");
  if (offset > bytes_.size() || from.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "write of {} bytes at {} into a frame of {}", from.size(),
                      offset, bytes_.size());
  }
  return memory::write(*pool_->region(), pool_->offset(index_) + offset, from);
}

Result<void> FrameBuffer::read(std::span<std::byte> to, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "read from an empty FrameBuffer");
  if (offset > bytes_.size() || to.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "read of {} bytes at {} from a frame of {}", to.size(),
                      offset, bytes_.size());
  }
  return memory::read(*pool_->region(), pool_->offset(index_) + offset, to);
}

void FrameBuffer::reset() noexcept {
  if (pool_) pool_->set(index_, detail::BufferPool::State::free);
  pool_.reset();
  bytes_ = {};
}

// What a frame in flight holds until the core says no transfer reads it: a pool buffer's
// return, an external frame's owner, a staging slot. Armed once the frame was handed over,
// so a send that failed returns nothing (the buffer stays the caller's).
class FrameHold {
 public:
  explicit FrameHold(std::function<void()> on_done = {}, std::shared_ptr<const void> keep = nullptr)
      : on_done_(std::move(on_done)), keep_(std::move(keep)) {}
  ~FrameHold() {
    if (armed_ && on_done_) on_done_();
  }
  FrameHold(const FrameHold&) = delete;
  FrameHold& operator=(const FrameHold&) = delete;
  void arm() { armed_ = true; }

 private:
  std::function<void()> on_done_;
  std::shared_ptr<const void> keep_;
  bool armed_ = false;
};

struct SenderSession::Impl {
  SenderSessionOptions options;
  std::unique_ptr<sender::SenderCore> core;  // under mu
  std::string who;

  mutable std::mutex mu;  // the core and everything below
  std::shared_ptr<detail::BufferPool> pool;
  std::shared_ptr<cuda::Device> gpu;         // the pool's GPU, for GPU memory
  std::optional<gpu::PathDecision> gpu_path;  // how GPU frames go out (start_stream)
  std::unique_ptr<gpu::Stager> stager;        // gpu_path staged: the pinned slots
  std::vector<std::weak_ptr<FrameHold>> slot_holds;  // per staging slot: live while it is read
  std::vector<std::byte> checksum_scratch;    // a direct GPU frame, downloaded to hash it
  // External frames (submit_external()) in flight; their holds count it down.
  std::shared_ptr<std::atomic<uint32_t>> external_in_flight = std::make_shared<std::atomic<uint32_t>>(0);
  std::optional<proto::StreamStart> format;
  std::optional<Clock::time_point> pace_start;
  Clock::time_point last_activity = Clock::now();
  bool ended = false;  // EndOfStream sent: nothing more goes out
  bool counting = false;  // the first frame was offered: counters run

  mutable std::mutex state_mu;  // what other threads read
  stats::TransferStats counters;
  std::optional<Error> failure;
  bool receiver_ended = false;

  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;  // under stop_mu
  std::thread service;

  bool interrupted() const { return options.interrupt && options.interrupt->load(); }

  void note_failure(const Error& error) {
    std::lock_guard lock(state_mu);
    if (!failure) failure = error;
  }
  void note_receiver_ended() {
    std::lock_guard lock(state_mu);
    receiver_ended = true;
  }

  // The service thread: a front end that is away (paused, waiting for input) sends nothing,
  // and the receiver takes a silent sender for dead, so this keeps the connection alive.
  void serve() {
    block_async_signals();
    std::unique_lock stop_lock(stop_mu);
    while (!stop_cv.wait_for(stop_lock, kTick, [this] { return stopping; })) {
      std::unique_lock lock(mu, std::try_to_lock);
      // Also before the first StreamStart: a GStreamer sink connects long before its caps.
      if (!lock || ended || Clock::now() - last_activity < kTick) continue;
      {
        std::lock_guard state(state_mu);
        if (failure) continue;
      }
      if (auto ok = core->keep_alive(); !ok) {
        note_failure(ok.error());
        if (options.on_failure) options.on_failure(ok.error());
      } else if (core->receiver_ended()) {
        note_receiver_ended();
      }
    }
  }

  // Takes a credit as the policy says: now or never (live), or waiting (no-drop).
  Result<std::variant<sender::Credit, Outcome>> take_credit() {
    if (options.policy.live) {
      auto got = core->acquire(milliseconds(0));
      if (!got) return Unexpected(got.error());
      if (*got) return **got;
      if (core->receiver_ended()) return Outcome::receiver_ended;
      return Outcome::dropped;
    }
    for (;;) {
      if (interrupted()) return Outcome::interrupted;
      auto got = core->acquire(kTick);  // slices, so the interrupt is noticed
      if (!got) return Unexpected(got.error());
      if (*got) return **got;
      if (core->receiver_ended()) return Outcome::receiver_ended;
    }
  }

  // Decides how frames in GPU memory go out, and prepares it: registered for sending
  // straight from the GPU (dmabuf, peermem), or pinned slots to stage them through.
  Result<void> register_gpu_pool(const std::shared_ptr<memory::Region>& region, size_t frame_bytes) {
    auto decision = gpu::choose_path(options.gpu_path, core->channel().gpu_facts(), *gpu);
    if (!decision) return Unexpected(decision.error().context(who));
    if (decision->path != gpu::Path::staged) {
      if (auto ok = core->channel().register_gpu_memory(region->bytes(), region, decision->path, *gpu); !ok) {
        if (auto staged = decision->fall_back(options.gpu_path, ok.error()); !staged) {
          return Unexpected(staged.error().context(who));
        }
      }
    }
    if (decision->path == gpu::Path::staged) {
      auto slots = gpu::Stager::create(gpu, frame_bytes);
      if (!slots) return Unexpected(slots.error().context(who));
      if (auto ok = core->channel().register_memory((*slots)->all(), (*slots)->keep()); !ok) return ok;
      stager = std::move(*slots);
      slot_holds.clear();
    }
    log().info("[{}] frames from {}: {}", who, gpu->describe(), decision->summary());
    std::lock_guard lock(state_mu);
    gpu_path = std::move(*decision);
    return {};
  }

  // Copies a GPU frame into the next pinned slot, once no transfer reads that slot; `frame`
  // becomes the slot's copy, and `hold` the slot's claim while it is read.
  Result<void> stage(std::span<const std::byte>& frame, std::shared_ptr<FrameHold>& hold) {
    const uint32_t slot = stager->next();
    if (slot_holds.size() < slot + 1) slot_holds.resize(slot + 1);
    while (!slot_holds[slot].expired()) {
      if (auto ok = core->retire_oldest(); !ok) return ok;
    }
    auto copy = stager->download(slot, cuda::address(frame.data()), frame.size());
    if (!copy) return Unexpected(copy.error().context(who));
    frame = *copy;
    hold = std::make_shared<FrameHold>();
    slot_holds[slot] = hold;
    std::lock_guard lock(state_mu);
    ++counters.gpu_copies;
    return {};
  }

  // Sends `frame` (in memory the connection can send from) with a credit the policy gave,
  // giving the core `hold` for as long as the frame is read; `hold` is armed once sent. A
  // frame in GPU memory that is staged goes out from a pinned slot, `frame` becomes it, and
  // the slot's claim is held instead. `in_gpu`: the frame is GPU memory the transport reads
  // straight (dmabuf, peermem).
  Result<Outcome> send(std::span<const std::byte>& frame, const FrameMeta& meta,
                       std::shared_ptr<FrameHold> hold, bool staged = false, bool in_gpu = false) {
    last_activity = Clock::now();
    if (ended) return Outcome::receiver_ended;
    if (!counting) {
      // Rates and CPU count from the first frame, not from connecting or preparing a source.
      counting = true;
      std::lock_guard lock(state_mu);
      counters.start = last_activity;
      counters.cpu_start = stats::process_cpu_seconds();
    }
    auto credit = take_credit();
    last_activity = Clock::now();
    if (!credit) return fail(credit.error());
    if (const auto* outcome = std::get_if<Outcome>(&*credit)) {
      if (*outcome == Outcome::dropped) {
        std::lock_guard lock(state_mu);
        ++counters.dropped;
      }
      if (*outcome == Outcome::receiver_ended) note_receiver_ended();
      return *outcome;
    }
    if (staged) {
      if (auto ok = stage(frame, hold); !ok) return fail(ok.error());
    }
    proto::FrameWritten info;
    info.sequence = meta.sequence;
    info.pts_ns = meta.pts_ns;
    info.sent_ns = stats::realtime_ns();
    if (options.policy.checksum) {
      info.flags |= proto::kFrameHasChecksum;
      if (in_gpu) {
        // The hash is the CPU's: a frame the NIC reads from the GPU is downloaded for it.
        checksum_scratch.resize(frame.size());
        if (auto ok = gpu->download(checksum_scratch, cuda::address(frame.data())); !ok) return fail(ok.error());
        info.checksum = frame_checksum(checksum_scratch);
        std::lock_guard lock(state_mu);
        ++counters.gpu_copies;
      } else {
        info.checksum = frame_checksum(frame);
      }
    }
    if (auto ok = core->send_frame(std::get<sender::Credit>(*credit), frame, info, hold); !ok) {
      return fail(ok.error());
    }
    hold->arm();
    last_activity = Clock::now();
    std::lock_guard lock(state_mu);
    ++counters.frames;
    counters.bytes += frame.size();
    counters.latency.record_ns(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(last_activity - meta.ready).count()));
    return Outcome::sent;
  }

  Unexpected fail(const Error& error) {
    note_failure(error);
    return Unexpected(error);
  }

  Result<void> end() {
    if (ended) return {};
    auto retired = core->retire_all();
    ended = true;
    stats::TransferStats snapshot;
    {
      std::lock_guard lock(state_mu);
      counters.finish();
      snapshot = counters;
    }
    auto ok = core->end_stream({snapshot.frames, snapshot.dropped});
    pool.reset();
    stager.reset();
    if (!ok) return ok;
    return retired;
  }
};

SenderSession::SenderSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SenderSession::~SenderSession() {
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->service.joinable()) impl_->service.join();
  std::lock_guard lock(impl_->mu);
  if (auto ok = impl_->end(); !ok) log().debug("[{}] {}", impl_->who, ok.error().message());
}

Result<std::unique_ptr<SenderSession>> SenderSession::connect(SenderSessionOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  if (impl->options.memory.kind == memory::MemoryKind::cuda) {
    // Before connecting: a machine without the GPU should not cost the receiver a stream.
    auto device = cuda::Device::shared(impl->options.memory.device);
    if (!device) return Unexpected(device.error().context(fmt::format("--memory {}", to_string(impl->options.memory))));
    impl->gpu = *device;
  }
  auto core = sender::SenderCore::connect(impl->options.transport, impl->options.connect);
  if (!core) return Unexpected(core.error());
  impl->core = std::move(*core);
  impl->who = fmt::format("send {}", impl->core->peer());
  Impl* raw = impl.get();
  impl->service = std::thread([raw] { raw->serve(); });
  return std::unique_ptr<SenderSession>(new SenderSession(std::move(impl)));
}

TransportKind SenderSession::kind() const { return impl_->core->kind(); }
const std::string& SenderSession::peer() const { return impl_->core->peer(); }

Result<proto::RingInfo> SenderSession::start_stream(const proto::StreamStart& format,
                                                    uint32_t pool_buffers) {
  auto& s = *impl_;
  std::lock_guard lock(s.mu);
  s.last_activity = Clock::now();
  if (s.ended) return make_error(ErrorCode::peer_closed, "{}: the stream has ended", s.who);
  if (pool_buffers == 0) {
    return make_error(ErrorCode::invalid_argument, "{}: a pool of 0 buffers", s.who);
  }
  if (!format.name.empty()) s.who = fmt::format("send {} \"{}\"", s.core->peer(), format.name);
  // Frames of the old format must be out before the ring changes.
  if (auto ok = s.core->retire_all(); !ok) return s.fail(ok.error());
  auto ring = s.core->start_stream(format);
  s.last_activity = Clock::now();
  if (!ring) {
    if (s.core->receiver_ended()) s.note_receiver_ended();
    return s.fail(ring.error());
  }
  const size_t frame_bytes = format.layout.frame_bytes;
  if (!s.pool || s.pool->count() != pool_buffers || !s.format ||
      s.format->layout.frame_bytes != format.layout.frame_bytes) {
    if (s.pool && !s.stager) s.core->channel().forget_memory(s.pool->region()->bytes());
    if (s.stager) s.core->channel().forget_memory(s.stager->all());
    s.pool.reset();  // buffers still lent keep their memory; they can no longer be sent
    s.stager.reset();
    const bool gpu = s.options.memory.kind == memory::MemoryKind::cuda;
    const size_t stride = memory::round_up(frame_bytes, gpu ? memory::kGpuPageBytes : memory::kPageBytes);
    auto region = memory::Region::allocate(s.options.memory, stride * pool_buffers);
    if (!region) return Unexpected(region.error().context(s.who));
    if (gpu) {
      if (auto ok = s.register_gpu_pool(*region, frame_bytes); !ok) return s.fail(ok.error());
    } else if (auto ok = s.core->channel().register_memory((*region)->bytes(), *region); !ok) {
      return s.fail(ok.error());
    }
    s.pool = std::make_shared<detail::BufferPool>(std::move(*region), pool_buffers, frame_bytes,
                                                  stride);
  }
  s.format = format;
  s.pace_start.reset();
  return *ring;
}

Result<FrameBuffer> SenderSession::acquire_buffer(std::optional<uint32_t> index) {
  auto& s = *impl_;
  std::lock_guard lock(s.mu);
  if (!s.pool) return make_error(ErrorCode::invalid_argument, "{}: no stream started", s.who);
  if (index && *index >= s.pool->count()) {
    return make_error(ErrorCode::invalid_argument, "{}: buffer {} out of range (pool of {})",
                      s.who, *index, s.pool->count());
  }
  s.core->retire();
  for (;;) {
    if (auto got = s.pool->lend(index)) {
      return FrameBuffer(s.pool, *got, s.pool->buffer(*got), s.pool->region()->kind());
    }
    if (index && s.pool->state(*index) == detail::BufferPool::State::lent) {
      return make_error(ErrorCode::invalid_argument, "{}: buffer {} is already lent", s.who,
                        *index);
    }
    if (s.core->in_flight() == 0 || s.pool->all_lent()) {
      return make_error(ErrorCode::invalid_argument, "{}: all {} buffers are lent out", s.who,
                        s.pool->count());
    }
    // The one we want (or the oldest) is still being read by a transfer.
    if (auto ok = s.core->retire_oldest(); !ok) return s.fail(ok.error());
  }
}

Result<SenderSession::Outcome> SenderSession::submit(FrameBuffer& buffer, const FrameMeta& meta) {
  auto& s = *impl_;
  std::lock_guard lock(s.mu);
  if (!buffer || buffer.pool_ != s.pool) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: submit of a buffer that is not from the current stream's pool", s.who);
  }
  std::span<const std::byte> frame = buffer.bytes();
  const bool staged = s.stager != nullptr;
  const bool in_gpu = !staged && buffer.kind() == memory::MemoryKind::cuda;
  // Sent from the pool: the buffer is the pool's again once no transfer reads it.
  auto pool = s.pool;
  const uint32_t index = buffer.index_;
  auto hold = std::make_shared<FrameHold>([pool, index] { pool->set(index, detail::BufferPool::State::free); });
  auto outcome = s.send(frame, meta, hold, staged, in_gpu);
  if (!outcome) return outcome;
  if (*outcome == Outcome::interrupted) return outcome;
  if (*outcome == Outcome::sent && !staged) {
    s.pool->set(index, detail::BufferPool::State::in_flight);
    buffer.pool_.reset();  // the hold returns it
    buffer.bytes_ = {};
  } else {
    // Dropped, ended, or staged (the GPU buffer was copied out, and the slot is in flight).
    buffer.reset();
  }
  s.core->retire();
  return outcome;
}

Result<SenderSession::Outcome> SenderSession::submit_external(
    std::span<const std::byte> frame, const FrameMeta& meta,
    std::shared_ptr<const void> keep_while_sent, std::shared_ptr<const void> keep_while_registered) {
  auto& s = *impl_;
  std::lock_guard lock(s.mu);
  if (!s.core->channel().registered(frame)) {
    if (!keep_while_registered) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: {} needs frame memory registered, and nothing keeps this frame's "
                        "memory alive for it",
                        s.who, to_string(s.core->kind()));
    }
    if (auto ok = s.core->channel().register_memory(frame, std::move(keep_while_registered)); !ok) {
      return s.fail(ok.error());
    }
  }
  auto count = s.external_in_flight;
  auto hold = std::make_shared<FrameHold>([count] { --*count; }, std::move(keep_while_sent));
  auto outcome = s.send(frame, meta, hold);
  if (!outcome || *outcome != Outcome::sent) return outcome;
  ++*count;
  s.core->retire();
  while (*count > s.options.max_external_in_flight) {
    if (auto ok = s.core->retire_oldest(); !ok) return s.fail(ok.error());
  }
  return outcome;
}

Result<std::optional<Clock::time_point>> SenderSession::pace(uint64_t sequence) {
  auto& s = *impl_;
  Clock::time_point due;
  {
    std::lock_guard lock(s.mu);
    if (!s.format) return make_error(ErrorCode::invalid_argument, "{}: no stream started", s.who);
    if (!s.pace_start) s.pace_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(
                                                             static_cast<double>(sequence) /
                                                             s.format->frame_rate.value()));
    due = *s.pace_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                              static_cast<double>(sequence) / s.format->frame_rate.value()));
  }
  // The service thread keeps the connection alive while this sleeps.
  while (Clock::now() < due) {
    if (s.interrupted()) return std::optional<Clock::time_point>{};
    std::this_thread::sleep_until(std::min(due, Clock::now() + kTick));
  }
  if (auto failure = this->failure()) return Unexpected(*failure);
  return std::optional<Clock::time_point>(due);
}

void SenderSession::skip_late(uint64_t) {
  std::lock_guard lock(impl_->state_mu);
  ++impl_->counters.dropped;
}

Result<void> SenderSession::end_stream() {
  std::lock_guard lock(impl_->mu);
  auto ok = impl_->end();
  if (!ok) return Unexpected(ok.error());
  return {};
}

bool SenderSession::receiver_ended() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->receiver_ended;
}

std::optional<Error> SenderSession::failure() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->failure;
}

stats::TransferStats SenderSession::stats() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->counters;
}

std::string SenderSession::gpu_path() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->gpu_path ? impl_->gpu_path->summary() : std::string();
}

}  // namespace rdmavideo
