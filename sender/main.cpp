// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send: reads or generates frames and sends them into a receiver's ring.
#include <poll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <thread>

#include "cli.hpp"
#include "options.hpp"
#include "rdmavideo/frame_sender.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/av/source.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo::sender {
namespace {

using Clock = std::chrono::steady_clock;
const std::atomic<bool>& g_stop = cli::stop_requested();  // SIGINT or SIGTERM arrived

// A frame source: the test pattern, raw frames read from stdin, or an FFmpeg input decoded
// into a small pool of buffers.
class Source {
 public:
  Source(const Options& options, const proto::StreamStart& format,
         std::unique_ptr<av::Source> ffmpeg = nullptr)
      : ffmpeg_(std::move(ffmpeg)) {
    if (options.testsrc) {
      pattern_.emplace(format);
    } else {
      for (auto& buffer : buffers_) buffer.resize(format.layout.frame_bytes);
    }
  }

  // The buffer next(sequence) fills: the caller makes sure no send still reads it.
  std::span<const std::byte> buffer_for(uint64_t sequence) {
    if (pattern_) return pattern_->buffer_for(sequence);
    return buffers_[sequence % buffers_.size()];
  }

  // The input's presentation time of the frame next() returned last, where it has one.
  std::optional<int64_t> pts_ns() const { return pts_ns_; }

  // The next frame, empty at the end of input; an error for a truncated frame. `idle` is
  // called about every 250 ms while the input has nothing to read.
  Result<std::span<const std::byte>> next(uint64_t sequence,
                                          const std::function<Result<void>()>& idle) {
    if (pattern_) return std::span<const std::byte>(pattern_->frame(sequence));
    if (ffmpeg_) {
      // The decoder writes only here, into the buffer the caller waited idle on.
      auto& buffer = buffers_[sequence % buffers_.size()];
      auto info = ffmpeg_->read_frame(buffer);
      if (!info) return Unexpected(info.error());
      if (!*info) return std::span<const std::byte>{};
      pts_ns_ = (*info)->pts_ns;
      return std::span<const std::byte>(buffer);
    }
    auto& buffer = buffers_[sequence % buffers_.size()];
    size_t done = 0;
    while (done < buffer.size()) {
      pollfd pfd{STDIN_FILENO, POLLIN, 0};
      const int ready = poll(&pfd, 1, 250);
      if (ready == 0 || (ready < 0 && errno == EINTR)) {
        if (g_stop) return std::span<const std::byte>{};
        if (auto ok = idle(); !ok) return Unexpected(ok.error());
        continue;
      }
      const ssize_t n = read(STDIN_FILENO, buffer.data() + done, buffer.size() - done);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR && !g_stop) continue;
        if (errno == EINTR) return std::span<const std::byte>{};
        return Unexpected(system_error("stdin: read", errno));
      }
      done += static_cast<size_t>(n);
    }
    if (done == 0) return std::span<const std::byte>{};
    if (done < buffer.size()) {
      return make_error(ErrorCode::invalid_argument,
                        "stdin: truncated frame {}: got {} of {} bytes (check -s and --pix-fmt)",
                        sequence, done, buffer.size());
    }
    return std::span<const std::byte>(buffer);
  }

 private:
  std::optional<TestPattern> pattern_;
  std::unique_ptr<av::Source> ffmpeg_;
  std::optional<int64_t> pts_ns_;
  // Three: the input is read or decoded into one while the other two may still be on the
  // wire (verbs reads them until wait_idle says it is done).
  std::array<std::vector<std::byte>, 3> buffers_;
};

// Opens an FFmpeg input and returns the format it gives; nullptr for the test pattern and
// stdin. Fills `format` and decides live or not (a capture input is live unless --no-drop).
// A build without FFmpeg fails here, the codecs layer naming what is missing.
Result<std::unique_ptr<av::Source>> open_ffmpeg(Options& o) {
  if (!ffmpeg_input(o)) return nullptr;
  av::SourceOptions so;
  so.input = o.input;
  so.input_format = o.input_format;
  so.loop = o.loop;
  if (o.size_given) so.width = o.width, so.height = o.height;
  if (o.rate_given) so.frame_rate = o.rate;
  if (o.pix_fmt_given) so.pixel_format = o.pix_fmt;
  auto source = av::Source::open(so);
  if (!source) return Unexpected(source.error());
  const auto& f = (*source)->format();
  o.width = f.width;
  o.height = f.height;
  o.rate = f.frame_rate;
  o.pix_fmt = f.pixel_format;
  if (!o.realtime && !o.no_drop && (*source)->live()) o.realtime = true;
  log().info("[send] input: {}", (*source)->describe());
  return std::move(*source);
}

int run(Options o) {
  auto ffmpeg = open_ffmpeg(o);
  if (!ffmpeg) {
    log().error("rdmavideo-send: {}", ffmpeg.error().message());
    return 1;
  }
  // A capture device delivers frames at its own pace; the test pattern, stdin, lavfi and a
  // file sent with --realtime are paced here.
  const bool paced_here = o.realtime && !(*ffmpeg && (*ffmpeg)->paced_by_input());
  auto format = proto::make_stream_start(o.pix_fmt, o.width, o.height, o.rate);
  if (!format) {
    log().error("rdmavideo-send: {}", format.error().message());
    return 2;
  }
  format->name = o.name;
  if (o.realtime) format->flags |= proto::kStreamLive;
  if (o.checksum) format->flags |= proto::kStreamChecksums;
  if (o.testsrc) format->flags |= proto::kStreamTestPattern;
  Source source(o, *format, std::move(*ffmpeg));

  ConnectOptions connect_options;
  connect_options.endpoint = o.connect;
  connect_options.rdma_device = o.rdma_device;
  connect_options.max_frame_bytes = format->layout.frame_bytes;
  connect_options.stop = &g_stop;  // as in rdmavideo-recv: only SIGINT/SIGTERM stop
  auto connection = connect(o.transport, connect_options);
  if (!connection) {
    log().error("{}", connection.error().message());
    return 1;
  }
  auto& conn = **connection;
  const std::string who = fmt::format("send {} \"{}\"", conn.peer(), o.name);
  log().info("[{}] connected over {}{}; {}x{} {} at {} fps, {} bytes a frame, {}", who,
             to_string(conn.kind()), o.transport == TransportKind::automatic ? " (auto)" : "",
             o.width, o.height, name(o.pix_fmt), to_string(o.rate), format->layout.frame_bytes,
             o.realtime ? "real time, dropping when the receiver is behind" : "no drops");
  auto ring = conn.start_stream(*format);
  if (!ring) {
    log().error("{}", ring.error().message());
    return 1;
  }
  log().debug("[{}] ring of {} slots", who, ring->slot_count);

  stats::TransferStats stats;
  stats::StatusLine status(fmt::format("[{}]", who), !o.quiet);
  FrameSender sender(conn, {o.realtime, o.checksum}, stats, &g_stop);
  const auto start = Clock::now();
  const double period_s = 1.0 / o.rate.value();
  int exit_code = 0;
  bool receiver_ended = false;
  uint64_t sequence = 0;
  for (; !g_stop; ++sequence) {
    if (o.frames && sequence >= *o.frames) break;
    const auto now = Clock::now();
    if (o.duration_s) {
      // Paced: frames due before the end (60 fps for 5 s is 300 frames). Otherwise: time.
      const double t = paced_here ? period_s * static_cast<double>(sequence)
                                  : std::chrono::duration<double>(now - start).count();
      if (t >= *o.duration_s - 1e-9) break;
    }
    auto ready = now;
    if (paced_here) {
      ready = start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(period_s * static_cast<double>(sequence)));
      // Sleep in slices so the connection is serviced even at very low frame rates.
      while (Clock::now() < ready && !g_stop) {
        std::this_thread::sleep_until(std::min(ready, Clock::now() + std::chrono::milliseconds(250)));
        if (auto ok = conn.keep_alive(); !ok) {
          status.finish();
          log().error("{}", ok.error().message());
          exit_code = 1;
          break;
        }
      }
      if (exit_code != 0) break;
    }
    if (auto ok = conn.wait_idle(source.buffer_for(sequence)); !ok) {
      status.finish();
      log().error("{}", ok.error().message());
      exit_code = 1;
      break;
    }
    auto frame = source.next(sequence, [&] { return conn.keep_alive(); });
    if (!frame) {
      log().error("rdmavideo-send: {}", frame.error().message());
      exit_code = 1;
      break;
    }
    if (frame->empty()) break;  // end of input
    const auto pts_ns = source.pts_ns().value_or(
        static_cast<int64_t>(static_cast<double>(sequence) * period_s * 1e9));
    auto outcome = sender.send(*frame, sequence, pts_ns, ready);
    if (!outcome) {
      status.finish();
      log().error("{}", outcome.error().message());
      exit_code = 1;
      break;
    }
    if (*outcome == FrameSender::Outcome::receiver_ended) {
      receiver_ended = true;
      break;
    }
    if (*outcome == FrameSender::Outcome::stopped) break;
    status.maybe_print(stats);
  }
  status.finish();
  // Also after a bad input frame: the receiver keeps every frame sent so far.
  if (auto ok = conn.end_stream({stats.frames, stats.dropped}); !ok && exit_code == 0) {
    log().error("{}", ok.error().message());
    exit_code = 1;
  }
  stats.finish();
  if (receiver_ended) log().info("[{}] the receiver ended the stream", who);
  const stats::StreamFacts facts{std::string(to_string(conn.kind())), o.width, o.height,
                                 std::string(name(o.pix_fmt)), to_string(o.rate), conn.peer()};
  log().info("[{}] sent {}", who, stats::summary_text(stats, facts));
  if (!o.stats_json.empty() && !stats::write_summary(o.stats_json, stats, facts)) exit_code = 1;
  return exit_code;
}

}  // namespace
}  // namespace rdmavideo::sender

int main(int argc, char** argv) {
  using namespace rdmavideo::sender;
  Options options;
  if (auto code = parse_options(argc, argv, options)) return *code;
  rdmavideo::cli::install_stop_signals();
  return rdmavideo::cli::run_main("rdmavideo-send", [&] { return run(options); });
}
