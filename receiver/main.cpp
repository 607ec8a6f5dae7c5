// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv: listens for a sender, receives its frames into a ring, and writes,
// verifies or discards them. Serves one sender at a time; a sender that fails costs only its
// own connection, and the receiver goes back to listening.
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <pthread.h>
#include <thread>

#include "cli.hpp"
#include "display.hpp"
#include "options.hpp"
#include "raw_output.hpp"
#include "recording.hpp"
#include "rdmavideo/frame_verifier.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/stats.hpp"

namespace rdmavideo::receiver {
namespace {

const std::atomic<bool>& g_stop = cli::stop_requested();  // SIGINT or SIGTERM arrived

// What the sink needs to know about the stream a frame belongs to.
struct StreamContext {
  proto::StreamStart format;
  std::optional<FrameVerifier> verifier;
};

// The sink thread: verifies and writes frames in arrival order, then drops each lease, which
// returns its slot's credit, or hands it to the display, which never makes it wait. The queue
// never holds more than the ring's slots.
class Sink {
 public:
  Sink(RawOutput* output, bool verify, Display* display)
      : output_(output), verify_(verify), display_(display) {
    thread_ = std::thread([this] { run(); });
  }
  ~Sink() { stop(); }

  void push(std::shared_ptr<const StreamContext> stream, FrameLease frame) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back({std::move(stream), std::move(frame)});
    }
    cv_.notify_one();
  }

  /// Waits for every queued frame to be handled and the thread to end.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  /// Also encode every frame into `recording` (set before the first push).
  void record_to(Recording* recording) {
    std::lock_guard lock(mu_);
    recording_ = recording;
  }

  uint64_t failures() const { return failures_; }
  /// The output's write error, once one happened (the sink stops writing).
  std::optional<Error> output_error() const {
    std::lock_guard lock(mu_);
    return output_error_;
  }

 private:
  struct Item {
    std::shared_ptr<const StreamContext> stream;
    FrameLease frame;
  };

  void run() {
    // SIGINT/SIGTERM go to the main thread, which stops the session; the encoder's threads,
    // started from here, inherit the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    for (;;) {
      Item item;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      handle(item);
    }
  }

  void handle(Item& item) {
    if (verify_ && item.stream->verifier) {
      if (auto problem = item.stream->verifier->verify(item.frame.info(), item.frame.data())) {
        if (failures_++ < 10) log().error("verify: {}", *problem);
      }
    }
    if (output_ && !write_failed_) {
      if (auto ok = output_->write(item.stream->format, item.frame.data()); !ok) {
        std::lock_guard lock(mu_);
        output_error_ = ok.error();
        write_failed_ = true;
      }
    }
    if (recording_ && !write_failed_) {
      if (auto ok = recording_->write(item.stream->format, item.frame.data(),
                                      item.frame.info().pts_ns);
          !ok) {
        std::lock_guard lock(mu_);
        output_error_ = ok.error();
        write_failed_ = true;
      }
    }
    if (display_) display_->offer(item.stream->format, std::move(item.frame));
  }

  RawOutput* output_;
  Recording* recording_ = nullptr;  // set under mu_ before the first frame; null: none
  bool verify_;
  Display* display_;  // null without --display
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool write_failed_ = false;         // sink thread only
  std::optional<Error> output_error_;  // under mu_
  std::atomic<uint64_t> failures_{0};
  std::thread thread_;
};

enum class SessionEnd { stream_ended, frames_reached, stopped, failed };

struct Session {
  const Options& options;
  ReceiverConnection& conn;
  Sink& sink;
  stats::TransferStats& stats;
  stats::StreamFacts& facts;

  SessionEnd run() {
    stats::StatusLine status(fmt::format("[recv {}]", conn.peer()), !options.quiet);
    std::shared_ptr<const StreamContext> stream;
    for (;;) {
      if (auto error = sink.output_error()) {
        status.finish();
        log().error("{}", error->message());
        conn.finish(stats.frames);
        return SessionEnd::failed;
      }
      if (g_stop) {
        status.finish();
        conn.finish(stats.frames);
        return SessionEnd::stopped;
      }
      auto event = conn.next();
      if (!event) {
        status.finish();
        if (g_stop) return SessionEnd::stopped;
        log().error("{}", event.error().message());
        return SessionEnd::failed;
      }
      if (auto* started = std::get_if<StreamStarted>(&*event)) {
        auto context = std::make_shared<StreamContext>();
        context->format = started->format;
        if (options.verify) context->verifier.emplace(started->format);
        stream = std::move(context);
        const auto& f = started->format;
        if (stats.frames == 0) {  // measure from the first stream, not from listening
          stats.start = std::chrono::steady_clock::now();
          stats.cpu_start = stats::process_cpu_seconds();
        }
        facts = {std::string(to_string(conn.kind())), f.width, f.height,
                 std::string(name(f.pixel_format)), to_string(f.frame_rate), conn.peer()};
        log().info("[recv {} \"{}\"] stream {}: {}x{} {} at {} fps, {} bytes a frame, ring of {} slots{}",
                   conn.peer(), f.name, f.stream_id, f.width, f.height, name(f.pixel_format),
                   to_string(f.frame_rate), f.layout.frame_bytes, options.ring,
                   f.flags & proto::kStreamLive ? ", live" : "");
      } else if (auto* arrived = std::get_if<FrameArrived>(&*event)) {
        ++stats.frames;
        stats.bytes += arrived->frame.data().size();
        stats.latency.record_ns(arrived->latency_ns);
        sink.push(stream, std::move(arrived->frame));
        status.maybe_print(stats);
        if (options.frames && stats.frames >= *options.frames) {
          status.finish();
          conn.finish(stats.frames);
          return SessionEnd::frames_reached;
        }
      } else if (auto* ended = std::get_if<StreamEnded>(&*event)) {
        status.finish();
        stats.dropped += ended->end.dropped;
        log().info("[recv {}] end of stream: sender sent {} frames, dropped {}", conn.peer(),
                   ended->end.frames, ended->end.dropped);
        return SessionEnd::stream_ended;
      }
    }
  }
};

int run(const Options& o) {
  ListenOptions listen_options;
  listen_options.endpoint = o.listen;
  listen_options.rdma_device = o.rdma_device;
  listen_options.ring_size = o.ring;
  // A signal that does not ask us to stop (SIGCONT after Ctrl-Z, SIGWINCH) must not end a
  // stream: an interrupted read looks at the flag.
  listen_options.stop = &g_stop;
  auto listener = listen(o.transport, listen_options);
  if (!listener) {
    log().error("rdmavideo-recv: --listen {}: {}", o.listen.to_string(), listener.error().message());
    return 1;
  }
  log().info("listening on {} ({})", (*listener)->local_endpoint().to_string(),
             (*listener)->describe());

  std::optional<Recording> recording;
  if (Recording::is_recording_path(o.output)) {
    recording.emplace(RecordingOptions{o.output, o.codec, o.encoder, !o.quiet});
  }
  std::optional<RawOutput> output;
  if (!o.output.empty() && !recording) {
    auto opened = RawOutput::open(o.output);
    if (!opened) {
      log().error("rdmavideo-recv: {}", opened.error().message());
      return 1;
    }
    output.emplace(std::move(*opened));
  }

  std::unique_ptr<Display> display;
  if (o.display) {
    auto opened = Display::open();
    if (!opened) {
      log().error("rdmavideo-recv: {}", opened.error().message());
      return 1;
    }
    display = std::move(*opened);
  }

  stats::TransferStats stats;
  stats::StreamFacts facts{std::string(to_string((*listener)->kind())), 0, 0, "", "", ""};
  int exit_code = 0;
  {
    Sink sink(output ? &*output : nullptr, o.verify, display.get());
    if (recording) sink.record_to(&*recording);
    for (;;) {
      if (g_stop) break;
      auto conn = (*listener)->accept();
      if (!conn) {
        if (g_stop) break;
        log().error("{}", conn.error().message());  // that peer only; keep listening
        continue;
      }
      log().info("[recv {}] connected over {}", (*conn)->peer(), to_string((*conn)->kind()));
      const SessionEnd end = Session{o, **conn, sink, stats, facts}.run();
      if (end == SessionEnd::failed) {
        if (sink.output_error()) {
          exit_code = 1;
          break;
        }
        if (recording) {  // a recording ends with its sender: finalise what arrived
          exit_code = 1;
          break;
        }
        log().info("listening for the next sender");
        continue;
      }
      break;
    }
    sink.stop();
    stats.checksum_failures = sink.failures();
    // An output error on the last frames, after the session had already ended.
    if (auto error = sink.output_error(); error && exit_code == 0) {
      log().error("{}", error->message());
      exit_code = 1;
    }
  }
  if (display) {
    display->stop();
    const auto counts = display->counts();
    log().info("[recv] display: {} frames shown, {} dropped (window busy)", counts.shown,
               counts.dropped);
  }
  stats.finish();
  if (output) {
    if (auto ok = output->close(); !ok) {
      log().error("{}", ok.error().message());
      exit_code = 1;
    }
  }
  if (recording) {
    if (auto ok = recording->close(); !ok) {
      log().error("{}", ok.error().message());
      exit_code = 1;
    } else {
      log().info("[record {}] recorded {} frames", recording->path(), recording->frames());
    }
  }
  log().info("[recv] received {}", stats::summary_text(stats, facts));
  if (o.verify && stats.checksum_failures > 0) {
    log().error("verify: {} of {} frames failed", stats.checksum_failures, stats.frames);
    exit_code = 1;
  }
  if (!o.stats_json.empty() && !stats::write_summary(o.stats_json, stats, facts)) exit_code = 1;
  return exit_code;
}

}  // namespace
}  // namespace rdmavideo::receiver

int main(int argc, char** argv) {
  using namespace rdmavideo::receiver;
  Options options;
  if (auto code = parse_options(argc, argv, options)) return *code;
  rdmavideo::cli::install_stop_signals();
  return rdmavideo::cli::run_main("rdmavideo-recv", [&] { return run(options); });
}
