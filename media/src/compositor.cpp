// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/compositor.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "composite_canvas.hpp"
#include "compositor_tile.hpp"
#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/glyphs.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/media/recording.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::media {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kCanvasBuffers = 4;  // canvas frames the writer may hold at once
constexpr av::Rgb kNoSignal{40, 40, 48};
// A tile whose stream sends no new frame for this long, or three of its frame periods if
// longer, is marked "NO FRAMES".
constexpr int64_t kQuietNs = 2'000'000'000;

int64_t period_of(Rational rate) {
  return static_cast<int64_t>(std::min(1e9 * rate.den / std::max<uint32_t>(rate.num, 1), 1e12));
}

}  // namespace

// The buffers canvas frames are handed to the writer in, where the canvas is (host or GPU
// memory): a lease of one returns it here.
class Compositor::Pool final : public detail::SlotOwner {
 public:
  static Result<std::shared_ptr<Pool>> make(memory::MemorySpec spec, size_t bytes, uint32_t count) {
    std::shared_ptr<Pool> pool(new Pool);
    for (uint32_t i = 0; i < count; ++i) {
      auto region = memory::Region::allocate(spec, bytes);
      if (!region) return Unexpected(region.error().context("the composite's output buffers"));
      pool->buffers_.push_back(std::move(*region));
    }
    pool->free_.assign(count, true);
    return pool;
  }
  void release_slot(uint32_t, uint32_t slot) noexcept override {
    std::lock_guard lock(mu_);
    free_[slot] = true;
  }
  // A free buffer, taken; nullopt when the writer holds them all.
  std::optional<uint32_t> take() {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < free_.size(); ++i) {
      if (free_[i]) {
        free_[i] = false;
        return i;
      }
    }
    return std::nullopt;
  }
  const std::shared_ptr<memory::Region>& buffer(uint32_t i) { return buffers_[i]; }

 private:
  Pool() = default;
  std::vector<std::shared_ptr<memory::Region>> buffers_;
  std::mutex mu_;
  std::vector<bool> free_;  // under mu_
};

class Compositor::TileSink final : public StreamSink {
 public:
  TileSink(Compositor& compositor, size_t tile) : compositor_(compositor), tile_(tile) {}
  void frame(FrameLease frame) override { compositor_.deliver(tile_, std::move(frame)); }
  Result<void> finish(const StreamEnd&) override {
    compositor_.ended(tile_);
    return {};
  }
  void audio_started(const AudioTrack& track) override { compositor_.audio_started(tile_, track); }
  bool audio(AudioPacket packet) override { return compositor_.audio(tile_, std::move(packet)); }

 private:
  Compositor& compositor_;
  size_t tile_;
};

Result<std::unique_ptr<Compositor>> Compositor::start(const CompositeOptions& o, Monitor* monitor,
                                                      std::shared_ptr<StreamOutput> output) {
  std::string why_host;
  auto canvas = CompositeCanvas::create(o, &why_host);
  if (!canvas) return Unexpected(canvas.error());
  // A layout file was read by the front end.
  CompositeLayout layout =
      o.layout_name.empty() ? CompositeLayout::make(o.kind, o.tiles, o.width, o.height) : o.layout;
  std::unique_ptr<Compositor> c(new Compositor(o, std::move(*canvas), std::move(layout)));
  auto pool = Pool::make(c->canvas_->memory(), c->format_->layout.frame_bytes, kCanvasBuffers);
  if (!pool) return Unexpected(pool.error());
  c->pool_ = std::move(*pool);
  StreamInfo info;
  info.number = 0;
  info.name = "composite";
  info.peer = "canvas";
  info.format = c->format_;
  auto writer = StreamWriter::create(o.writer, info, std::move(output), monitor, {});
  if (!writer) return Unexpected(writer.error());
  c->writer_ = std::move(*writer);
  // The canvas's sound, announced before its first frame so that a recording has the track
  // whenever the sound starts.
  if ((o.audio_tile > 0 || o.audio_mix) && (Recording::holds_audio(o.writer.output) || monitor)) {
    AudioTrack track;
    track.index = 0;
    track.format.stream_id = 1;
    track.format.sample_format = proto::SampleFormat::f32;
    track.format.sample_rate = kAudioRate;
    track.format.channels = kAudioChannels;
    track.format.channel_layout = 0x3;  // front left, front right
    track.format.name = o.audio_mix ? std::string("mix") : fmt::format("tile {}", o.audio_tile);
    if (o.audio_mix) {
      auto mixer =
          av::AudioMixer::open(static_cast<uint32_t>(c->tiles_.size()), kAudioRate, kAudioChannels);
      if (!mixer) return Unexpected(mixer.error().context(o.writer.names.audio_mix));
      c->mixer_ = std::move(*mixer);
    }
    c->canvas_track_ = track;
    c->writer_->audio_started(track);
  }
  // Tiles with no stream yet show that they wait for one.
  for (auto& tile : c->tiles_) c->compose(*tile, 0);
  if (!why_host.empty()) log().warn("[composite] the canvas is in host memory: {}", why_host);
  const bool on_gpu = c->canvas_->memory().kind == memory::MemoryKind::cuda;
  log().info(
      "[composite] {}x{} {} at {} fps, {} tiles{}, {} (frames in {} memory are {}); starts with "
      "the first "
      "frame",
      o.width, o.height, name(c->format_->pixel_format), to_string(o.rate), c->tiles_.size(),
      o.layout_name.empty() ? "" : " from " + o.layout_name, c->canvas_->describe(),
      on_gpu ? "host" : "GPU", on_gpu ? "uploaded" : "downloaded");
  c->thread_ = std::thread([raw = c.get()] { raw->run(); });
  return c;
}

Compositor::Compositor(CompositeOptions options, std::unique_ptr<CompositeCanvas> canvas,
                       CompositeLayout layout)
    : options_(std::move(options)), canvas_(std::move(canvas)), layout_(std::move(layout)) {
  auto format = std::make_shared<proto::StreamStart>(canvas_->format());
  format->name = "composite";
  format->flags = proto::kStreamLive;
  format->stream_id = 1;
  format->ring_epoch = 1;
  format_ = std::move(format);
  period_ns_ = static_cast<int64_t>(1e9 * format_->frame_rate.den / format_->frame_rate.num);
  for (const TileSpec& spec : layout_.tiles) {
    tiles_.push_back(std::make_unique<Tile>());
    tiles_.back()->spec = spec;
    tiles_.back()->clock = TileClock(period_ns_, kAudioRate);
    tiles_.back()->copier = canvas_->copier();
  }
}

Compositor::~Compositor() {
  if (thread_.joinable()) (void)stop();
}

Result<std::unique_ptr<StreamSink>> Compositor::make_sink(const StreamInfo& info) {
  const std::string label =
      info.name.empty() ? fmt::format("#{}", info.number) : printable(info.name);
  if (!(info.format->flags & proto::kStreamLive)) {
    return make_error(
        ErrorCode::unsupported,
        "stream {} (\"{}\") is not live: a composite shows each stream at its own pace, and a "
        "sender that waits for the receiver (a file or pipe without --realtime) would run "
        "through its input as fast as the canvas lets its frames go; send it with --realtime",
        info.number, label);
  }
  std::lock_guard lock(mu_);
  std::vector<bool> taken;
  for (const auto& t : tiles_) taken.push_back(t->taken);
  const auto at = layout_.place(info.name, info.number, taken);
  if (!at) {
    return make_error(ErrorCode::resource,
                      "stream {} (\"{}\"): no free tile for it in the composite ({} tiles{})",
                      info.number, label, tiles_.size(),
                      options_.layout_name.empty() ? "" : " in " + options_.layout_name);
  }
  Tile& tile = *tiles_[*at];
  // What the tile holds for its stream's frames, in the receiver's budget.
  const auto held = held_format(tile, info.format);
  const size_t held_bytes = held->layout.frame_bytes;
  const size_t source_bytes = held != info.format ? info.format->layout.frame_bytes : 0;
  auto reserved = info.budget ? info.budget->reserve(
                                    Tile::bytes_held(held_bytes, source_bytes),
                                    fmt::format("stream {}'s tile of the composite", info.number))
                              : Result<std::shared_ptr<const void>>(nullptr);
  if (!reserved) return Unexpected(reserved.error());
  tile.taken = true;
  tile.drawn_empty = false;
  tile.name = label;
  tile.stream = info.number;
  tile.converter.reset();
  tile.clock.reset();
  tile.shown_after_ns.reset();
  tile.audio_shift_ns.reset();
  tile.reservation = std::move(*reserved);
  tile.budget = info.budget;
  tile.reserved_frame_bytes = held_bytes;
  tile.reserved_source_bytes = source_bytes;
  log().info("[composite] stream {} (\"{}\") in tile {}", info.number, label, *at + 1);
  return std::unique_ptr<StreamSink>(std::make_unique<TileSink>(*this, *at));
}

// On the stream's connection thread: the frame is copied into one of the tile's buffers and
// its slot goes back at once. With all three waiting to be shown, the oldest makes way.
void Compositor::deliver(size_t index, FrameLease frame) {
  Tile::Held* into = nullptr;
  {
    std::lock_guard lock(mu_);
    Tile& tile = *tiles_[index];
    ++tile.received;
    const auto now = Clock::now();
    if (!started_) {
      started_ = true;
      origin_ = now;
      cv_.notify_all();
    }
    const int64_t arrival =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin_).count();
    const int64_t canvas_ns = tile.clock.frame(frame.info().pts_ns, arrival);
    for (auto& h : tile.held) {
      if (h.state == Tile::Held::State::free) {
        into = &h;
        break;
      }
    }
    if (!into) {  // the oldest waiting one makes way
      for (auto& h : tile.held) {
        if (h.state == Tile::Held::State::ready && (!into || h.canvas_ns < into->canvas_ns))
          into = &h;
      }
      if (!into) return;  // all being read: cannot happen with one reader
      ++tile.sampled;
    }
    into->state = Tile::Held::State::writing;
    into->canvas_ns = canvas_ns;
    if (!tile.audio_shift_ns && into->canvas_ns >= 0) {
      // Its sound's shift from the tick this frame will be shown at (the first a period or
      // more after its time): exact for a stream at the canvas's rate, so its sound needs no
      // correction later.
      const int64_t shown_at = (into->canvas_ns + 2 * period_ns_ - 1) / period_ns_ * period_ns_;
      tile.audio_shift_ns = shown_at - into->canvas_ns;
    }
    into->format = frame.memory_kind() == memory::MemoryKind::cuda
                       ? frame.shared_format()
                       : held_format(tile, frame.shared_format());
  }
  // Copied where the canvas is (the held buffer is this thread's while it is being written).
  Tile& tile = *tiles_[index];
  const bool fit = into->format != frame.shared_format();
  auto copied = [&]() -> Result<CompositeCanvas::Copier::Way> {
    const size_t need = fit ? into->format->layout.frame_bytes : frame.data().size();
    if (!into->copy || into->bytes != need) {
      // A format that changed: the copies follow it (never the largest kept), charged to
      // the budget first.
      into->copy.reset();
      into->bytes = 0;
      if (auto ok = charge(tile, need, fit ? frame.data().size() : 0); !ok) {
        return Unexpected(ok.error());
      }
      auto region = memory::Region::allocate(canvas_->memory(), need);
      if (!region) return Unexpected(region.error());
      into->copy = std::move(*region);
      into->bytes = need;
    }
    return tile.copier.hold(frame, *into->copy, fit ? into->format.get() : nullptr);
  }();
  frame.release();
  std::lock_guard lock(mu_);
  if (!copied) {
    into->state = Tile::Held::State::free;
    ++tile.sampled;
    if (!tile.warned)
      log().warn("[composite] tile {} (\"{}\"): {}", index + 1, tile.name,
                 copied.error().message());
    tile.warned = true;
    return;
  }
  if (*copied == CompositeCanvas::Copier::Way::upload) ++tile.uploads;
  if (*copied == CompositeCanvas::Copier::Way::download) ++tile.downloads;
  into->state = Tile::Held::State::ready;
}

// How the tile holds frames of `format` in host memory (under mu_): fitted to their picture
// where the canvas is drawn by the CPU, else as they came.
std::shared_ptr<const proto::StreamStart> Compositor::held_format(
    Tile& tile, const std::shared_ptr<const proto::StreamStart>& format) {
  if (tile.held_for != format) {
    tile.held_for = format;
    auto as = canvas_->held_as(*format, tile.spec.rect);
    tile.held_as = as ? std::make_shared<const proto::StreamStart>(std::move(*as)) : nullptr;
  }
  return tile.held_as ? tile.held_as : format;
}

// What the tile holds (Tile::bytes_held()) in the budget, where its stream's format changed, or
// refused by the budget (the frame is then not shown, and the next one asks again).
Result<void> Compositor::charge(Tile& tile, size_t frame_bytes, size_t source_bytes) {
  std::lock_guard lock(mu_);
  if (!tile.budget ||
      (frame_bytes == tile.reserved_frame_bytes && source_bytes == tile.reserved_source_bytes)) {
    return {};
  }
  // Copies of the old format waiting to be shown are let go with their reservation (newer
  // frames are coming in the new one); one being read goes when it is next written.
  for (auto& h : tile.held) {
    if (h.state != Tile::Held::State::free && h.state != Tile::Held::State::ready) continue;
    if (h.state == Tile::Held::State::ready) ++tile.sampled;
    h.state = Tile::Held::State::free;
    h.copy.reset();
    h.bytes = 0;
  }
  tile.reservation.reset();
  tile.reserved_frame_bytes = 0;
  tile.reserved_source_bytes = 0;
  auto reserved = tile.budget->reserve(
      Tile::bytes_held(frame_bytes, source_bytes),
      fmt::format("stream {}'s tile of the composite (its format changed)", tile.stream));
  if (!reserved) return Unexpected(reserved.error());
  tile.reservation = std::move(*reserved);
  tile.reserved_frame_bytes = frame_bytes;
  tile.reserved_source_bytes = source_bytes;
  return {};
}

void Compositor::ended(size_t index) {
  std::lock_guard lock(mu_);
  Tile& tile = *tiles_[index];
  for (auto& h : tile.held) {
    if (h.state == Tile::Held::State::ready) h.state = Tile::Held::State::free;
  }
  tile.taken = false;
  tile.drawn_empty = false;
  log().info("[composite] tile {} (\"{}\") has no signal", index + 1, tile.name);
}

// One tile onto the canvas for the tick at canvas time `now_ns`: the newest frame whose time
// is at least a period past (so that frames arriving a little early or late still show one a
// tick), the no-signal picture, or nothing (the frame before stays: a repeat).
void Compositor::compose(Tile& tile, int64_t now_ns) {
  Tile::Held* show = nullptr;
  bool draw_empty = false;
  bool mark_quiet = false;
  std::string label;
  {
    std::lock_guard lock(mu_);
    for (auto& h : tile.held) {
      if (h.state == Tile::Held::State::ready && h.canvas_ns <= now_ns - period_ns_ &&
          (!show || h.canvas_ns > show->canvas_ns)) {
        show = &h;
      }
    }
    if (show) {
      const double after = static_cast<double>(now_ns - show->canvas_ns);
      tile.shown_after_ns =
          tile.shown_after_ns ? *tile.shown_after_ns + (after - *tile.shown_after_ns) / 16 : after;
      for (auto& h : tile.held) {  // older ones were never shown
        if (&h != show && h.state == Tile::Held::State::ready && h.canvas_ns < show->canvas_ns) {
          h.state = Tile::Held::State::free;
          ++tile.sampled;
        }
      }
      show->state = Tile::Held::State::reading;
      tile.last_shown_ns = now_ns;
      tile.quiet_after_ns = std::max(kQuietNs, 3 * period_of(show->format->frame_rate));
      tile.marked_quiet = false;
    } else if (!tile.taken && !tile.drawn_empty) {
      draw_empty = true;
      tile.drawn_empty = true;
    } else if (tile.taken && tile.composited > 0) {
      ++tile.repeats;
      // A sender that keeps its connection but sends no frames (a stalled source): its last
      // picture is marked, so a frozen tile is never taken for a live one.
      if (!tile.marked_quiet && now_ns - tile.last_shown_ns > tile.quiet_after_ns) {
        mark_quiet = tile.marked_quiet = true;
        ++tile.stalls;
        log().warn("[composite] tile \"{}\": no frame for {} ms; marked until one comes", tile.name,
                   (now_ns - tile.last_shown_ns) / 1'000'000);
      }
    }
    label = tile.name;
  }
  const av::Rect area = tile.spec.rect;
  const int scale = std::max(1, area.height / 180);
  if (mark_quiet) {
    // In the last picture's bottom-left corner (inside it: the next frame covers the mark).
    const av::Rect& p = tile.picture;
    (void)canvas_->label(p.x + 2 * scale, p.y + p.height - (glyphs::kHeight + 4) * scale,
                         "NO FRAMES", scale);
    return;
  }
  if (show) {
    auto placed = canvas_->place(*show->format, *show->copy, area);
    if (placed) {
      tile.picture = *placed;
      (void)canvas_->label(placed->x + 2 * scale, placed->y + 2 * scale, label, scale);
    }
    std::lock_guard lock(mu_);
    show->state = Tile::Held::State::free;
    if (!placed) {
      if (!tile.warned) log().warn("[composite] tile \"{}\": {}", label, placed.error().message());
      tile.warned = true;
      ++tile.sampled;
      return;
    }
    ++tile.composited;
    return;
  }
  if (draw_empty) {
    (void)canvas_->fill(area, kNoSignal);
    const std::string text = "NO SIGNAL";
    const int width = static_cast<int>(text.size()) * glyphs::kAdvance * 2 * scale;
    (void)canvas_->label(area.x + (area.width - width) / 2,
                         area.y + area.height / 2 - glyphs::kHeight * scale, text, 2 * scale);
    if (!label.empty()) (void)canvas_->label(area.x + 2 * scale, area.y + 2 * scale, label, scale);
  }
}

bool Compositor::hand_on(uint64_t sequence, int64_t pts_ns) {
  const auto slot = pool_->take();
  if (!slot) return false;
  const std::shared_ptr<memory::Region>& buffer = pool_->buffer(*slot);
  if (auto ok = canvas_->copy_out(*buffer); !ok) {
    pool_->release_slot(0, *slot);
    if (!copy_failed_)
      log().warn("[composite] the canvas cannot be handed on: {}", ok.error().message());
    copy_failed_ = true;
    return false;
  }
  const uint32_t bytes = format_->layout.frame_bytes;
  const memory::MemoryKind kind = buffer->kind();
  proto::FrameWritten info;
  info.ring_epoch = format_->ring_epoch;
  info.slot = *slot;
  info.sequence = sequence;
  info.pts_ns = pts_ns;
  info.sent_ns = stats::realtime_ns();
  info.bytes = bytes;
  writer_->frame(FrameLease(pool_, buffer, format_, kind, buffer->bytes().first(bytes), info, 0,
                            kind == memory::MemoryKind::cuda ? buffer : nullptr));
  return true;
}

void Compositor::run() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_ || stopping_; });
    if (stopping_) return;
  }
  const auto period = std::chrono::nanoseconds(period_ns_);
  Clock::time_point origin;
  {
    std::lock_guard lock(mu_);
    origin = origin_;
  }
  uint64_t tick = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_until(lock, origin + tick * period, [&] { return stopping_; })) return;
    }
    const int64_t now_ns = static_cast<int64_t>(tick) * period_ns_;
    for (auto& tile : tiles_) compose(*tile, now_ns);
    if (mixer_ && !mix_failed_) mix_audio(now_ns);
    const bool handed = hand_on(tick, now_ns);
    // The next tick, or where the clock is now when composing took longer than a period:
    // the ticks passed meanwhile are late, skipped.
    const uint64_t due = static_cast<uint64_t>((Clock::now() - origin) / period) + 1;
    std::lock_guard lock(mu_);
    if (handed) {
      ++frames_;
    } else {
      ++late_;
    }
    if (due > tick + 1) late_ += due - tick - 1;
    tick = std::max(tick + 1, due);
  }
}

std::optional<Error> Compositor::finish(StreamOutput& output) {
  std::optional<Error> canvas_error;
  if (auto failed = failure()) canvas_error = *failed;
  if (auto stopped = stop(); !stopped && !canvas_error) canvas_error = stopped.error();
  const CompositeReport c = report();
  std::string path;
  {
    std::lock_guard lock(output.mu);
    path = output.path;
  }
  if (canvas_error) log().error("rdmavideo-recv: composite: {}", canvas_error->message());
  log().info("[recv] composite: {} canvas frames {}x{} {} at {} fps in {} memory, {} late{}",
             c.frames, c.width, c.height, c.pix_fmt, c.frame_rate,
             c.memory == "host" ? "host" : c.memory + "'s", c.late,
             path.empty() ? "" : ", written to " + path);
  return canvas_error;
}

Result<void> Compositor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!writer_) return {};
  StreamEnd end;
  end.how = StreamEnd::How::stopped;
  return writer_->finish(end);
}

std::optional<Error> Compositor::failure() const {
  return writer_ ? writer_->failure() : std::nullopt;
}

}  // namespace rdmavideo::media
