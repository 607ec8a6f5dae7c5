// SPDX-License-Identifier: Apache-2.0
// The C API's sender: a SenderSession, its lent buffers and its stream's format.
#include <memory>
#include <optional>
#include <string>

#include "c_api.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/sender_session.hpp"

using namespace rdmavideo;

struct rdmavideo_sender {
  std::unique_ptr<SenderSession> session;
  std::string name;  // the streams' default name
  uint32_t pool_buffers = 4;
  bool paced = false;
  std::optional<proto::StreamStart> format;
  uint64_t next_sequence = 0;
};

struct rdmavideo_buffer {
  FrameBuffer lent;
};

namespace rdmavideo::c_api {
namespace {

constexpr uint32_t kMaxPoolBuffers = 64;

Result<SenderSessionOptions> session_options(const rdmavideo_sender_config& c) {
  SenderSessionOptions o;
  if (!c.destinations || !*c.destinations) {
    return make_error(ErrorCode::invalid_argument,
                      "destinations: none given (\"host:port\", or several separated by commas)");
  }
  auto endpoints = parse_endpoints(c.destinations);
  if (!endpoints) return Unexpected(endpoints.error().context("destinations"));
  o.destinations = std::move(*endpoints);
  o.connect.endpoint = o.destinations.front();
  auto common = settings(c.transport, c.memory, c.key_file);
  if (!common) return Unexpected(common.error());
  o.transport = common->transport;
  o.memory = common->memory;
  o.connect.key = std::move(common->key);
  if (c.connect_timeout_ms > 0) {
    o.connect.timeouts.connect = std::chrono::milliseconds(c.connect_timeout_ms);
  }
  o.policy.live = c.live != 0;
  o.policy.checksum = c.checksum != 0;
  o.reconnect = c.reconnect != 0;
  o.require_all = c.require_all != 0;
  o.resolve = discovery::receiver_resolver(o.connect.timeouts.connect);  // a receiver's name
  return o;
}

rdmavideo_status outcome_status(SenderSession::Outcome outcome) {
  switch (outcome) {
    case SenderSession::Outcome::sent: return RDMAVIDEO_OK;
    case SenderSession::Outcome::dropped: return RDMAVIDEO_DROPPED;
    case SenderSession::Outcome::receiver_ended: return RDMAVIDEO_ENDED;
    case SenderSession::Outcome::interrupted: break;
  }
  return fail(Error(ErrorCode::system, "the send was interrupted"));
}

rdmavideo_status need_stream(const rdmavideo_sender& s, std::string_view call) {
  if (s.format) return RDMAVIDEO_OK;
  return invalid(fmt::format("{}: the stream has not started (rdmavideo_sender_start)", call));
}

}  // namespace
}  // namespace rdmavideo::c_api

extern "C" {

rdmavideo_status rdmavideo_sender_create(const rdmavideo_sender_config* config,
                                         rdmavideo_sender** sender) {
  return c_api::guarded("rdmavideo_sender_create", [&] {
    if (!config || !sender) return c_api::invalid("rdmavideo_sender_create: a NULL");
    *sender = nullptr;
    const auto c = c_api::read_struct(*config, rdmavideo_sender_config_init);
    if (c.pool_buffers < 2 || c.pool_buffers > c_api::kMaxPoolBuffers) {
      return c_api::invalid(
          fmt::format("pool_buffers {} (2..{})", c.pool_buffers, c_api::kMaxPoolBuffers));
    }
    auto name = c_api::checked_name(c.name ? c.name : "", "name");
    if (!name) return c_api::fail(name.error());
    auto options = c_api::session_options(c);
    if (!options) return c_api::fail(options.error());
    auto session = SenderSession::connect(std::move(*options));
    if (!session) return c_api::fail(session.error());
    auto made = std::make_unique<rdmavideo_sender>();
    made->session = std::move(*session);
    made->name = std::move(*name);
    made->pool_buffers = c.pool_buffers;
    made->paced = c.paced != 0;
    *sender = made.release();
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_start(rdmavideo_sender* sender,
                                        const rdmavideo_video_format* format) {
  return c_api::guarded("rdmavideo_sender_start", [&] {
    if (!sender || !format) return c_api::invalid("rdmavideo_sender_start: a NULL");
    const auto f = c_api::read_struct(*format, rdmavideo_video_format_init);
    auto start = c_api::stream_start(f, sender->name);
    if (!start) return c_api::fail(start.error());
    auto ring = sender->session->start_stream(*start, sender->pool_buffers);
    if (!ring) return c_api::fail(ring.error());
    sender->format = std::move(*start);
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_layout(const rdmavideo_sender* sender, rdmavideo_layout* layout) {
  return c_api::guarded("rdmavideo_sender_layout", [&] {
    if (!sender || !layout) return c_api::invalid("rdmavideo_sender_layout: a NULL");
    if (auto s = c_api::need_stream(*sender, "rdmavideo_sender_layout"); s != RDMAVIDEO_OK)
      return s;
    *layout = c_api::layout_of(*sender->format);
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_lend(rdmavideo_sender* sender, rdmavideo_buffer** buffer) {
  return c_api::guarded("rdmavideo_sender_lend", [&] {
    if (!sender || !buffer) return c_api::invalid("rdmavideo_sender_lend: a NULL");
    *buffer = nullptr;
    if (auto s = c_api::need_stream(*sender, "rdmavideo_sender_lend"); s != RDMAVIDEO_OK) return s;
    auto lent = sender->session->acquire_buffer();
    if (!lent) return c_api::fail(lent.error());
    if (!*lent)
      return c_api::fail(Error(ErrorCode::system, "the wait for a buffer was interrupted"));
    *buffer = new rdmavideo_buffer{std::move(*lent)};
    return RDMAVIDEO_OK;
  });
}

void* rdmavideo_buffer_data(const rdmavideo_buffer* buffer) {
  return buffer ? buffer->lent.bytes().data() : nullptr;
}

uint64_t rdmavideo_buffer_size(const rdmavideo_buffer* buffer) {
  return buffer ? buffer->lent.bytes().size() : 0;
}

rdmavideo_memory rdmavideo_buffer_memory(const rdmavideo_buffer* buffer) {
  return buffer && buffer->lent.kind() == memory::MemoryKind::cuda ? RDMAVIDEO_MEMORY_CUDA
                                                                   : RDMAVIDEO_MEMORY_HOST;
}

rdmavideo_status rdmavideo_sender_submit(rdmavideo_sender* sender, rdmavideo_buffer* buffer,
                                         int64_t pts_ns) {
  std::unique_ptr<rdmavideo_buffer> taken(buffer);  // the caller's no more, whatever happens
  return c_api::guarded("rdmavideo_sender_submit", [&] {
    if (!sender || !taken) return c_api::invalid("rdmavideo_sender_submit: a NULL");
    const uint64_t sequence = sender->next_sequence++;
    FrameMeta meta;
    meta.sequence = sequence;
    if (pts_ns != RDMAVIDEO_PTS_AUTO) meta.pts_ns = pts_ns;
    if (sender->paced) {
      auto due = sender->session->pace(sequence);
      if (!due) return c_api::fail(due.error());
      if (due->what == SenderSession::Pacing::What::late) return RDMAVIDEO_DROPPED;  // counted
      if (due->what == SenderSession::Pacing::What::interrupted) {
        return c_api::fail(
            Error(ErrorCode::system, "the wait for the frame's time was interrupted"));
      }
      meta.ready = due->due;
    }
    auto outcome = sender->session->submit(taken->lent, meta);
    if (!outcome) return c_api::fail(outcome.error());
    return c_api::outcome_status(*outcome);
  });
}

void rdmavideo_sender_discard(rdmavideo_sender* sender, rdmavideo_buffer* buffer) {
  (void)sender;
  delete buffer;  // the lease returns the buffer to the pool
}

rdmavideo_status rdmavideo_sender_send(rdmavideo_sender* sender, const void* data, uint64_t size,
                                       int64_t pts_ns) {
  return c_api::guarded("rdmavideo_sender_send", [&] {
    if (!sender || !data) return c_api::invalid("rdmavideo_sender_send: a NULL");
    if (auto s = c_api::need_stream(*sender, "rdmavideo_sender_send"); s != RDMAVIDEO_OK) return s;
    if (size != sender->format->layout.frame_bytes) {
      return c_api::invalid(fmt::format("rdmavideo_sender_send: {} bytes, and a frame is {}", size,
                                        sender->format->layout.frame_bytes));
    }
    rdmavideo_buffer* buffer = nullptr;
    if (auto s = rdmavideo_sender_lend(sender, &buffer); s != RDMAVIDEO_OK) return s;
    auto written = buffer->lent.write(
        std::span(static_cast<const std::byte*>(data), static_cast<size_t>(size)));
    if (!written) {
      delete buffer;
      return c_api::fail(written.error());
    }
    return rdmavideo_sender_submit(sender, buffer, pts_ns);
  });
}

rdmavideo_status rdmavideo_sender_start_audio(rdmavideo_sender* sender,
                                              const rdmavideo_audio_format* format,
                                              uint32_t* track) {
  return c_api::guarded("rdmavideo_sender_start_audio", [&] {
    if (!sender || !format || !track) return c_api::invalid("rdmavideo_sender_start_audio: a NULL");
    const auto f = c_api::read_struct(*format, rdmavideo_audio_format_init);
    auto start = c_api::audio_start(f);
    if (!start) return c_api::fail(start.error());
    auto number = sender->session->start_audio(*start);
    if (!number) return c_api::fail(number.error());
    *track = *number;
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_send_audio(rdmavideo_sender* sender, uint32_t track,
                                             int64_t pts_ns, uint32_t samples, const void* data,
                                             uint64_t bytes) {
  return c_api::guarded("rdmavideo_sender_send_audio", [&] {
    if (!sender || !data) return c_api::invalid("rdmavideo_sender_send_audio: a NULL");
    auto ok = sender->session->submit_audio(
        track, pts_ns, samples,
        std::span(static_cast<const std::byte*>(data), static_cast<size_t>(bytes)));
    if (!ok) return c_api::fail(ok.error());
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_end_audio(rdmavideo_sender* sender, uint32_t track) {
  return c_api::guarded("rdmavideo_sender_end_audio", [&] {
    if (!sender) return c_api::invalid("rdmavideo_sender_end_audio: a NULL");
    if (auto ok = sender->session->end_audio(track); !ok) return c_api::fail(ok.error());
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_end(rdmavideo_sender* sender) {
  return c_api::guarded("rdmavideo_sender_end", [&] {
    if (!sender) return c_api::invalid("rdmavideo_sender_end: a NULL");
    if (auto ok = sender->session->end_stream(); !ok) return c_api::fail(ok.error());
    return RDMAVIDEO_OK;
  });
}

rdmavideo_status rdmavideo_sender_stats(const rdmavideo_sender* sender, rdmavideo_stats* stats) {
  return c_api::guarded("rdmavideo_sender_stats", [&] {
    if (!sender || !stats) return c_api::invalid("rdmavideo_sender_stats: a NULL");
    const auto s = sender->session->stats();
    rdmavideo_stats out{};
    out.struct_size = sizeof(out);
    out.frames = s.frames;
    out.bytes = s.bytes;
    out.dropped = s.dropped;
    out.checksum_failures = s.checksum_failures;
    out.seconds = s.seconds();
    out.cpu_seconds = s.cpu_seconds();
    out.latency_p50_us = static_cast<double>(s.latency.percentile_ns(0.5)) / 1e3;
    out.latency_p99_us = static_cast<double>(s.latency.percentile_ns(0.99)) / 1e3;
    for (const auto& d : sender->session->destinations()) {
      if (d.state == DestinationReport::State::streaming) ++out.streams;
      out.audio_samples = std::max(out.audio_samples, d.audio_samples);
    }
    c_api::write_struct(out, stats);
    return RDMAVIDEO_OK;
  });
}

void rdmavideo_sender_destroy(rdmavideo_sender* sender) {
  if (!sender) return;
  (void)rdmavideo_sender_end(sender);  // its error is the last error, if any
  delete sender;
}

}  // extern "C"
