// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send: reads or generates frames and sends them into a receiver's ring, through a
// SenderSession that lends it frame buffers, paces it, applies the live/no-drop policy and
// keeps the connection alive.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "cli.hpp"
#include "options.hpp"
#include "rdmavideo/av/source.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/sender_session.hpp"
#include "rdmavideo/test_pattern.hpp"

namespace rdmavideo::sender {
namespace {

using Clock = std::chrono::steady_clock;
const std::atomic<bool>& g_stop = cli::stop_requested();  // SIGINT or SIGTERM arrived

// Buffers the session lends for decoded or read frames: one being filled while the others may
// still be on the wire (verbs reads them until their writes complete).
constexpr uint32_t kInputBuffers = 3;

// Where frames come from: the test pattern (rendered once into the session's buffers, one
// per phase, and stamped per frame), raw frames on stdin, or an FFmpeg input.
class Source {
 public:
  Source(const Options& options, std::unique_ptr<av::Source> ffmpeg)
      : testsrc_(options.testsrc), ffmpeg_(std::move(ffmpeg)) {}

  uint32_t pool_buffers(const proto::StreamStart& format) const {
    return testsrc_ ? TestPattern::phase_count(format.layout.frame_bytes) : kInputBuffers;
  }

  // Renders the pattern into the pool, once.
  Result<void> prepare(SenderSession& session, const proto::StreamStart& format) {
    format_ = format;
    if (!testsrc_) return {};
    for (uint32_t phase = 0; phase < pool_buffers(format); ++phase) {
      auto buffer = session.acquire_buffer(phase);
      if (!buffer) return Unexpected(buffer.error());
      TestPattern::render_phase(format, phase, buffer->bytes());
    }
    return {};
  }

  // The buffer frame `sequence` goes in: the pattern's phase, or any free one.
  Result<FrameBuffer> buffer_for(SenderSession& session, uint64_t sequence) {
    if (testsrc_) return session.acquire_buffer(sequence % pool_buffers(format_));
    return session.acquire_buffer();
  }

  // Fills `buffer` with frame `sequence`: false at the end of the input; an error for a
  // truncated frame.
  Result<bool> fill(FrameBuffer& buffer, uint64_t sequence) {
    if (testsrc_) {
      TestPattern::stamp(format_, buffer.bytes(), sequence);
      return true;
    }
    if (ffmpeg_) {
      auto info = ffmpeg_->read_frame(buffer.bytes());
      if (!info) return Unexpected(info.error());
      if (!*info) return false;
      pts_ns_ = (*info)->pts_ns;
      return true;
    }
    return read_stdin(buffer.bytes(), sequence);
  }

  // The input's presentation time of the frame fill() gave last, where it has one.
  std::optional<int64_t> pts_ns() const { return pts_ns_; }

 private:
  Result<bool> read_stdin(std::span<std::byte> buffer, uint64_t sequence) {
    size_t done = 0;
    while (done < buffer.size()) {
      // Poll in slices so a stop is noticed while stdin is quiet.
      pollfd pfd{STDIN_FILENO, POLLIN, 0};
      const int ready = poll(&pfd, 1, 250);
      if (g_stop) return false;
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
      const ssize_t n = read(STDIN_FILENO, buffer.data() + done, buffer.size() - done);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        return Unexpected(system_error("stdin: read", errno));
      }
      done += static_cast<size_t>(n);
    }
    if (done == 0) return false;
    if (done < buffer.size()) {
      return make_error(ErrorCode::invalid_argument,
                        "stdin: truncated frame {}: got {} of {} bytes (check -s and --pix-fmt)",
                        sequence, done, buffer.size());
    }
    return true;
  }

  bool testsrc_;
  std::unique_ptr<av::Source> ffmpeg_;
  proto::StreamStart format_;
  std::optional<int64_t> pts_ns_;
};

// Opens an FFmpeg input and returns the format it gives; nullptr for the test pattern and
// stdin. Fills `o`'s format and decides live or not (a capture input is live unless
// --no-drop). A build without FFmpeg fails here, the codecs layer naming what is missing.
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
    return cli::kExitFailed;
  }
  // A capture device delivers frames at its own pace; the test pattern, stdin, lavfi and a
  // file sent with --realtime are paced here.
  const bool paced_here = o.realtime && !(*ffmpeg && (*ffmpeg)->paced_by_input());
  auto format = proto::make_stream_start(o.pix_fmt, o.width, o.height, o.rate);
  if (!format) {
    log().error("rdmavideo-send: {}", format.error().message());
    return cli::kExitUsage;
  }
  format->name = o.name;
  if (o.realtime) format->flags |= proto::kStreamLive;
  if (o.checksum) format->flags |= proto::kStreamChecksums;
  if (o.testsrc) format->flags |= proto::kStreamTestPattern;
  Source source(o, std::move(*ffmpeg));

  SenderSessionOptions so;
  so.transport = o.transport;
  so.connect.endpoint = o.connect;
  so.connect.rdma_device = o.rdma_device;
  so.connect.key = o.key;
  so.connect.max_frame_bytes = format->layout.frame_bytes;
  so.connect.stop = &g_stop;  // only SIGINT/SIGTERM stop a write; other signals do not
  so.policy = {o.realtime, o.checksum};
  so.interrupt = &g_stop;
  auto connected = SenderSession::connect(so);
  if (!connected) {
    log().error("{}", connected.error().message());
    return cli::kExitFailed;
  }
  SenderSession& session = **connected;
  const std::string who = fmt::format("send {} \"{}\"", session.peer(), o.name);
  log().info("[{}] connected over {}{}; {}x{} {} at {} fps, {} bytes a frame, {}", who,
             to_string(session.kind()), o.transport == TransportKind::automatic ? " (auto)" : "",
             o.width, o.height, name(o.pix_fmt), to_string(o.rate), format->layout.frame_bytes,
             o.realtime ? "real time, dropping when the receiver is behind" : "no drops");
  auto ring = session.start_stream(*format, source.pool_buffers(*format));
  if (!ring) {
    log().error("{}", ring.error().message());
    return cli::kExitFailed;
  }
  log().debug("[{}] ring of {} slots", who, ring->slot_count);
  if (auto ok = source.prepare(session, *format); !ok) {
    log().error("rdmavideo-send: {}", ok.error().message());
    return cli::kExitFailed;
  }

  stats::StatusLine status(fmt::format("[{}]", who), !o.quiet);
  const auto start = Clock::now();
  const double period_s = 1.0 / o.rate.value();
  int exit_code = 0;
  bool receiver_ended = false;
  auto failed = [&](const Error& error) {
    status.finish();
    log().error("{}", error.message());
    exit_code = cli::kExitFailed;
  };
  for (uint64_t sequence = 0; !g_stop; ++sequence) {
    if (o.frames && sequence >= *o.frames) break;
    if (o.duration_s) {
      // Paced: frames due before the end (60 fps for 5 s is 300 frames). Otherwise: time.
      const double t = paced_here ? period_s * static_cast<double>(sequence)
                                  : std::chrono::duration<double>(Clock::now() - start).count();
      if (t >= *o.duration_s - 1e-9) break;
    }
    auto ready = Clock::now();
    if (paced_here) {
      auto due = session.pace(sequence);
      if (!due) {
        failed(due.error());
        break;
      }
      if (!*due) break;  // stopped
      ready = **due;
    }
    auto buffer = source.buffer_for(session, sequence);
    if (!buffer) {
      failed(buffer.error());
      break;
    }
    auto filled = source.fill(*buffer, sequence);
    if (!filled) {
      failed(Error(filled.error().code(), "rdmavideo-send: " + filled.error().message()));
      break;
    }
    if (!*filled) break;  // end of input
    const auto pts_ns = source.pts_ns().value_or(
        static_cast<int64_t>(static_cast<double>(sequence) * period_s * 1e9));
    auto outcome = session.submit(*buffer, {sequence, pts_ns, ready});
    if (!outcome) {
      failed(outcome.error());
      break;
    }
    if (*outcome == SenderSession::Outcome::receiver_ended) {
      receiver_ended = true;
      break;
    }
    if (*outcome == SenderSession::Outcome::interrupted) break;
    if (status.due()) status.maybe_print(session.stats());
  }
  status.finish();
  // Also after a bad input frame: the receiver keeps every frame sent so far.
  if (auto ok = session.end_stream(); !ok && exit_code == 0) failed(ok.error());
  if (receiver_ended || session.receiver_ended()) {
    log().info("[{}] the receiver ended the stream", who);
  }
  const auto stats = session.stats();
  const stats::StreamFacts facts{std::string(to_string(session.kind())), o.width, o.height,
                                 std::string(name(o.pix_fmt)), to_string(o.rate), session.peer()};
  log().info("[{}] sent {}", who, stats::summary_text(stats, facts));
  if (!o.stats_json.empty() && !stats::write_summary(o.stats_json, stats, facts)) {
    exit_code = cli::kExitFailed;
  }
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
