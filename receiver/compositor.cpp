// SPDX-License-Identifier: Apache-2.0
#include "compositor.hpp"

#include <algorithm>
#include <cstring>

#include "rdmavideo/glyphs.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::receiver {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kCanvasBuffers = 4;  // canvas frames the writer may hold at once
constexpr av::Rgb kNoSignal{40, 40, 48};

}  // namespace

// The buffers canvas frames are handed to the writer in: a lease of one returns it here.
class Compositor::Pool final : public detail::SlotOwner {
 public:
  Pool(size_t bytes, uint32_t count) : buffers_(count, std::vector<std::byte>(bytes)), free_(count, true) {}
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
  std::span<std::byte> buffer(uint32_t i) { return buffers_[i]; }

 private:
  std::vector<std::vector<std::byte>> buffers_;
  std::mutex mu_;
  std::vector<bool> free_;  // under mu_
};

struct Compositor::Tile {
  TileSpec spec;
  // Under the compositor's mu_.
  bool taken = false;      // a stream is in it now
  bool drawn_empty = false;  // the no-signal picture is on the canvas for what it holds now
  FrameLease pending;      // the newest frame not yet composited
  std::string name;        // the stream's, or the last one's
  uint64_t stream = 0;
  uint64_t received = 0, composited = 0, sampled = 0, repeats = 0;
  bool warned = false;     // a frame it could not place was said once
};

class Compositor::TileSink final : public StreamSink {
 public:
  TileSink(Compositor& compositor, size_t tile) : compositor_(compositor), tile_(tile) {}
  void frame(FrameLease frame) override { compositor_.deliver(tile_, std::move(frame)); }
  Result<void> finish(const StreamEnd&) override {
    compositor_.ended(tile_);
    return {};
  }

 private:
  Compositor& compositor_;
  size_t tile_;
};

Result<std::unique_ptr<Compositor>> Compositor::start(const Options& o, Display* display,
                                                      std::shared_ptr<StreamOutput> output) {
  auto canvas = av::Canvas::create(o.canvas_format, o.canvas_width, o.canvas_height, o.canvas_rate);
  if (!canvas) return Unexpected(canvas.error());
  CompositeLayout layout;
  if (!o.layout_file.empty()) {
    auto loaded = CompositeLayout::load(o.layout_file, o.canvas_width, o.canvas_height);
    if (!loaded) return Unexpected(loaded.error());
    layout = std::move(*loaded);
  } else {
    layout = CompositeLayout::make(o.composite, o.max_streams, o.canvas_width, o.canvas_height);
  }
  std::unique_ptr<Compositor> c(new Compositor(o, std::move(*canvas), std::move(layout)));
  StreamInfo info;
  info.number = 0;
  info.name = "composite";
  info.peer = "canvas";
  info.format = c->format_;
  auto writer = StreamWriter::create(o, info, std::move(output), display, {});
  if (!writer) return Unexpected(writer.error());
  c->writer_ = std::move(*writer);
  // Tiles with no stream yet show that they wait for one.
  for (auto& tile : c->tiles_) c->compose(*tile);
  log().info("[composite] {}x{} {} at {} fps, {} tiles{}; starts with the first frame", o.canvas_width,
             o.canvas_height, name(o.canvas_format), to_string(o.canvas_rate), c->tiles_.size(),
             o.layout_file.empty() ? "" : " from " + o.layout_file);
  c->thread_ = std::thread([raw = c.get()] { raw->run(); });
  return c;
}

Compositor::Compositor(const Options& options, std::unique_ptr<av::Canvas> canvas, CompositeLayout layout)
    : options_(options), canvas_(std::move(canvas)), layout_(std::move(layout)) {
  auto format = std::make_shared<proto::StreamStart>(canvas_->format());
  format->name = "composite";
  format->flags = proto::kStreamLive;
  format->stream_id = 1;
  format->ring_epoch = 1;
  format_ = std::move(format);
  pool_ = std::make_shared<Pool>(format_->layout.frame_bytes, kCanvasBuffers);
  for (const TileSpec& spec : layout_.tiles) {
    tiles_.push_back(std::make_unique<Tile>());
    tiles_.back()->spec = spec;
  }
}

Compositor::~Compositor() {
  if (thread_.joinable()) (void)stop();
}

Result<std::unique_ptr<StreamSink>> Compositor::make_sink(const StreamInfo& info) {
  const std::string label = info.name.empty() ? fmt::format("#{}", info.number) : printable(info.name);
  if (!(info.format->flags & proto::kStreamLive)) {
    return make_error(ErrorCode::unsupported,
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
    return make_error(ErrorCode::resource, "stream {} (\"{}\"): no free tile for it in the composite ({} tiles{})",
                      info.number, label, tiles_.size(),
                      options_.layout_file.empty() ? "" : " in " + options_.layout_file);
  }
  Tile& tile = *tiles_[*at];
  tile.taken = true;
  tile.drawn_empty = false;
  tile.name = label;
  tile.stream = info.number;
  log().info("[composite] stream {} (\"{}\") in tile {}", info.number, label, *at + 1);
  return std::unique_ptr<StreamSink>(std::make_unique<TileSink>(*this, *at));
}

void Compositor::deliver(size_t index, FrameLease frame) {
  FrameLease older;
  {
    std::lock_guard lock(mu_);
    Tile& tile = *tiles_[index];
    ++tile.received;
    if (tile.pending) {
      ++tile.sampled;
      older = std::move(tile.pending);  // let go outside the lock
    }
    tile.pending = std::move(frame);
    if (!started_) {
      started_ = true;
      cv_.notify_all();
    }
  }
}

void Compositor::ended(size_t index) {
  FrameLease last;
  std::lock_guard lock(mu_);
  Tile& tile = *tiles_[index];
  last = std::move(tile.pending);
  tile.taken = false;
  tile.drawn_empty = false;
  log().info("[composite] tile {} (\"{}\") has no signal", index + 1, tile.name);
}

// One tile onto the canvas for this tick: its newest frame, the no-signal picture, or nothing
// (the frame before stays: a repeat).
void Compositor::compose(Tile& tile) {
  FrameLease frame;
  bool draw_empty = false;
  std::string label;
  {
    std::lock_guard lock(mu_);
    frame = std::move(tile.pending);
    if (!frame && !tile.taken && !tile.drawn_empty) {
      draw_empty = true;
      tile.drawn_empty = true;
    }
    if (!frame && tile.taken && tile.composited > 0) ++tile.repeats;
    label = tile.name;
  }
  const av::Rect area = tile.spec.rect;
  const int scale = std::max(1, area.height / 240);
  if (frame) {
    if (frame.memory_kind() == memory::MemoryKind::cuda) {
      auto host = std::move(frame).to_host();
      if (!host) {
        log().warn("[composite] tile \"{}\": {}", label, host.error().message());
        return;
      }
      frame = std::move(*host);
    }
    auto placed = canvas_->place(frame.format(), frame.data(), area);
    frame.release();  // the slot goes back before the label is drawn
    std::lock_guard lock(mu_);
    if (!placed) {
      if (!tile.warned) log().warn("[composite] tile \"{}\": {}", label, placed.error().message());
      tile.warned = true;
      ++tile.sampled;
      return;
    }
    ++tile.composited;
    (void)canvas_->label(placed->x + 2 * scale, placed->y + 2 * scale, label, scale);
    return;
  }
  if (draw_empty) {
    (void)canvas_->fill(area, kNoSignal);
    const std::string text = "NO SIGNAL";
    const int width = static_cast<int>(text.size()) * glyphs::kAdvance * 2 * scale;
    (void)canvas_->label(area.x + (area.width - width) / 2, area.y + area.height / 2 - glyphs::kHeight * scale, text,
                         2 * scale);
    if (!label.empty()) (void)canvas_->label(area.x + 2 * scale, area.y + 2 * scale, label, scale);
  }
}

bool Compositor::hand_on(uint64_t sequence, int64_t pts_ns) {
  const auto slot = pool_->take();
  if (!slot) return false;
  std::span<std::byte> buffer = pool_->buffer(*slot);
  const auto frame = canvas_->frame();
  std::memcpy(buffer.data(), frame.data(), frame.size());
  proto::FrameWritten info;
  info.ring_epoch = format_->ring_epoch;
  info.slot = *slot;
  info.sequence = sequence;
  info.pts_ns = pts_ns;
  info.sent_ns = stats::realtime_ns();
  info.bytes = static_cast<uint32_t>(frame.size());
  writer_->frame(FrameLease(pool_, pool_, format_, memory::MemoryKind::host, buffer, info, 0));
  return true;
}

void Compositor::run() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_ || stopping_; });
    if (stopping_) return;
  }
  const Rational rate = format_->frame_rate;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 * rate.den / rate.num));
  const auto origin = Clock::now();
  uint64_t tick = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_until(lock, origin + tick * period, [&] { return stopping_; })) return;
    }
    for (auto& tile : tiles_) compose(*tile);
    const bool handed = hand_on(tick, static_cast<int64_t>(tick) * period.count());
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

Result<void> Compositor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& tile : tiles_) {
    std::lock_guard lock(mu_);
    tile->pending.release();
  }
  if (!writer_) return {};
  StreamEnd end;
  end.how = StreamEnd::How::stopped;
  return writer_->finish(end);
}

std::optional<Error> Compositor::failure() const { return writer_ ? writer_->failure() : std::nullopt; }

CompositeReport Compositor::report() const {
  CompositeReport r;
  r.width = format_->width;
  r.height = format_->height;
  r.pix_fmt = std::string(name(format_->pixel_format));
  r.frame_rate = to_string(format_->frame_rate);
  std::lock_guard lock(mu_);
  r.frames = frames_;
  r.late = late_;
  for (const auto& t : tiles_) {
    r.tiles.push_back({t->name, t->stream, t->taken, t->received, t->composited, t->sampled, t->repeats});
  }
  return r;
}

nlohmann::json CompositeReport::json() const {
  nlohmann::json tiles_json = nlohmann::json::array();
  for (size_t i = 0; i < tiles.size(); ++i) {
    const Tile& t = tiles[i];
    tiles_json.push_back({{"tile", i + 1},
                          {"name", t.name},
                          {"stream", t.stream},
                          {"live", t.live},
                          {"received", t.received},
                          {"composited", t.composited},
                          {"sampled", t.sampled},
                          {"repeats", t.repeats}});
  }
  return {{"width", width}, {"height", height}, {"pix_fmt", pix_fmt}, {"frame_rate", frame_rate},
          {"frames", frames}, {"late", late},     {"tiles", tiles_json}};
}

}  // namespace rdmavideo::receiver
