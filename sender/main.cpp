// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send: reads or generates frames and sends them into a receiver's ring, through a
// SenderSession that lends it frame buffers, paces it, applies the live/no-drop policy and
// keeps the connection alive.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

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
      : testsrc_(options.testsrc), ffmpeg_(std::move(ffmpeg)), memory_device_(options.memory.device) {}

  uint32_t pool_buffers(const proto::StreamStart& format) const {
    return testsrc_ ? TestPattern::phase_count(format.layout.frame_bytes) : kInputBuffers;
  }

  // Renders the pattern into the pool, once (uploaded, where the pool is GPU memory).
  Result<void> prepare(SenderSession& session, const proto::StreamStart& format) {
    format_ = format;
    if (!testsrc_) return {};
    std::vector<std::byte> phase_frame(format.layout.frame_bytes);
    for (uint32_t phase = 0; phase < pool_buffers(format); ++phase) {
      auto buffer = session.acquire_buffer(phase);
      if (!buffer) return Unexpected(buffer.error());
      TestPattern::render_phase(format, phase, phase_frame);
      if (auto ok = buffer->write(phase_frame); !ok) return ok;
    }
    // The stamp is all that changes per frame: it is made here and written over the frame.
    stamp_offset_ = std::min<size_t>(format.layout.planes[0].offset, format.layout.frame_bytes);
    stamp_.resize(std::min(format.layout.frame_bytes - stamp_offset_,
                           TestPattern::stamp_bytes(format.pixel_format)) + stamp_offset_);
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
      TestPattern::stamp(format_, stamp_, sequence);
      auto ok = buffer.write(std::span(stamp_).subspan(stamp_offset_), stamp_offset_);
      if (!ok) return Unexpected(ok.error());
      return true;
    }
    if (ffmpeg_ && buffer.kind() == memory::MemoryKind::cuda) {
      // Decoded by NVDEC, copied on the GPU; decoded on the CPU, uploaded.
      auto device = cuda::Device::shared(memory_device_);
      if (!device) return Unexpected(device.error());
      auto info = ffmpeg_->read_frame_to_gpu(**device, cuda::address(buffer.bytes().data()));
      if (!info) return Unexpected(info.error());
      if (!*info) return false;
      pts_ns_ = (*info)->pts_ns;
      return true;
    }
    // GPU buffers are filled from host memory: read into it, then upload.
    const bool upload = buffer.kind() == memory::MemoryKind::cuda;
    if (upload) staging_.resize(buffer.bytes().size());
    const std::span<std::byte> target = upload ? std::span(staging_) : buffer.bytes();
    Result<bool> filled = true;
    if (ffmpeg_) {
      auto info = ffmpeg_->read_frame(target);
      if (!info) return Unexpected(info.error());
      if (!*info) return false;
      pts_ns_ = (*info)->pts_ns;
    } else {
      filled = read_stdin(target, sequence);
    }
    if (upload && filled && *filled) {
      if (auto ok = buffer.write(target); !ok) return Unexpected(ok.error());
    }
    return filled;
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
  int memory_device_;  // --memory cuda:N
  proto::StreamStart format_;
  std::vector<std::byte> stamp_;    // testsrc: the frame's first bytes, up to the stamp's end
  size_t stamp_offset_ = 0;         // where the stamp starts (plane 0)
  std::vector<std::byte> staging_;  // a frame read for a GPU buffer
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
  so.cuda_decoder = o.hwaccel;
  so.into_gpu = o.memory.kind == memory::MemoryKind::cuda;
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

// Connects, starts the stream and prepares the source's buffers in the session's pool.
Result<std::unique_ptr<SenderSession>> open_session(const Options& o,
                                                    const SenderSessionOptions& so,
                                                    const proto::StreamStart& format,
                                                    Source& source) {
  auto connected = SenderSession::connect(so);
  if (!connected) return Unexpected(connected.error());
  SenderSession& session = **connected;
  log().info("[send {} \"{}\"] connected over {}{}; {}x{} {} at {} fps, {} bytes a frame, {}",
             session.peer(), o.name, to_string(session.kind()),
             o.transport == TransportKind::automatic ? " (auto)" : "", o.width, o.height,
             name(o.pix_fmt), to_string(o.rate), format.layout.frame_bytes,
             o.realtime ? "real time, dropping when the receiver is behind" : "no drops");
  auto ring = session.start_stream(format, source.pool_buffers(format));
  if (!ring) return Unexpected(ring.error());
  log().debug("[send {}] ring of {} slots", session.peer(), ring->slot_count);
  if (auto ok = source.prepare(session, format); !ok) {
    return Unexpected(ok.error().context("rdmavideo-send"));
  }
  return connected;
}

// --reconnect: what is worth another try. A wrong or missing key, or a receiver that cannot
// take this format, will say the same next time.
bool worth_retrying(const Error& error) {
  return error.code() != ErrorCode::auth_failed && error.code() != ErrorCode::unsupported &&
         error.code() != ErrorCode::invalid_argument;
}

// Connects again after `error`, backing off from 0.5 s to 5 s between tries, until it works
// or SIGINT/SIGTERM (nullptr then).
std::unique_ptr<SenderSession> reconnect(const Options& o, const SenderSessionOptions& so,
                                         const proto::StreamStart& format, Source& source,
                                         Error error) {
  auto wait = std::chrono::milliseconds(500);
  for (int attempt = 1; !g_stop; ++attempt) {
    log().warn("[send {}] {}; connecting again in {:.1f} s (--reconnect, try {})",
               o.connect.to_string(), error.message(), wait.count() / 1000.0, attempt);
    const auto until = Clock::now() + wait;
    while (!g_stop && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (g_stop) break;
    auto session = open_session(o, so, format, source);
    if (session) return std::move(*session);
    error = session.error();
    if (!worth_retrying(error)) break;
    wait = std::min(wait * 2, std::chrono::milliseconds(5000));
  }
  if (!g_stop) log().error("{}", error.message());
  return nullptr;
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
  so.memory = o.memory;
  so.gpu_path = o.gpu_path;
  std::unique_ptr<SenderSession> session;
  if (auto opened = open_session(o, so, *format, source)) {
    session = std::move(*opened);
  } else if (o.reconnect && worth_retrying(opened.error())) {
    session = reconnect(o, so, *format, source, opened.error());
    if (!session) return g_stop ? 0 : cli::kExitFailed;
  } else {
    log().error("{}", opened.error().message());
    return cli::kExitFailed;
  }
  std::string who = fmt::format("send {} \"{}\"", session->peer(), o.name);

  stats::TransferStats earlier;  // of connections before this one (--reconnect), added up
  auto run_stats = [&] {
    stats::TransferStats total = session->stats();
    total.add(earlier);
    total.start = earlier.start;
    return total;
  };
  stats::StatusLine status(fmt::format("[{}]", who), !o.quiet);
  const auto start = Clock::now();
  const double period_s = 1.0 / o.rate.value();
  int exit_code = 0;
  bool receiver_ended = false;
  uint32_t reconnects = 0;
  auto failed = [&](const Error& error) {
    status.finish();
    log().error("{}", error.message());
    exit_code = cli::kExitFailed;
  };
  // A connection that failed: with --reconnect, a new one (and a new stream) takes over; the
  // frames a live source produced meanwhile count as dropped. False: stop sending.
  auto recover = [&](const Error& error, uint64_t& sequence) {
    if (!o.reconnect || g_stop || !worth_retrying(error)) {
      failed(error);
      return false;
    }
    status.finish();
    earlier.add(session->stats());
    const auto lost = Clock::now();
    (void)session->end_stream();  // the connection is gone; this only lets it go
    session = reconnect(o, so, *format, source, error);
    if (!session) {
      if (!g_stop) exit_code = cli::kExitFailed;
      return false;
    }
    ++reconnects;
    who = fmt::format("send {} \"{}\"", session->peer(), o.name);
    if (o.realtime) {
      const auto missed = static_cast<uint64_t>(
          std::chrono::duration<double>(Clock::now() - lost).count() / period_s);
      earlier.dropped += missed;
      sequence += missed;
    }
    log().info("[{}] sending again from frame {} (connection {})", who, sequence + 1,
               reconnects + 1);
    return true;
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
      auto due = session->pace(sequence);
      if (!due) {
        if (recover(due.error(), sequence)) continue;
        break;
      }
      if (!*due) break;  // stopped
      ready = **due;
      // Live: a frame due more than two periods ago (the link was busy with earlier ones) is
      // dropped, so a slow link costs frames, not a delay that grows.
      if (o.realtime && Clock::now() - ready > std::chrono::duration<double>(2 * period_s)) {
        session->skip_late(sequence);
        continue;
      }
    }
    auto buffer = source.buffer_for(*session, sequence);
    if (!buffer) {
      if (recover(buffer.error(), sequence)) continue;
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
    auto outcome = session->submit(*buffer, {sequence, pts_ns, ready});
    if (!outcome) {
      if (recover(outcome.error(), sequence)) continue;
      break;
    }
    if (*outcome == SenderSession::Outcome::receiver_ended) {
      receiver_ended = true;
      break;
    }
    if (*outcome == SenderSession::Outcome::interrupted) break;
    if (status.due()) status.maybe_print(run_stats());
  }
  status.finish();
  // Also after a bad input frame: the receiver keeps every frame sent so far.
  if (session) {
    if (auto ok = session->end_stream(); !ok && exit_code == 0) failed(ok.error());
    if (receiver_ended || session->receiver_ended()) {
      log().info("[{}] the receiver ended the stream", who);
    }
  }
  const auto stats = session ? run_stats() : earlier;
  stats::StreamFacts facts{session ? std::string(to_string(session->kind())) : "",
                           o.width, o.height, std::string(name(o.pix_fmt)),
                           to_string(o.rate), session ? session->peer() : ""};
  facts.memory = memory::to_string(o.memory);
  if (session) facts.gpu_path = session->gpu_path();
  log().info("[{}] sent {}{}", who, stats::summary_text(stats, facts),
             reconnects ? fmt::format(", over {} connections", reconnects + 1) : "");
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
