// SPDX-License-Identifier: Apache-2.0
// The C API's receiver: a ReceiverService whose sinks queue each stream's frames (still in
// their ring slots) and audio for the caller to take, in arrival order.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "c_api.hpp"
#include "rdmavideo/checksum.hpp"
#include "rdmavideo/format.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/receiver_service.hpp"

using namespace rdmavideo;

struct rdmavideo_frame {
  FrameLease lease;
  uint64_t stream = 0;
  std::string pix_fmt;
};

struct rdmavideo_chunk {
  AudioPacket packet;
  uint64_t stream = 0;
  proto::AudioStart format;
};

namespace rdmavideo::c_api {
namespace {

using Clock = std::chrono::steady_clock;

// What every stream's sink hands to the caller, and how far the streams have got.
struct Queues {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::unique_ptr<rdmavideo_frame>> frames;  // each holds its ring slot
  std::deque<std::unique_ptr<rdmavideo_chunk>> audio;   // each holds its place in the budget
  uint64_t taken = 0;                                   // streams admitted
  uint64_t finished = 0;                                // of them, finished
  bool stopped = false;
  bool verify = false;
  std::atomic<uint64_t> checksum_failures{0};
};

class QueueSink final : public StreamSink {
 public:
  QueueSink(std::shared_ptr<Queues> queues, uint64_t stream)
      : queues_(std::move(queues)), stream_(stream) {}

  void frame(FrameLease lease) override {
    const auto& info = lease.info();
    if (queues_->verify && (info.flags & proto::kFrameHasChecksum) != 0 &&
        lease.memory_kind() != memory::MemoryKind::cuda &&
        frame_checksum(lease.data()) != info.checksum) {
      queues_->checksum_failures.fetch_add(1, std::memory_order_relaxed);
    }
    auto queued = std::make_unique<rdmavideo_frame>();
    queued->pix_fmt = std::string(name(lease.format().pixel_format));
    queued->lease = std::move(lease);
    queued->stream = stream_;
    std::lock_guard lock(queues_->mu);
    queues_->frames.push_back(std::move(queued));
    queues_->changed.notify_all();
  }

  Result<void> finish(const StreamEnd& end) override {
    (void)end;
    std::lock_guard lock(queues_->mu);
    ++queues_->finished;
    queues_->changed.notify_all();
    return {};
  }

  void audio_started(const AudioTrack& track) override { tracks_[track.index] = track.format; }

  bool audio(AudioPacket packet) override {
    const auto track = tracks_.find(packet.track);
    if (track == tracks_.end()) return false;
    auto queued = std::make_unique<rdmavideo_chunk>();
    queued->packet = std::move(packet);
    queued->stream = stream_;
    queued->format = track->second;
    std::lock_guard lock(queues_->mu);
    queues_->audio.push_back(std::move(queued));
    queues_->changed.notify_all();
    return true;
  }

 private:
  std::shared_ptr<Queues> queues_;
  uint64_t stream_;
  std::map<uint32_t, proto::AudioStart> tracks_;  // by AudioTrack::index
};

Result<ReceiverServiceOptions> service_options(const rdmavideo_receiver_config& c,
                                               const std::shared_ptr<Queues>& queues) {
  ReceiverServiceOptions o;
  if (!c.listen || !*c.listen) {
    return make_error(ErrorCode::invalid_argument, "listen: none given (\"0.0.0.0:5000\")");
  }
  auto endpoint = parse_endpoint(c.listen, true);
  if (!endpoint) return Unexpected(endpoint.error().context("listen"));
  o.listen.endpoint = *endpoint;
  auto common = settings(c.transport, c.memory, c.key_file);
  if (!common) return Unexpected(common.error());
  o.transport = common->transport;
  o.memory = common->memory;
  o.listen.key = std::move(common->key);
  if (c.max_streams == 0) return make_error(ErrorCode::invalid_argument, "max_streams 0");
  o.max_streams = c.max_streams;
  if (c.ring_slots == 0 || c.ring_slots > proto::kMaxRingSlots) {
    return make_error(ErrorCode::invalid_argument, "ring_slots {} (1..{})", c.ring_slots,
                      proto::kMaxRingSlots);
  }
  o.listen.ring_size = c.ring_slots;
  if (c.max_memory != 0) o.max_memory = c.max_memory;
  o.stream_limit = c.stream_limit;
  o.sink_factory = [queues](const StreamInfo& info) -> Result<std::unique_ptr<StreamSink>> {
    {
      std::lock_guard lock(queues->mu);
      ++queues->taken;
    }
    return std::make_unique<QueueSink>(queues, info.number);
  };
  return o;
}

}  // namespace
}  // namespace rdmavideo::c_api

struct rdmavideo_receiver {
  std::shared_ptr<c_api::Queues> queues;
  std::unique_ptr<ReceiverService> service;
  double cpu_at_start = stats::process_cpu_seconds();

  // Every stream taken has finished and no sender is connected (or the receiver stopped).
  bool ended() const {
    return queues->stopped ||
           (queues->taken > 0 && queues->finished == queues->taken &&
            service->connections_in_handshake() == 0 && service->connections_pending() == 0);
  }

  // Waits for the next item of `queue`, as next_frame() and next_audio() do.
  template <class Item>
  rdmavideo_status next(std::deque<std::unique_ptr<Item>>& queue, int32_t timeout_ms, Item** out) {
    *out = nullptr;
    const auto deadline = c_api::Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock lock(queues->mu);
    for (;;) {
      if (!queue.empty()) {
        *out = queue.front().release();
        queue.pop_front();
        return RDMAVIDEO_OK;
      }
      if (ended()) return RDMAVIDEO_ENDED;
      // In slices: a sender that connects or goes away between streams wakes nobody.
      auto until = c_api::Clock::now() + std::chrono::milliseconds(100);
      if (timeout_ms >= 0) {
        if (c_api::Clock::now() >= deadline) return RDMAVIDEO_TIMEOUT;
        until = std::min(until, deadline);
      }
      queues->changed.wait_until(lock, until);
    }
  }
};

extern "C" {

rdmavideo_status rdmavideo_receiver_create(const rdmavideo_receiver_config* config,
                                           rdmavideo_receiver** receiver) {
  return c_api::guarded("rdmavideo_receiver_create", [&] {
    if (!config || !receiver) return c_api::invalid("rdmavideo_receiver_create: a NULL");
    *receiver = nullptr;
    const auto c = c_api::read_struct(*config, rdmavideo_receiver_config_init);
    auto queues = std::make_shared<c_api::Queues>();
    queues->verify = c.verify != 0;
    auto options = c_api::service_options(c, queues);
    if (!options) return c_api::fail(options.error());
    auto service = ReceiverService::start(std::move(*options));
    if (!service) return c_api::fail(service.error());
    auto made = std::make_unique<rdmavideo_receiver>();
    made->queues = std::move(queues);
    made->service = std::move(*service);
    *receiver = made.release();
    return RDMAVIDEO_OK;
  });
}

uint16_t rdmavideo_receiver_port(const rdmavideo_receiver* receiver) {
  return receiver ? receiver->service->local_endpoint().port : 0;
}

rdmavideo_status rdmavideo_receiver_next_frame(rdmavideo_receiver* receiver, int32_t timeout_ms,
                                               rdmavideo_frame** frame) {
  return c_api::guarded("rdmavideo_receiver_next_frame", [&] {
    if (!receiver || !frame) return c_api::invalid("rdmavideo_receiver_next_frame: a NULL");
    return receiver->next(receiver->queues->frames, timeout_ms, frame);
  });
}

const void* rdmavideo_frame_data(const rdmavideo_frame* frame) {
  return frame ? frame->lease.data().data() : nullptr;
}

uint64_t rdmavideo_frame_size(const rdmavideo_frame* frame) {
  return frame ? frame->lease.data().size() : 0;
}

rdmavideo_memory rdmavideo_frame_memory(const rdmavideo_frame* frame) {
  return frame && frame->lease.memory_kind() == memory::MemoryKind::cuda ? RDMAVIDEO_MEMORY_CUDA
                                                                         : RDMAVIDEO_MEMORY_HOST;
}

void rdmavideo_frame_format(const rdmavideo_frame* frame, rdmavideo_video_format* format) {
  if (!frame || !format) return;
  const auto& f = frame->lease.format();
  rdmavideo_video_format out{};
  out.struct_size = sizeof(out);
  out.pix_fmt = frame->pix_fmt.c_str();
  out.width = f.width;
  out.height = f.height;
  out.fps_num = f.frame_rate.num;
  out.fps_den = f.frame_rate.den;
  out.colour = nullptr;  // the colour as a name is not kept: the format's own is exact
  out.name = f.name.c_str();
  c_api::write_struct(out, format);
}

void rdmavideo_frame_layout(const rdmavideo_frame* frame, rdmavideo_layout* layout) {
  if (frame && layout) *layout = c_api::layout_of(frame->lease.format());
}

int64_t rdmavideo_frame_pts_ns(const rdmavideo_frame* frame) {
  return frame ? frame->lease.info().pts_ns : 0;
}

uint64_t rdmavideo_frame_sequence(const rdmavideo_frame* frame) {
  return frame ? frame->lease.info().sequence : 0;
}

uint64_t rdmavideo_frame_stream(const rdmavideo_frame* frame) { return frame ? frame->stream : 0; }

void rdmavideo_frame_release(rdmavideo_frame* frame) { delete frame; }

rdmavideo_status rdmavideo_receiver_next_chunk(rdmavideo_receiver* receiver, int32_t timeout_ms,
                                               rdmavideo_chunk** audio) {
  return c_api::guarded("rdmavideo_receiver_next_chunk", [&] {
    if (!receiver || !audio) return c_api::invalid("rdmavideo_receiver_next_chunk: a NULL");
    return receiver->next(receiver->queues->audio, timeout_ms, audio);
  });
}

uint64_t rdmavideo_chunk_stream(const rdmavideo_chunk* audio) { return audio ? audio->stream : 0; }

uint32_t rdmavideo_chunk_track(const rdmavideo_chunk* audio) {
  return audio ? audio->packet.track : 0;
}

void rdmavideo_chunk_format(const rdmavideo_chunk* audio, rdmavideo_audio_format* format) {
  if (!audio || !format) return;
  rdmavideo_audio_format out{};
  out.struct_size = sizeof(out);
  out.sample_format = static_cast<rdmavideo_sample_format>(audio->format.sample_format);
  out.sample_rate = audio->format.sample_rate;
  out.channels = audio->format.channels;
  out.channel_layout = audio->format.channel_layout;
  out.name = audio->format.name.c_str();
  c_api::write_struct(out, format);
}

int64_t rdmavideo_chunk_pts_ns(const rdmavideo_chunk* audio) {
  return audio ? audio->packet.pts_ns : 0;
}

uint32_t rdmavideo_chunk_samples(const rdmavideo_chunk* audio) {
  return audio ? audio->packet.samples : 0;
}

const void* rdmavideo_chunk_data(const rdmavideo_chunk* audio) {
  return audio ? audio->packet.data.data() : nullptr;
}

uint64_t rdmavideo_chunk_size(const rdmavideo_chunk* audio) {
  return audio ? audio->packet.data.size() : 0;
}

void rdmavideo_chunk_release(rdmavideo_chunk* audio) { delete audio; }

rdmavideo_status rdmavideo_receiver_stats(const rdmavideo_receiver* receiver,
                                          rdmavideo_stats* stats) {
  return c_api::guarded("rdmavideo_receiver_stats", [&] {
    if (!receiver || !stats) return c_api::invalid("rdmavideo_receiver_stats: a NULL");
    stats::TransferStats total;
    bool first = true;
    uint64_t streams = 0;
    uint64_t audio_samples = 0;
    for (const auto& report : receiver->service->reports()) {
      total.add(report.stats);
      if (first || report.stats.start < total.start) total.start = report.stats.start;
      first = false;
      ++streams;
      for (const auto& track : report.audio) audio_samples += track.samples;
    }
    const auto folded = receiver->service->folded_streams();
    total.add(folded.stats);
    streams += folded.count;
    rdmavideo_stats out{};
    out.struct_size = sizeof(out);
    out.frames = total.frames;
    out.bytes = total.bytes;
    out.dropped = total.dropped;
    out.checksum_failures = total.checksum_failures +
                            receiver->queues->checksum_failures.load(std::memory_order_relaxed);
    out.seconds = first ? 0.0 : total.seconds();
    out.cpu_seconds = stats::process_cpu_seconds() - receiver->cpu_at_start;
    out.latency_p50_us = static_cast<double>(total.latency.percentile_ns(0.5)) / 1e3;
    out.latency_p99_us = static_cast<double>(total.latency.percentile_ns(0.99)) / 1e3;
    out.audio_samples = audio_samples;
    out.streams = static_cast<uint32_t>(streams);
    c_api::write_struct(out, stats);
    return RDMAVIDEO_OK;
  });
}

void rdmavideo_receiver_stop(rdmavideo_receiver* receiver) {
  if (!receiver) return;
  receiver->service->stop();
  std::lock_guard lock(receiver->queues->mu);
  receiver->queues->stopped = true;
  receiver->queues->changed.notify_all();
}

void rdmavideo_receiver_destroy(rdmavideo_receiver* receiver) {
  if (!receiver) return;
  rdmavideo_receiver_stop(receiver);
  delete receiver;
}

}  // extern "C"
