// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/stream_writer.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <csignal>
#include <system_error>

#include "rdmavideo/av/audio_file.hpp"
#include "rdmavideo/av/recorder.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/media/output_template.hpp"
#include "rdmavideo/signals.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::media {
namespace {
constexpr uint64_t kMaxVerifyErrors = 10;  // logged per stream; all are counted

// What stream `info`'s recording holds beside its ring, for frames of `format`, in its budget.
Result<RecordingMemory> reserve_recording(const RecordingOptions& options,
                                          const proto::StreamStart& format,
                                          const StreamInfo& info) {
  return Recording::reserve_memory(options, format, *info.budget,
                                   fmt::format("stream {}", info.number));
}
}  // namespace

Result<std::unique_ptr<StreamWriter>> StreamWriter::create(const WriterOptions& options,
                                                           StreamInfo info,
                                                           std::shared_ptr<StreamOutput> output,
                                                           Monitor* monitor,
                                                           std::function<void()> release_monitor) {
  UniqueFd abort_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!abort_fd) {
    // Without it a stop could not reach a write waiting on the output: refuse the stream.
    return Unexpected(system_error("the stream's writer: eventfd", errno));
  }
  // A recording's encoder and muxer hold memory beside the ring: reserved now, so a stream
  // whose recording would not fit is refused at its StreamStart, as a ring that does not is.
  RecordingMemory memory;
  if (info.budget && info.format && Recording::is_recording_path(options.output)) {
    auto reserved =
        reserve_recording(recording_options(options, options.output), *info.format, info);
    if (!reserved) return Unexpected(reserved.error());
    memory = std::move(*reserved);
  }
  try {
    auto writer =
        std::make_unique<StreamWriter>(options, std::move(info), std::move(output), monitor,
                                       std::move(release_monitor), std::move(abort_fd));
    writer->recording_memory_ = std::move(memory);  // before any frame: none can have come
    return writer;
  } catch (const std::system_error& e) {  // its thread could not start (the thread limit)
    return make_error(ErrorCode::resource, "the stream's writer: cannot start its thread: {}",
                      e.what());
  }
}

StreamWriter::StreamWriter(const WriterOptions& options, StreamInfo info,
                           std::shared_ptr<StreamOutput> output, Monitor* monitor,
                           std::function<void()> release_monitor, UniqueFd abort_fd)
    : options_(options),
      info_(std::move(info)),
      who_(info_.name.empty() ? fmt::format("recv {}", info_.peer)
                              : fmt::format("recv {} \"{}\"", info_.peer, printable(info_.name))),
      output_(std::move(output)),
      monitor_(monitor),
      release_monitor_(std::move(release_monitor)),
      verifier_(info_.budget),
      abort_fd_(std::move(abort_fd)) {
  records_audio_ = Recording::holds_audio(options_.output);
  wav_audio_ = !options_.audio_output.empty();
  takes_audio_ = records_audio_ || wav_audio_ || monitor_;
  thread_ = std::thread([this] { run(); });
}

// Only a wait on the output gives up (a FIFO nobody opens, a pipe nobody reads: the output
// polls this eventfd); a file or a pipe that is read goes on, and the stream's frames are all
// written before finish() returns.
void StreamWriter::abort() {
  const uint64_t one = 1;
  if (abort_fd_) (void)!::write(abort_fd_.get(), &one, sizeof one);
  cv_.notify_one();
}

StreamWriter::~StreamWriter() {
  stop_thread();
  if (release_monitor_) {
    if (monitor_) monitor_->end_audio();
    release_monitor_();
  }
}

void StreamWriter::push(Item item) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
}

void StreamWriter::frame(FrameLease frame) { push(std::move(frame)); }

void StreamWriter::audio_started(const AudioTrack& track) { push(track); }

bool StreamWriter::audio(AudioPacket packet) {
  if (!takes_audio_) {
    if (!audio_refusal_said_) {
      audio_refusal_said_ = true;
      log().warn(
          "[{}] audio dropped: {} holds none (record to .mov, .mkv, .mp4 or .nut, or set {} "
          "to a .wav file{})",
          who_, options_.output.empty() ? "no " + options_.names.output : options_.output,
          options_.names.audio_output,
          options_.monitored ? "" : ", or " + options_.names.monitor + " to play it");
    }
    return false;
  }
  push(std::move(packet));
  return true;
}

void StreamWriter::audio_ended(uint32_t track) { push(AudioEnd{track}); }

std::optional<Error> StreamWriter::failure() const {
  std::lock_guard lock(mu_);
  return error_;
}

void StreamWriter::stop_thread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

Result<void> StreamWriter::finish(const StreamEnd&) {
  stop_thread();  // every queued frame handled first
  // Closing finalises a recording whatever ended the stream: what arrived stays playable.
  Result<void> closed;
  if (raw_) closed = raw_->close();
  for (auto& file : audio_files_) {
    if (!file) continue;
    auto done = file->finish();
    if (done) {
      log().info("[{}] {} written", file->path(), file->describe());
    } else if (closed) {
      closed = done;
    }
  }
  if (!audio_files_.empty()) note_audio();
  if (recording_) {
    closed = recording_->close();
    note_audio();
    if (closed) {
      log().info("[record {}] recorded {} frames{}", recording_->path(), recording_->frames(),
                 tracks_.empty() || !records_audio_
                     ? ""
                     : fmt::format(" and {} audio track{}", tracks_.size(),
                                   tracks_.size() == 1 ? "" : "s"));
    }
  }
  if (release_monitor_) {
    if (monitor_) monitor_->end_audio();
    release_monitor_();
    release_monitor_ = nullptr;
  }
  std::optional<Error> error;
  {
    std::lock_guard lock(mu_);
    error = error_;
  }
  // The write failure was logged where it happened; a close failure is new.
  if (!closed) {
    log().error("{}", closed.error().message());
    return closed;
  }
  if (error) return Unexpected(*error);
  const uint64_t failures = output_->checksum_failures;
  if (options_.verify && failures > 0) {
    return make_error(ErrorCode::protocol, "{}: verify: {} frames failed", who_, failures);
  }
  return {};
}

Result<void> StreamWriter::open_output(const FrameLease& first) {
  opened_ = true;
  if (options_.output.empty()) return {};
  std::string path = options_.output;
  if (OutputTemplate::is_template(path)) {
    path =
        OutputTemplate::expand(path, {info_.name, info_.number, info_.peer, first.info().sent_ns});
    auto reserved = OutputTemplate::reserve(path, options_.names.output);
    if (!reserved) return Unexpected(reserved.error());
    path = *reserved;
  }
  {
    std::lock_guard lock(output_->mu);
    output_->path = path;
  }
  if (Recording::is_recording_path(path)) {
    auto options = recording_options(options_, path, abort_fd_.get());
    if (info_.budget && !recording_memory_.fits(first.format())) {
      // The format changed before the first frame: what the recording holds is reserved anew.
      recording_memory_ = {};
      auto reserved = reserve_recording(options, first.format(), info_);
      if (!reserved) return Unexpected(reserved.error());
      recording_memory_ = std::move(*reserved);
    }
    if (recording_memory_.held) options.threads = recording_memory_.threads;
    recording_.emplace(std::move(options));
    if (records_audio_) {
      for (size_t i = 0; i < tracks_.size(); ++i) add_track(i);
    }
    note_audio();
    return recording_->open(first);
  }
  auto raw = RawOutput::open(path, abort_fd_.get(), options_.names.output);
  if (!raw) return Unexpected(raw.error());
  raw_.emplace(std::move(*raw));
  log().info("[{}] writing raw frames to {}", who_, path);
  return {};
}

void StreamWriter::fail(const Error& error) {
  std::lock_guard lock(mu_);
  if (!error_) error_ = error.context(who_);
}

// The frame's ring epoch's verifier (StreamVerifier: a kernel where the frame is in GPU memory
// and the GPU can, else the CPU); what it chose is said once an epoch.
void StreamWriter::prepare_verifier(const FrameLease& frame) {
  std::string said;
  if (auto ok = verifier_.prepare(frame.format(), frame.cuda_device(), &said); !ok) {
    return fail(ok.error());  // the stream fails: failure() says why
  }
  if (!said.empty()) log().info("[{}] verify: {}", who_, said);
  std::lock_guard lock(output_->mu);
  output_->verify = verifier_.where();
}

std::optional<std::string> StreamWriter::verify(const FrameLease& frame) {
  if (verifier_.where().empty()) return std::nullopt;  // the budget refused it
  if (verifier_.on_gpu()) {
    bool downloaded = false;
    auto problem =
        verifier_.verify_on_gpu(frame.info(), cuda::address(frame.data().data()), &downloaded);
    if (downloaded) ++output_->downloads;
    if (!problem) {
      fail(problem.error());
      return std::nullopt;
    }
    return *problem;
  }
  return verifier_.verify_on_host(frame.info(), frame.data());
}

void StreamWriter::handle(FrameLease& frame) {
  if (options_.verify) prepare_verifier(frame);
  std::optional<std::string> problem;
  if (options_.verify && verifier_.on_gpu()) problem = verify(frame);
  if (!opened_) {
    first_sent_ns_ = frame.info().sent_ns;
    if (auto ok = open_output(frame); !ok) fail(ok.error());
  }
  // Writing and showing read frames with the CPU, as verifying on it does: a download first.
  // An NVENC recording takes them where they are.
  bool output_on_host = !options_.output.empty();
  if (recording_ && frame.memory_kind() == memory::MemoryKind::cuda && !monitor_) {
    output_on_host = !recording_->takes_gpu_frames();
  }
  const bool needs_host = output_on_host || monitor_ || (options_.verify && !verifier_.on_gpu());
  if (frame.memory_kind() == memory::MemoryKind::cuda && needs_host) {
    auto host = std::move(frame).to_host();
    if (!host) return fail(host.error());
    ++output_->downloads;
    frame = std::move(*host);
  }
  const auto& format = frame.format();
  const int64_t pts_ns = frame.info().pts_ns;  // the frame may be moved into the recording
  const Rational rate = format.frame_rate;
  if (options_.verify && !verifier_.on_gpu()) problem = verify(frame);
  if (problem && output_->checksum_failures++ < kMaxVerifyErrors) {
    log().error("[{}] verify: {}", who_, *problem);
  }
  bool failed;
  {
    std::lock_guard lock(mu_);
    failed = error_.has_value();
  }
  if (!failed) {
    Result<void> written;
    if (raw_) written = raw_->write(format, frame.data());
    if (written && recording_) {
      // Without a window to feed, the encoder may read the frame in its ring slot and return
      // the slot when it is done; with one, it records a copy and the window gets the slot.
      written = monitor_ ? recording_->write_copy(frame) : recording_->write(std::move(frame));
      output_->encode_speed = recording_->speed();
      output_->encode_gpu_ms = recording_->gpu_ms();
    }
    if (!written) {
      log().error("{}", written.error().message());
      std::lock_guard lock(mu_);
      error_ = written.error().context(who_);
    } else if (raw_ || recording_) {
      ++output_->written;
    }
    if (written && wav_audio_) place_frame(rate, pts_ns);
  }
  // With a monitor the recording took a copy above, so the frame is still here.
  if (monitor_ && frame) monitor_->offer(std::move(frame));  // NOLINT(bugprone-use-after-move)
  if (!pending_audio_.empty()) flush_pending_audio();
}

void StreamWriter::handle_audio(Item& item) {
  // The window plays the stream's first track as it comes; a recording places every track.
  if (monitor_) {
    if (const auto* track = std::get_if<AudioTrack>(&item); track && track->index == 0) {
      monitor_->start_audio(track->format);
    } else if (const auto* packet = std::get_if<AudioPacket>(&item); packet && packet->track == 0) {
      monitor_->play_audio(packet->pts_ns, packet->samples, packet->data);
    } else if (const auto* end = std::get_if<AudioEnd>(&item); end && end->track == 0) {
      monitor_->end_audio();
    }
  }
  if (records_audio_ || wav_audio_) record_audio(item);
}

void StreamWriter::record_audio(Item& item) {
  if (auto* track = std::get_if<AudioTrack>(&item)) {
    tracks_.push_back(*track);
    recorded_track_.emplace_back();
    audio_files_.emplace_back();
    // Before the first frame the recording is not open yet: open_output() adds the tracks;
    // a .wav opens then too, or at once for a track that starts later.
    if (recording_ && records_audio_) add_track(tracks_.size() - 1);
    if (first_pts_ && wav_audio_) open_audio_file(tracks_.size() - 1);
    return note_audio();
  }
  if (auto* packet = std::get_if<AudioPacket>(&item)) {
    if (!audio_placeable()) {
      pending_audio_.push_back(std::move(*packet));  // waits for the first frame
      return;
    }
    Result<void> ok;
    if (const auto& recorded = recorded_track_.at(packet->track); recorded && recording_) {
      ok = recording_->write_audio(*recorded, packet->pts_ns, packet->samples, packet->data);
    }
    if (auto& file = audio_files_.at(packet->track); ok && file) {
      ok = file->write(packet->pts_ns, packet->samples, packet->data);
    }
    if (!ok) {
      log().error("{}", ok.error().message());
      std::lock_guard lock(mu_);
      if (!error_) error_ = ok.error().context(who_);
    }
    return;
  }
  const uint32_t track = std::get<AudioEnd>(item).track;
  if (recording_ && track < recorded_track_.size() && recorded_track_[track])
    recording_->end_audio(*recorded_track_[track]);
  if (track < audio_files_.size() && audio_files_[track]) audio_files_[track]->end();
}

// --audio-output: where track `index` goes. The first track takes the path (a template as
// --output's, by the stream's first frame); a stream's further tracks take "stem-track2.wav",
// and so on. A file that exists is not replaced when the path is a template.
void StreamWriter::open_audio_file(size_t index) {
  std::string path = OutputTemplate::expand(options_.audio_output,
                                            {info_.name, info_.number, info_.peer, first_sent_ns_});
  if (index > 0) {
    const auto slash = path.rfind('/');
    const auto dot = path.rfind('.');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    path = has_ext ? fmt::format("{}-track{}{}", path.substr(0, dot), index + 1, path.substr(dot))
                   : fmt::format("{}-track{}", path, index + 1);
  }
  if (OutputTemplate::is_template(options_.audio_output)) {
    auto reserved = OutputTemplate::reserve(path, options_.names.audio_output);
    if (!reserved) {
      log().error("[{}] audio track {} not written: {}", who_, index, reserved.error().message());
      return;
    }
    path = *reserved;
  }
  auto file = av::AudioFile::open(path, tracks_[index].format, abort_fd_.get(),
                                  options_.names.audio_output);
  if (!file) {
    log().error("[{}] audio track {} \"{}\" not written: {}", who_, index,
                printable(tracks_[index].format.name), file.error().message());
    return;
  }
  // A track that starts after the first frame is placed on the picture's timeline as it is.
  if (auto ok = (*file)->frame(*first_pts_, frame_rate_); ok && last_pts_ != *first_pts_) {
    ok = (*file)->frame(last_pts_, frame_rate_);
  }
  log().info("[{}] audio track {} to {}", who_, index, path);
  audio_files_[index] = std::move(*file);
}

// A frame was written beside the .wav files: it is their timeline.
void StreamWriter::place_frame(Rational rate, int64_t pts_ns) {
  frame_rate_ = rate;
  last_pts_ = pts_ns;
  if (!first_pts_) {
    first_pts_ = pts_ns;
    for (size_t i = 0; i < tracks_.size(); ++i) open_audio_file(i);
    note_audio();
    return;
  }
  for (auto& file : audio_files_) {
    if (!file) continue;
    if (auto ok = file->frame(pts_ns, rate); !ok) fail(ok.error());
  }
}

void StreamWriter::add_track(size_t index) {
  auto added = recording_->add_audio(tracks_[index].format);
  if (added) {
    recorded_track_[index] = *added;
  } else {
    log().error("[{}] audio track {} \"{}\" not recorded: {}", who_, index,
                printable(tracks_[index].format.name), added.error().message());
  }
}

// Samples can be placed once the picture's timeline has its origin: the recording opened,
// or with --audio-output the first frame written.
bool StreamWriter::audio_placeable() const {
  return records_audio_ ? recording_ && recording_->opened() : first_pts_.has_value();
}

void StreamWriter::flush_pending_audio() {
  if (!audio_placeable()) return;
  std::deque<AudioPacket> pending;
  pending.swap(pending_audio_);
  for (auto& packet : pending) {
    Item item(std::move(packet));
    record_audio(item);
  }
}

void StreamWriter::note_audio() {
  if (!recording_ && !wav_audio_) return;
  std::lock_guard lock(output_->mu);
  output_->audio.resize(tracks_.size());
  for (size_t i = 0; i < tracks_.size(); ++i) {
    auto& t = output_->audio[i];
    t.recorded = recorded_track_[i].has_value() || audio_files_[i] != nullptr;
    t.sample_rate = tracks_[i].format.sample_rate;
    if (audio_files_[i]) {
      const auto st = audio_files_[i]->stats();
      t.silence = st.silence;
      t.trimmed = st.trimmed;
    }
  }
  if (!recording_) return;
  const auto recorded = recording_->audio();
  for (size_t i = 0; i < tracks_.size(); ++i) {
    if (!recorded_track_[i] || *recorded_track_[i] >= recorded.size()) continue;
    output_->audio[i].silence = recorded[*recorded_track_[i]].silence;
    output_->audio[i].trimmed = recorded[*recorded_track_[i]].trimmed;
  }
}

void StreamWriter::run() {
  // SIGINT and SIGTERM are the main thread's; the encoder's threads, started from here,
  // inherit the mask.
  block_stop_signals();
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    if (auto* frame = std::get_if<FrameLease>(&item)) {
      handle(*frame);
    } else {
      handle_audio(item);
    }
  }
  pending_audio_.clear();  // no frame came: nothing to place them against
  output_->cpu_seconds = stats::thread_cpu_seconds();
}

}  // namespace rdmavideo::media
