// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/receiver_service.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <list>
#include <map>
#include <thread>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/log.hpp"
#include "receiver/connection.hpp"
#include "util/signals.hpp"
#include "util/unique_handle.hpp"

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

struct ReceiverService::Impl final : ConnectionHost {
  // One accepted connection and the thread that runs it.
  struct Running {
    std::unique_ptr<receiver::ReceiverConnection> connection;
    std::thread thread;
    std::atomic<bool> done{false};
    std::atomic<bool> dropped{false};  // stopped to make room for a newer handshake
  };

  ReceiverServiceOptions options;
  std::shared_ptr<memory::Budget> budget;
  std::unique_ptr<receiver::ChannelListener> listener;
  UniqueFd stop_fd;  // eventfd: readable once stop() was called
  std::thread accept_thread;
  std::list<std::unique_ptr<Running>> running;  // accept thread; stop() once it has ended
  mutable std::mutex running_mu;  // changes to `running`, and reads from other threads

  mutable std::mutex mu;
  std::vector<std::shared_ptr<StreamRecord>> records;  // every admitted stream, in order
  uint32_t active = 0;     // admitted streams not yet released
  uint64_t admitted = 0;   // streams admitted so far
  uint64_t ended = 0;      // streams over so far (their sinks finished)
  std::map<std::string, uint64_t> refused;  // under mu: connections that were no stream
  std::deque<std::shared_ptr<StreamRecord>> ended_order;  // under mu: ended, oldest first
  FoldedStreams folded;                                   // under mu: ended long ago
  bool stopping = false;

  receiver::ConnectionConfig connection_config() const {
    return {options.listen.ring_size, options.listen.max_frame_bytes, options.listen.timeouts,
            options.memory, options.frames_per_stream, options.idle_timeout,
            options.listen.key, budget, options.gpu_path};
  }

  void accept_loop() {
    block_async_signals();
    for (;;) {
      pollfd fds[2] = {{listener->readiness_fd(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}};
      // Wake now and then to join the threads of connections that have ended.
      const int rc = poll(fds, 2, 1000);
      if (fds[1].revents & POLLIN) return;
      reap();
      if (rc <= 0 || !(fds[0].revents & POLLIN)) continue;
      auto channel = listener->accept();
      if (!channel) {
        // That peer only (a refused rdma_cm request); a peer that left first is nothing.
        if (channel.error().code() != ErrorCode::timeout) log().error("{}", channel.error().message());
        continue;
      }
      drop_oldest_handshake_if_full();
      auto entry = std::make_unique<Running>();
      entry->connection = std::make_unique<receiver::ReceiverConnection>(
          std::move(*channel), connection_config(), *this);
      Running* raw = entry.get();
      entry->thread = std::thread([this, raw] { run_connection(*raw); });
      std::lock_guard lock(running_mu);
      running.push_back(std::move(entry));
    }
  }

  // Makes room for one more connection in handshake: `running` is in order of acceptance,
  // so the first still in its handshake (and not already being dropped) is the oldest.
  void drop_oldest_handshake_if_full() {
    uint32_t waiting = 0;
    Running* oldest = nullptr;
    for (auto& entry : running) {
      if (entry->done || entry->dropped || !entry->connection->in_handshake()) continue;
      ++waiting;
      if (!oldest) oldest = entry.get();
    }
    if (waiting < options.max_handshakes || !oldest) return;
    oldest->dropped = true;
    log().warn("[recv] {} connections are in their handshake (the limit): dropping the oldest, "
               "from {}",
               waiting, oldest->connection->peer());
    oldest->connection->stop();
  }

  void run_connection(Running& entry) {
    block_async_signals();
    auto ok = entry.connection->run();
    if (!ok) {
      std::lock_guard lock(mu);
      if (!stopping) log().error("{}", ok.error().message());
      // Ended before it was a stream (a stream's failure is in its report instead).
      ++refused[std::string(entry.dropped ? "handshake_dropped" : to_string(ok.error().code()))];
    } else if (entry.dropped) {
      std::lock_guard lock(mu);
      ++refused["handshake_dropped"];
    }
    entry.done = true;
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
        return make_error(ErrorCode::resource,
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
      record->sink.reset();  // its thread ends here
    }
    StreamReport report;
    {
      std::lock_guard lock(record->mu);
      record->report.state =
          end.ok() ? StreamReport::State::ended : StreamReport::State::failed;
      record->report.end = std::move(end);
      if (record->report.stats.end == std::chrono::steady_clock::time_point{}) {
        record->report.stats.finish();
      }
      report = record->report;
    }
    {
      std::lock_guard lock(mu);
      --active;
      ++ended;
    }
    if (options.on_stream_end) options.on_stream_end(report);
    std::lock_guard lock(mu);
    ended_order.push_back(record);
    while (ended_order.size() > options.kept_ended_streams) {
      auto oldest = std::move(ended_order.front());
      ended_order.pop_front();
      fold(oldest);
    }
  }

  // Adds an ended stream's report to `folded` and forgets the record. Under mu.
  void fold(const std::shared_ptr<StreamRecord>& record) {
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

ReceiverService::ReceiverService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ReceiverService::~ReceiverService() { stop(); }

Result<std::unique_ptr<ReceiverService>> ReceiverService::start(ReceiverServiceOptions options) {
  if (options.max_streams == 0) {
    return make_error(ErrorCode::invalid_argument, "max_streams is 0: no stream could be served");
  }
  if (options.max_handshakes == 0) {
    return make_error(ErrorCode::invalid_argument, "max_handshakes is 0: no sender could connect");
  }
  if (options.memory.kind == memory::MemoryKind::cuda) {
    // Before listening: a machine without the GPU takes no sender's stream only to fail it.
    auto device = cuda::Device::shared(options.memory.device);
    if (!device) return Unexpected(device.error().context(fmt::format("--memory {}", to_string(options.memory))));
    log().info("frames go into {} ({} MiB)", (*device)->describe(), (*device)->facts().total_memory >> 20);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  auto listener = receiver::listen(impl->options.transport, impl->options.listen);
  if (!listener) return Unexpected(listener.error());
  impl->listener = std::move(*listener);
  std::string why = "--max-memory";
  const bool registers = impl->listener->describe().find("verbs") != std::string::npos;
  const uint64_t limit = impl->options.max_memory
                             ? *impl->options.max_memory
                             : memory::default_budget(registers, &why);
  impl->budget = std::make_shared<memory::Budget>(limit);
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

std::vector<std::pair<std::string, uint64_t>> ReceiverService::refusals() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->refused.begin(), impl_->refused.end()};
}

uint64_t ReceiverService::ended_streams() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ended;
}

}  // namespace rdmavideo
