// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/receiver_service.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <list>
#include <map>
#include <system_error>
#include <thread>

#include "rdmavideo/caught.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/signals.hpp"
#include "rdmavideo/unique_handle.hpp"
#include "receiver/connection.hpp"

namespace rdmavideo {

using receiver::ConnectionHost;
using receiver::StreamRecord;

std::string_view to_string(StreamEnd::How how) {
  switch (how) {
    case StreamEnd::How::sender_ended: return "the sender ended it";
    case StreamEnd::How::frames_reached: return "frame limit reached";
    case StreamEnd::How::stopped: return "stopped";
    case StreamEnd::How::failed: return "failed";
  }
  return "unknown";
}

namespace {

using Stage = receiver::ReceiverConnection::Stage;
using std::chrono::milliseconds;

// Descriptors kept free beside the connections that are no stream: what the process itself
// holds (standard streams, listeners, the log, a GPU driver's device files), and per admitted
// stream what it opens beside its connection (its output, the writer's eventfd, an encoder's
// or display's files).
constexpr uint64_t kProcessDescriptors = 64;
constexpr uint64_t kStreamDescriptors = 16;
// A connection's own descriptors: a socket on TCP; on verbs its rdma_cm event channel,
// completion channel and wake eventfd (the device's context is shared).
constexpr uint64_t kTcpConnectionDescriptors = 1;
constexpr uint64_t kVerbsConnectionDescriptors = 3;
// Neither cap goes below this, however low the descriptor limit: a receiver must be able to
// talk to somebody.
constexpr uint32_t kMinConnectionCap = 4;
// After accept() found no descriptor: wait this long before the next try, doubling up to
// the most, so a good sender gets in within the most once descriptors are free again.
constexpr milliseconds kFirstBackoff(10);
constexpr milliseconds kMostBackoff(250);
// Trouble that repeats (a flood) is logged at most this often, with a count.
constexpr std::chrono::seconds kLogInterval(1);

bool out_of_descriptors(const Error& error) {
  const int e = error.sys_errno();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

// A log line that may repeat thousands of times a second (a flood), said at most once a
// kLogInterval with how often it happened since it was last said.
class ThrottledLog {
 public:
  explicit ThrottledLog(spdlog::level::level_enum level) : level_(level) {}

  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args&&... args) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    ++count_;
    if (said_ && now - last_ < kLogInterval) return;
    std::string text = fmt::format(format, std::forward<Args>(args)...);
    if (said_ && count_ > 1) {
      text += fmt::format(" ({} times in the last {:.1f} s)", count_,
                          std::chrono::duration<double>(now - last_).count());
    }
    log().log(level_, "{}", text);
    said_ = true;
    last_ = now;
    count_ = 0;
  }

 private:
  const spdlog::level::level_enum level_;
  std::mutex mu_;
  bool said_ = false;
  std::chrono::steady_clock::time_point last_;
  uint64_t count_ = 0;  // times since it was last said
};

}  // namespace

struct ReceiverService::Impl final : ConnectionHost {
  // One accepted connection and the thread that runs it.
  struct Running {
    std::unique_ptr<receiver::ReceiverConnection> connection;
    std::thread thread;
    std::atomic<bool> done{false};
    // Set with `done`, and outlives the entry (which the accept thread reaps): for a waiter on
    // another thread.
    std::shared_ptr<std::atomic<bool>> closed = std::make_shared<std::atomic<bool>>(false);
    // Why it was shed, a refusal reason ("handshake_dropped", ...); null while it was not.
    std::atomic<const char*> shed{nullptr};
  };

  ReceiverServiceOptions options;
  Limits limits;  // the caps fitted into the descriptor limit
  std::shared_ptr<memory::Budget> budget;
  std::unique_ptr<receiver::ChannelListener> listener;
  UniqueFd stop_fd;  // eventfd: readable once stop() was called
  std::thread accept_thread;
  // Changed by the accept thread only, under running_mu; read by it without the lock, and
  // by other threads under it. stop() owns it once the accept thread has ended.
  std::list<std::unique_ptr<Running>> running;
  mutable std::mutex running_mu;
  std::atomic<uint64_t> accept_failures{0};
  ThrottledLog exhausted_log{spdlog::level::warn};  // accept() out of descriptors
  ThrottledLog shed_log{spdlog::level::warn};       // a cap full, its oldest connection shed
  ThrottledLog refusal_log{spdlog::level::err};     // a connection that never became a stream

  mutable std::mutex mu;
  std::vector<std::shared_ptr<StreamRecord>> records;  // every admitted stream, in order
  uint32_t active = 0;                                 // admitted streams not yet released
  uint64_t admitted = 0;                               // streams admitted so far
  uint64_t ended = 0;                       // streams over so far (sinks finished, callbacks made)
  std::map<std::string, uint64_t> refused;  // under mu: connections that were no stream
  std::deque<std::shared_ptr<StreamRecord>> ended_order;  // under mu: ended, oldest first
  FoldedStreams folded;                                   // under mu: ended long ago
  bool stopping = false;

  receiver::ConnectionConfig connection_config() const {
    return {options.listen.ring_size,   options.listen.max_frame_bytes,
            options.listen.timeouts,    options.memory,
            options.frames_per_stream,  options.idle_timeout,
            options.listen.key,         budget,
            options.listen.max_version, options.gpu_path,
            options.format_check};
  }

  void accept_loop() {
    block_async_signals();
    milliseconds backoff(0);  // while accept() finds no descriptor: the wait before the next try
    // An episode of exhaustion: accept() failures since the first, said once it is over (no
    // failure for a log interval), not at every success between two failures.
    uint64_t episode_failures = 0;
    auto episode_start = std::chrono::steady_clock::now();
    auto last_failure = episode_start;
    for (;;) {
      // While backing off only the stop is watched: the listener stays readable as long as the
      // kernel holds a connection for it, and watching it would spin.
      pollfd fds[2] = {{stop_fd.get(), POLLIN, 0}, {listener->readiness_fd(), POLLIN, 0}};
      // Else wake now and then to join the threads of connections that have ended.
      const int rc = poll(fds, backoff.count() ? 1 : 2,
                          backoff.count() ? static_cast<int>(backoff.count()) : 1000);
      if (fds[0].revents & POLLIN) return;
      reap();
      const auto now = std::chrono::steady_clock::now();
      if (episode_failures && now - last_failure >= kLogInterval) {
        log().info(
            "[recv] accepting again: {} accept{} failed for want of descriptors over {:.1f} s",
            episode_failures, episode_failures == 1 ? "" : "s",
            std::chrono::duration<double>(last_failure - episode_start).count());
        episode_failures = 0;
      }
      if (!backoff.count() && (rc <= 0 || !(fds[1].revents & POLLIN))) continue;
      auto channel = listener->accept();
      if (!channel && out_of_descriptors(channel.error())) {
        ++accept_failures;
        if (episode_failures++ == 0) episode_start = std::chrono::steady_clock::now();
        last_failure = std::chrono::steady_clock::now();
        backoff = std::min(kMostBackoff, backoff.count() ? backoff * 2 : kFirstBackoff);
        const std::string shed = shed_for_descriptors();
        exhausted_log.say(
            "[recv] {}: backing off{} (descriptor limit {}, of it {} kept for "
            "streams and the process)",
            channel.error().message(), shed, limits.descriptor_limit, limits.reserved);
        continue;
      }
      backoff = milliseconds(0);
      if (!channel) {
        // That peer only (a refused rdma_cm request); a peer that left first is nothing.
        if (channel.error().code() != ErrorCode::timeout)
          log().error("{}", channel.error().message());
        continue;
      }
      shed_oldest_if_full(Stage::handshake, limits.max_handshakes, nullptr, "handshake_dropped");
      auto entry = std::make_unique<Running>();
      entry->connection = std::make_unique<receiver::ReceiverConnection>(
          std::move(*channel), connection_config(), *this);
      Running* raw = entry.get();
      try {
        entry->thread = std::thread([this, raw] { run_connection(*raw); });
      } catch (const std::system_error& e) {
        // Out of threads (the process or user limit): like descriptors, shed and back off.
        ++accept_failures;
        backoff = kMostBackoff;
        const std::string shed = shed_for_descriptors();
        exhausted_log.say("[recv] cannot start a thread for {}: {}; closing it, backing off{}",
                          entry->connection->peer(), e.what(), shed);
        {
          std::lock_guard lock(mu);
          ++refused["no_thread"];
        }
        continue;  // the connection closes as `entry` goes
      }
      std::lock_guard lock(running_mu);
      running.push_back(std::move(entry));
    }
  }

  // The oldest connection at `stage` still running and not shed, and how many there are,
  // leaving out `except`. `running` is in order of acceptance. Under running_mu, or on the
  // accept thread.
  std::pair<Running*, uint32_t> oldest_at(Stage stage, const receiver::ReceiverConnection* except) {
    Running* oldest = nullptr;
    uint32_t count = 0;
    for (auto& entry : running) {
      if (entry->done || entry->shed || entry->connection.get() == except ||
          entry->connection->stage() != stage) {
        continue;
      }
      ++count;
      if (!oldest) oldest = entry.get();
    }
    return {oldest, count};
  }

  // Makes room for one more connection at `stage` (beside `except`, which already is):
  // sheds the oldest there when `cap` are.
  void shed_oldest_if_full(Stage stage, uint32_t cap, const receiver::ReceiverConnection* except,
                           const char* reason) {
    auto [oldest, count] = oldest_at(stage, except);
    if (count < cap || !oldest) return;
    shed_log.say(
        "[recv] {} connections {} (the limit): shedding the oldest, from {}", count,
        stage == Stage::handshake ? "are in their handshake" : "wait for their first StreamStart",
        oldest->connection->peer());
    oldest->shed = reason;
    oldest->connection->shed();
  }

  // accept() found no descriptor: frees one by shedding the oldest connection that is no
  // stream, one at a time (none while an earlier one is still closing). With a key, a
  // connection that proved it is never shed for an anonymous one, and the peer waiting in
  // the kernel's queue is anonymous. Returns what was done, for the log.
  std::string shed_for_descriptors() {
    for (auto& entry : running) {
      if (entry->shed && !entry->done) return ", a connection is being shed";
    }
    auto [victim, n] = oldest_at(Stage::handshake, nullptr);
    if (!victim && !options.listen.key) std::tie(victim, n) = oldest_at(Stage::pending, nullptr);
    if (!victim) return ", nothing to shed (every connection is a stream, or proved the key)";
    victim->shed = "shed_for_descriptors";
    victim->connection->shed();
    return fmt::format(", shedding the oldest connection that is no stream, from {}",
                       victim->connection->peer());
  }

  void passed_handshake(const receiver::ReceiverConnection& connection) override {
    std::lock_guard lock(running_mu);
    shed_oldest_if_full(Stage::pending, limits.max_pending, &connection, "pending_dropped");
  }

  void run_connection(Running& entry) {
    block_async_signals();
    Result<void> ok;
    try {
      ok = entry.connection->run();
    } catch (...) {  // the platform's libraries' (boundary of the connection's thread)
      ok = Unexpected(error_of(std::current_exception(),
                               fmt::format("connection from {}", entry.connection->peer())));
    }
    const char* shed = entry.shed;
    if (!ok || shed) {
      std::lock_guard lock(mu);
      // Ended before it was a stream (a stream's failure is in its report instead).
      // A flood of them (a scan, idle sockets reaching their deadline) must not flood the log:
      // the metrics count every one by reason.
      if (!ok && !stopping && !shed) refusal_log.say("{}", ok.error().message());
      ++refused[std::string(shed ? shed : to_string(ok.error().code()))];
    }
    *entry.closed = true;
    entry.done = true;
  }

  // A stream being admitted found no descriptor for its sink: it comes before any connection
  // that is no stream, so the oldest of those is shed (the oldest in its handshake, else the
  // oldest waiting for StreamStart: the stream proved the key if there is one) and, once it
  // has closed, its descriptor is the stream's. False when there was none to shed.
  bool make_room_for_stream() {
    std::shared_ptr<std::atomic<bool>> closed;
    {
      std::lock_guard lock(running_mu);
      auto [victim, n] = oldest_at(Stage::handshake, nullptr);
      if (!victim) std::tie(victim, n) = oldest_at(Stage::pending, nullptr);
      if (!victim) return false;
      victim->shed = "shed_for_descriptors";
      log().warn(
          "[recv] out of descriptors for a stream: shedding the oldest connection that is "
          "no stream, from {}",
          victim->connection->peer());
      victim->connection->shed();
      closed = victim->closed;
    }
    for (int i = 0; i < 100 && !*closed; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return *closed;
  }

  void reap() {
    for (auto it = running.begin(); it != running.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        std::lock_guard lock(running_mu);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }

  Result<Admitted> admit(StreamInfo info) override {
    auto record = std::make_shared<StreamRecord>();
    {
      std::lock_guard lock(mu);
      if (stopping) return make_error(ErrorCode::resource, "receiver is stopping");
      if (active >= options.max_streams) {
        return make_error(
            ErrorCode::resource,
            "receiver busy: it serves at most {} stream{} at once, and all are in use",
            options.max_streams, options.max_streams == 1 ? "" : "s");
      }
      if (options.stream_limit && admitted >= options.stream_limit) {
        return make_error(ErrorCode::resource,
                          "receiver busy: it takes no more streams (its limit of {} reached)",
                          options.stream_limit);
      }
      ++active;
      info.number = ++admitted;
      record->report.info = info;
      record->report.format = *info.format;
      records.push_back(record);
    }
    if (options.sink_factory) {
      auto sink = options.sink_factory(record->report.info);
      if (!sink && out_of_descriptors(sink.error()) && make_room_for_stream()) {
        sink = options.sink_factory(record->report.info);
      }
      if (!sink) {
        release(record, {StreamEnd::How::failed, sink.error(), 0, 0});
        return Unexpected(sink.error());
      }
      std::lock_guard lock(record->mu);
      record->sink = std::move(*sink);
    }
    return Admitted{record->sink.get(), record};
  }

  void release(const std::shared_ptr<StreamRecord>& record, StreamEnd end) override {
    if (record->sink) {
      if (auto ok = record->sink->finish(end); !ok) {
        log().error("{}", ok.error().message());
        end.how = StreamEnd::How::failed;
        end.error = ok.error();
      }
      std::lock_guard lock(record->mu);  // abort() may be looking at it
      record->sink.reset();              // its thread ends here
    }
    StreamReport report;
    {
      std::lock_guard lock(record->mu);
      record->report.state = end.ok() ? StreamReport::State::ended : StreamReport::State::failed;
      record->report.end = std::move(end);
      if (record->report.stats.end == std::chrono::steady_clock::time_point{}) {
        record->report.stats.finish();
      }
      report = record->report;
    }
    {
      std::lock_guard lock(mu);
      --active;
    }
    if (options.on_stream_end) options.on_stream_end(report);
    std::vector<StreamReport> gone;
    {
      std::lock_guard lock(mu);
      ended_order.push_back(record);
      while (ended_order.size() > options.kept_ended_streams) {
        auto oldest = std::move(ended_order.front());
        ended_order.pop_front();
        gone.push_back(fold(oldest));
      }
    }
    if (options.on_stream_folded) {
      for (const auto& r : gone) options.on_stream_folded(r);
    }
    // Counted last, so whoever sees the count also sees every callback of this end made.
    std::lock_guard lock(mu);
    ++ended;
  }

  // Adds an ended stream's report to `folded` and forgets the record; returns the report.
  // Under mu.
  StreamReport fold(const std::shared_ptr<StreamRecord>& record) {
    StreamReport r;
    {
      std::lock_guard lock(record->mu);
      r = record->report;
    }
    auto& t = folded.stats;
    if (folded.count == 0 || r.stats.start < t.start) t.start = r.stats.start;
    if (r.stats.end > t.end) t.end = r.stats.end;
    t.add(r.stats);
    ++folded.count;
    folded.failed += r.state == StreamReport::State::failed;
    records.erase(std::find(records.begin(), records.end(), record));
    return r;
  }

  void stop() {
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      stopping = true;
    }
    const uint64_t one = 1;
    (void)!write(stop_fd.get(), &one, sizeof one);
    if (accept_thread.joinable()) accept_thread.join();
    // The accept thread has ended: `running` is ours now.
    for (auto& entry : running) entry->connection->stop();
    // A sink blocked on its output (a pipe nobody reads) would hold its finish() forever.
    std::vector<std::shared_ptr<StreamRecord>> all;
    {
      std::lock_guard lock(mu);
      all = records;
    }
    for (auto& record : all) {
      std::lock_guard lock(record->mu);
      if (record->sink) record->sink->abort();
    }
    for (auto& entry : running) entry->thread.join();
    std::lock_guard lock(running_mu);
    running.clear();
  }
};

namespace {

// The connection caps, fitted into what the descriptor limit leaves beside a reserve for the
// process, the front end and every stream the service may admit.
ReceiverService::Limits fit_to_descriptors(const ReceiverServiceOptions& options, bool verbs) {
  ReceiverService::Limits out{options.max_handshakes, options.max_pending, 0, 0};
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur == RLIM_INFINITY) return out;
  out.descriptor_limit = nofile.rlim_cur;
  out.reserved = kProcessDescriptors + uint64_t{options.max_streams} * kStreamDescriptors +
                 options.front_end_descriptors;
  const uint64_t per = verbs ? kVerbsConnectionDescriptors : kTcpConnectionDescriptors;
  const uint64_t room =
      out.descriptor_limit > out.reserved ? (out.descriptor_limit - out.reserved) / per : 0;
  const uint64_t wanted = uint64_t{out.max_handshakes} + out.max_pending;
  if (room >= wanted) return out;
  // Shared between the two caps as they were asked for.
  out.max_handshakes = std::max<uint32_t>(
      kMinConnectionCap, static_cast<uint32_t>(room * out.max_handshakes / wanted));
  out.max_pending = std::max<uint32_t>(
      kMinConnectionCap,
      static_cast<uint32_t>(room > out.max_handshakes ? room - out.max_handshakes : 0));
  log().warn(
      "[recv] the descriptor limit of {} (ulimit -n) leaves room for {} connection{} that "
      "{} no stream beside the {} kept for {} stream{} and the process: at most {} in their "
      "handshake and {} waiting for their first StreamStart (raise the limit, e.g. "
      "LimitNOFILE in the unit)",
      out.descriptor_limit, room, room == 1 ? "" : "s", room == 1 ? "is" : "are", out.reserved,
      options.max_streams, options.max_streams == 1 ? "" : "s", out.max_handshakes,
      out.max_pending);
  return out;
}

}  // namespace

ReceiverService::ReceiverService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ReceiverService::~ReceiverService() { stop(); }

Result<std::unique_ptr<ReceiverService>> ReceiverService::start(ReceiverServiceOptions options) {
  if (options.max_streams == 0) {
    return make_error(ErrorCode::invalid_argument, "max_streams is 0: no stream could be served");
  }
  if (options.max_handshakes == 0 || options.max_pending == 0) {
    return make_error(ErrorCode::invalid_argument,
                      "max_handshakes and max_pending must be at "
                      "least 1: else no sender could connect");
  }
  if (options.memory.kind == memory::MemoryKind::cuda) {
    // Before listening: a machine without the GPU takes no sender's stream only to fail it.
    auto device = cuda::Device::shared(options.memory.device);
    if (!device)
      return Unexpected(
          device.error().context(fmt::format("frames in {}", to_string(options.memory))));
    log().info("frames go into {} ({} MiB)", (*device)->describe(),
               (*device)->facts().total_memory >> 20);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  auto listener = receiver::listen(impl->options.transport, impl->options.listen);
  if (!listener) return Unexpected(listener.error());
  impl->listener = std::move(*listener);
  std::string why = "as asked";
  const bool registers = impl->listener->describe().find("verbs") != std::string::npos;
  const uint64_t limit = impl->options.max_memory ? *impl->options.max_memory
                                                  : memory::default_budget(registers, &why);
  impl->budget = std::make_shared<memory::Budget>(limit);
  impl->limits = fit_to_descriptors(impl->options, registers);
  log().debug("memory budget {} ({})", memory::format_bytes(limit), why);
  impl->stop_fd.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->stop_fd) return Unexpected(system_error("eventfd", errno));
  Impl* raw = impl.get();
  impl->accept_thread = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<ReceiverService>(new ReceiverService(std::move(impl)));
}

Endpoint ReceiverService::local_endpoint() const { return impl_->listener->local_endpoint(); }

std::string ReceiverService::describe() const { return impl_->listener->describe(); }

void ReceiverService::stop() { impl_->stop(); }

std::vector<StreamReport> ReceiverService::reports() const {
  std::vector<std::shared_ptr<StreamRecord>> records;
  {
    std::lock_guard lock(impl_->mu);
    records = impl_->records;
  }
  std::vector<StreamReport> out;
  out.reserve(records.size());
  for (const auto& record : records) {
    std::lock_guard lock(record->mu);
    out.push_back(record->report);
    out.back().slots_filled = *record->slots_filled;
  }
  return out;
}

const memory::Budget& ReceiverService::budget() const { return *impl_->budget; }

FoldedStreams ReceiverService::folded_streams() const {
  std::lock_guard lock(impl_->mu);
  return impl_->folded;
}

uint32_t ReceiverService::connections_in_handshake() const {
  std::lock_guard lock(impl_->running_mu);
  uint32_t n = 0;
  for (const auto& entry : impl_->running) {
    n += !entry->done && entry->connection->in_handshake();
  }
  return n;
}

uint32_t ReceiverService::connections_pending() const {
  std::lock_guard lock(impl_->running_mu);
  uint32_t n = 0;
  for (const auto& entry : impl_->running) {
    n += !entry->done && entry->connection->stage() == Stage::pending;
  }
  return n;
}

uint64_t ReceiverService::accept_failures() const { return impl_->accept_failures; }

ReceiverService::Limits ReceiverService::limits() const { return impl_->limits; }

std::vector<std::pair<std::string, uint64_t>> ReceiverService::refusals() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->refused.begin(), impl_->refused.end()};
}

uint64_t ReceiverService::ended_streams() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ended;
}

}  // namespace rdmavideo
