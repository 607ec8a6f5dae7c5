// SPDX-License-Identifier: Apache-2.0
#include "obs_sender.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::obs {
namespace {

// Buffers OBS's frames wait in for the sending threads: enough for a frame on the wire to
// each of a few destinations and one being filled, few enough that 4K BGRA stays at 200 MB.
constexpr uint32_t kPoolBuffers = 6;

}  // namespace

Result<OutputSettings> OutputSettings::parse(std::string_view destinations,
                                             std::string_view transport, std::string key_file,
                                             std::string name, int64_t tracks, bool reconnect) {
  OutputSettings s;
  auto endpoints = parse_endpoints(destinations);
  if (!endpoints) return Unexpected(endpoints.error());
  s.destinations = std::move(*endpoints);
  auto kind = parse_transport(transport);
  if (!kind)
    return make_error(ErrorCode::invalid_argument, "transport \"{}\" unknown (auto, tcp or verbs)",
                      transport);
  s.transport = *kind;
  s.key_file = std::move(key_file);
  if (name.size() >= proto::kNameBytes) {
    return make_error(ErrorCode::invalid_argument, "name \"{}\" is longer than {} bytes", name,
                      proto::kNameBytes - 1);
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return make_error(ErrorCode::invalid_argument, "name \"{}\" has a control character", name);
    }
  }
  if (!name.empty()) s.name = std::move(name);
  if (tracks < 0 || tracks >= (1 << kMixTracks)) {
    return make_error(ErrorCode::invalid_argument,
                      "tracks {} is not a mask of OBS's six tracks (0..63)", tracks);
  }
  s.tracks = static_cast<uint32_t>(tracks);
  s.reconnect = reconnect;
  return s;
}

std::string OutputSettings::destinations_text() const {
  std::string text;
  for (const auto& d : destinations) text += (text.empty() ? "" : ", ") + d.to_string();
  return text;
}

Result<std::unique_ptr<ObsSender>> ObsSender::start(const OutputSettings& settings,
                                                    const video_output_info& canvas,
                                                    const VideoPlan& plan,
                                                    const std::vector<Track>& tracks,
                                                    std::shared_ptr<const std::atomic<bool>> stop,
                                                    std::function<void(const Error&)> on_failure) {
  if (canvas.fps_num == 0 || canvas.fps_den == 0) {
    return make_error(ErrorCode::invalid_argument, "OBS's frame rate {}/{} is not a rate",
                      canvas.fps_num, canvas.fps_den);
  }
  auto format = proto::make_stream_start(plan.format, canvas.width, canvas.height,
                                         Rational{canvas.fps_num, canvas.fps_den});
  if (!format) return Unexpected(format.error().context("OBS's canvas"));
  format->name = settings.name;
  format->colour = plan.colour;  // live: the session stamps it from its policy

  SenderSessionOptions options;
  options.transport = settings.transport;
  options.destinations = settings.destinations;
  options.connect.endpoint = settings.destinations.front();
  options.connect.max_frame_bytes = format->layout.frame_bytes;
  options.connect.stop = stop.get();
  options.interrupt = stop.get();
  if (!settings.key_file.empty()) {
    auto key = auth::load_key(settings.key_file);
    if (!key) return Unexpected(key.error().context("key_file"));
    options.connect.key = std::move(*key);
  }
  options.policy.live = true;
  options.non_blocking = true;
  options.reconnect = settings.reconnect;
  options.on_failure = std::move(on_failure);
  options.resolve = discovery::receiver_resolver(options.connect.timeouts.connect);
  auto session = SenderSession::connect(std::move(options));
  if (!session) return Unexpected(session.error());

  std::unique_ptr<ObsSender> sender(new ObsSender());
  sender->stop_ = std::move(stop);
  sender->format_ = *format;
  sender->session_ = std::move(*session);
  for (const Track& t : tracks) {
    if (t.mix >= kMixTracks) {
      return make_error(ErrorCode::invalid_argument, "mix track {} (OBS has {})", t.mix + 1,
                        kMixTracks);
    }
    auto number = sender->session_->start_audio(t.format);
    if (!number) return Unexpected(number.error().context(fmt::format("track {}", t.mix + 1)));
    sender->track_of_mix_[t.mix] = *number;
    sender->channels_[t.mix] = t.format.channels;
    sender->rates_[t.mix] = t.format.sample_rate;
  }
  if (auto ring = sender->session_->start_stream(*format, kPoolBuffers); !ring) {
    return Unexpected(ring.error());
  }
  return sender;
}

ObsSender::~ObsSender() {
  if (auto ok = stop(); !ok) log().warn("[obs] {}", ok.error().message());
}

namespace {
int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

void ObsSender::video(const video_data& frame) {
  const auto began = std::chrono::steady_clock::now();
  const int64_t cpu_began = thread_cpu_ns();
  std::shared_lock running(running_, std::try_to_lock);
  if (!running || stopped_) {
    // OBS's video thread handed it while the output stops: it does not go. Counted as dropped,
    // so that OBS's counters add up (every frame it handed is sent or dropped).
    late_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int64_t origin = origin_ns_.load(std::memory_order_relaxed);
  const auto ts = static_cast<int64_t>(frame.timestamp);
  if (origin < 0) {
    origin = ts;
    origin_ns_.store(ts, std::memory_order_release);
  }
  const int64_t pts = ts - origin;
  // OBS's frame number from its timestamp: a frame OBS itself skipped shows as a gap.
  const auto& rate = format_.frame_rate;
  const auto sequence = static_cast<uint64_t>(
      std::llround(static_cast<double>(std::max<int64_t>(pts, 0)) * rate.num / (1e9 * rate.den)));
  next_sequence_ = std::max(next_sequence_, sequence + 1);
  frames_.fetch_add(1, std::memory_order_relaxed);

  auto buffer = session_->acquire_buffer();
  if (!buffer || !*buffer) {
    no_buffer_.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::array<ForeignPlane, kMaxPlanes> planes{};
    for (int p = 0; p < format_.layout.plane_count; ++p) {
      planes[p] = {reinterpret_cast<std::byte*>(frame.data[p]),
                   static_cast<size_t>(frame.linesize[p])};
    }
    copy_planes(format_.layout, buffer->bytes().data(),
                std::span(planes).first(format_.layout.plane_count), CopyDirection::to_wire);
    FrameMeta meta;
    meta.sequence = sequence;
    meta.pts_ns = pts;
    meta.ready = began;
    // Queued for the destinations' threads; one with no credit drops it there (counted by
    // the session, as is a frame with no free buffer above).
    (void)session_->submit(*buffer, meta);
  }
  video_ns_.fetch_add(static_cast<uint64_t>((std::chrono::steady_clock::now() - began).count()),
                      std::memory_order_relaxed);
  video_cpu_ns_.fetch_add(static_cast<uint64_t>(thread_cpu_ns() - cpu_began),
                          std::memory_order_relaxed);
}

void ObsSender::audio(size_t mix, const audio_data& data) {
  if (mix >= kMixTracks || !track_of_mix_[mix] || data.frames == 0) return;
  std::shared_lock running(running_, std::try_to_lock);
  if (!running || stopped_) return;
  // Every selected mix gets its chunks from the same audio tick, so sample n of any track is
  // at the first chunk's timestamp + n / rate. OBS's own timestamps of the second and later
  // mixes cannot be used: OBS 29 counts them from one counter all mixes share, so with two
  // tracks each track's timestamps run twice as fast as its samples.
  if (audio_base_ns_ < 0) audio_base_ns_ = static_cast<int64_t>(data.timestamp);
  const uint32_t sample_rate = rates_[mix];
  const uint64_t first = samples_seen_[mix];
  samples_seen_[mix] += data.frames;
  const int64_t origin = origin_ns_.load(std::memory_order_acquire);
  if (origin < 0) return;  // before the first frame: the recording starts with the picture
  const uint32_t track = *track_of_mix_[mix];
  // Sample n of the mix was taken at the first chunk's time + n / rate; samples from before
  // the first frame are cut (AudioPlacement).
  auto& placement = placement_[mix];
  if (!placement) placement.emplace(sample_rate, std::chrono::milliseconds(20), true);
  const int64_t at =
      audio_base_ns_ - origin +
      static_cast<int64_t>(static_cast<unsigned __int128>(first) * 1'000'000'000u / sample_rate);
  const auto placed = placement->place(at, data.frames);
  if (!placed) return;
  const uint32_t skip = placed->skip;
  const uint32_t channels = channels_[mix];
  const uint32_t samples = data.frames - skip;
  auto& packed = packed_[mix];
  packed.resize(size_t{samples} * channels * sizeof(float));
  for (uint32_t c = 0; c < channels; ++c) {
    std::memcpy(packed.data() + size_t{c} * samples * sizeof(float),
                data.data[c] + size_t{skip} * sizeof(float), size_t{samples} * sizeof(float));
  }
  if (auto ok = session_->submit_audio(track, placed->pts_ns, samples, packed); !ok) {
    log().debug("[obs] track {}: {}", mix + 1, ok.error().message());
  }
}

Result<void> ObsSender::stop() {
  if (!session_ || stopped_.exchange(true)) return {};
  std::unique_lock alone(running_);  // a callback in progress finishes first
  return session_->end_stream();
}

uint64_t ObsSender::dropped_frames() const {
  return session_->stats().dropped + late_.load(std::memory_order_relaxed);
}

uint64_t ObsSender::total_bytes() const {
  uint64_t bytes = 0;
  for (const auto& d : session_->destinations()) bytes += d.stats.bytes;
  return bytes;
}

std::optional<Error> ObsSender::failure() const { return session_->failure(); }

std::vector<DestinationStats> ObsSender::destinations() const {
  std::vector<DestinationStats> out;
  for (const auto& d : session_->destinations()) {
    DestinationStats s;
    s.endpoint = d.endpoint.to_string();
    s.transport = d.transport;
    s.state = std::string(to_string(d.state));
    s.frames = d.stats.frames;
    s.dropped = d.stats.dropped;
    s.bytes = d.stats.bytes;
    const double seconds = d.stats.seconds();
    s.gbps = seconds > 0 ? static_cast<double>(d.stats.bytes) / seconds / 1e9 : 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::string ObsSender::describe() const {
  return fmt::format("{}x{} {} ({}) at {} fps to {} over {}", format_.width, format_.height,
                     name(format_.pixel_format), rdmavideo::describe(format_.colour),
                     to_string(format_.frame_rate), session_->peer(), to_string(session_->kind()));
}

}  // namespace rdmavideo::obs
