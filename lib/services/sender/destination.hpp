// SPDX-License-Identifier: Apache-2.0
// One receiver of a sender session: its connection (a sender core), its queue of frames and
// audio, and the thread that sends them, joins each stream format, reconnects, and keeps the
// connection alive. It works over the stream it joins (SessionStream) and tells the session
// what it cannot decide alone through DestinationEvents.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "jobs.hpp"
#include "rdmavideo/sender_session.hpp"
#include "sender/sender_core.hpp"
#include "session_stream.hpp"

namespace rdmavideo::sender {

// What a destination tells its session, and asks of it.
class DestinationEvents {
 public:
  // Lost for good (not to be reconnected): the session decides whether it goes on.
  virtual void destination_lost(const Error& error) = 0;
  // The way its connection takes GPU frames, for the session's report.
  virtual void gpu_path_chosen(const std::string& summary) = 0;
  // The caller asked a wait to end (SenderSessionOptions::interrupt).
  virtual bool interrupted() const = 0;
  // The session is stopping (ConnectOptions::stop): no reconnecting.
  virtual bool stopping() const = 0;

 protected:
  ~DestinationEvents() = default;
};

struct Destination {
  SessionStream& stream;
  const SenderSessionOptions& options;
  DestinationEvents& events;
  uint32_t index;  // its bit in a Dispatch's masks
  Endpoint endpoint;
  std::string who;   // "send host:port" for messages
  std::string peer;  // under mu: "host:port", with the RDMA device once connected over verbs

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;  // under mu
  bool busy = false;      // under mu: a job taken and not finished
  bool stop = false;      // under mu: the session is ending
  bool end = false;       // under mu: send EndOfStream and close
  // Written by the thread under mu, read by others under it: the core (so a caller can wake
  // its channel) and whether frames reach it.
  std::unique_ptr<sender::SenderCore> core;
  // Held by whoever drives the core: this thread, or in blocking mode the caller's, which
  // sends to the first destination itself (a hand-off to a thread and back costs a frame
  // two wake-ups, a quarter of a 4 MB frame's time on a virtual machine).
  std::mutex core_mu;
  bool direct = false;  // blocking mode's first destination: the caller sends to it
  bool up = false;      // connected and streaming the current generation
  bool staged = false;  // GPU frames go to it from the pinned copy
  uint64_t joined = 0;  // the generation its ring is for
  std::optional<proto::RingInfo> ring;
  std::thread thread;

  // The thread's own.
  std::shared_ptr<detail::BufferPool> registered_pool;  // pool memory its channel has
  std::shared_ptr<gpu::Stager> registered_stager;
  milliseconds backoff = kFirstRetry;
  bool retry = true;  // reconnecting is still worth it
  // Under core_mu: audio tracks whose AudioStart went on the current connection (tracks
  // start in order, so a count), and whether one line said its receiver takes no audio.
  size_t audio_started = 0;
  bool audio_refusal_said = false;

  mutable std::mutex report_mu;
  DestinationReport report;  // under report_mu

  Destination(SessionStream& s, const SenderSessionOptions& o, DestinationEvents& e, uint32_t i,
              Endpoint at)
      : stream(s),
        options(o),
        events(e),
        index(i),
        endpoint(std::move(at)),
        who(fmt::format("send {}", endpoint.to_string())),
        peer(endpoint.to_string()) {
    report.endpoint = endpoint;
  }

  DestinationState state() const {
    std::lock_guard lock(report_mu);
    return report.state;
  }
  void set_state(DestinationState state, std::optional<Error> error = std::nullopt) {
    std::lock_guard lock(report_mu);
    report.state = state;
    if (error) report.error = std::move(error);
  }
  uint32_t report_connections() const {
    std::lock_guard lock(report_mu);
    return report.connections;
  }
  template <typename F>
  void count(F&& f) {
    std::lock_guard lock(report_mu);
    f(report.stats);
  }
  // The memory registrations its connection sends from, for the report (the caller drives
  // the core).
  void note_registrations() {
    std::lock_guard lock(report_mu);
    report.registrations = core->channel().registrations();
    report.registrations_made = core->channel().registrations_made();
  }

  // The receiver wants no more frames: nothing more is sent here.
  void mark_ended() {
    {
      std::lock_guard lock(mu);
      up = false;
    }
    set_state(DestinationState::ended);
    stream.notify();
  }
  void run();  // the destination's thread: serve() with exceptions stopped
  void serve(bool& first);
  bool connect();
  Result<void> join(uint64_t stream_generation, const proto::StreamStart& stream_format,
                    const std::shared_ptr<detail::BufferPool>& stream_pool);
  Result<void> register_pool(const std::shared_ptr<detail::BufferPool>& new_pool);
  void send(Job& job);
  enum class Retry { if_worth_it, never };
  void lost(const Error& error, Retry may = Retry::if_worth_it);
  /// After a failed connect or a lost connection: connect again after the back-off
  /// (--reconnect, and an error worth another try), or give this destination up.
  void try_again_or_give_up(const Error& error, Retry may = Retry::if_worth_it);
  void finish_job(Job& job, Took took, stats::DropCause cause = stats::DropCause::not_up);
  // A frame job's part in its dispatch, as finish_job() without touching `busy` (a job
  // that never left the queue).
  void settle(Job& job, Took took, stats::DropCause cause = stats::DropCause::not_up);
  // Everything queued, dropped and counted (a live stream ending while it is behind).
  void drop_queued();
  void end_stream();
  // Audio, under core_mu: AudioStart for every track not started on this connection yet,
  // then the job's samples or end. Counted in the report either way.
  void send_audio(const AudioJob& job);
  void start_audio_tracks();
};

}  // namespace rdmavideo::sender
