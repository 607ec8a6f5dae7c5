// SPDX-License-Identifier: Apache-2.0
// The SDL2 display behind --display (see display.hpp). Everything SDL happens on the display
// thread: init, window, renderer, textures, events and teardown. This file is the thread, the
// mailbox, the picture and its queue; the window and fullscreen are in display_window, the
// overlay's font in overlay_font, the conversions of formats SDL has no texture for in
// display_convert.
#include "display.hpp"

#include <SDL.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "display_convert.hpp"
#include "display_window.hpp"
#include "overlay_font.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/signals.hpp"
#include "rdmavideo/stats.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::recv_cli {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr size_t kMostQueued = 32;        // textures waiting for the audio clock
constexpr int64_t kEarlyNs = 2'000'000;   // a frame this close to its time is shown now
constexpr size_t kMostOffsets = 1 << 20;  // paced frames' offsets kept for the summary

struct Pending {
  proto::StreamStart format;
  FrameLease frame;
};

class SdlDisplay final : public Display {
 public:
  SdlDisplay(std::function<void()> on_quit, int64_t audio_delay_ns)
      : audio_delay_ns_(audio_delay_ns), on_quit_(std::move(on_quit)) {}
  Result<void> start() {
    std::promise<Result<void>> opened;
    auto result = opened.get_future();
    thread_ = std::thread([this, &opened] { run(opened); });
    auto ok = result.get();
    if (!ok) thread_.join();
    return ok;
  }
  ~SdlDisplay() override { stop(); }

  void offer(FrameLease frame) override {
    const proto::StreamStart& format = frame.format();
    std::optional<Pending> replaced;  // dropped after the lock is let go
    {
      std::lock_guard lock(mu_);
      const uint64_t now = stats::realtime_ns();
      const auto& info = frame.info();
      window_.frames += 1;
      window_.bytes += frame.data().size();
      window_.latency_ns += now > info.sent_ns ? now - info.sent_ns : 0;
      if (!last_stream_ || *last_stream_ != format.ring_epoch) {
        last_stream_ = format.ring_epoch;
      } else if (info.sequence > last_sequence_ + 1) {
        sender_dropped_ += info.sequence - last_sequence_ - 1;  // sequence counts drops too
      }
      last_sequence_ = info.sequence;
      if (pending_) {
        replaced = std::move(pending_);
        ++counts_.dropped;
      }
      proto::StreamStart copy = format;
      pending_ = Pending{std::move(copy), std::move(frame)};
    }
    cv_.notify_one();
  }

  void start_audio(const proto::AudioStart& format) override {
    end_audio();
    std::lock_guard lock(audio_mu_);
    if (!sdl_audio_) {
      if (!audio_refusal_said_) {
        log().warn(
            "[display] no sound: SDL has no audio device ({}); the picture is shown as it comes",
            sdl_audio_error_);
      }
      audio_refusal_said_ = true;
      return;
    }
    auto player = AudioPlayer::open(format, audio_delay_ns_);
    if (!player) {
      log().warn("[display] no sound: {}; the picture is shown as it comes",
                 player.error().message());
      return;
    }
    player_ = std::move(*player);
    audio_text_ = player_->describe();
    log().info(
        "[display] playing audio track \"{}\": {}; the picture follows it{}",
        printable(format.name), audio_text_,
        audio_delay_ns_ ? fmt::format(", sound {} ms later", audio_delay_ns_ / 1'000'000) : "");
  }

  void play_audio(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data) override {
    std::shared_ptr<AudioPlayer> player;
    {
      std::lock_guard lock(audio_mu_);
      player = player_;
    }
    if (player) player->play(pts_ns, samples, data);
  }

  void end_audio() override {
    std::shared_ptr<AudioPlayer> ended;
    std::lock_guard lock(audio_mu_);
    if (!player_) return;
    sound_ = player_->stats();
    ended = std::move(player_);
  }

  void stop() override {
    end_audio();  // the device closes before SDL does
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mu_);
    if (pending_) {
      pending_.reset();
      ++counts_.dropped;
    }
  }

  Counts counts() const override {
    Counts out;
    std::vector<float> offsets;
    {
      std::lock_guard lock(mu_);
      out = counts_;
      offsets = offsets_ms_;
    }
    if (!offsets.empty()) {
      std::sort(offsets.begin(), offsets.end());
      auto at = [&](double q) {
        return offsets[static_cast<size_t>(q * double(offsets.size() - 1))];
      };
      out.offset_p50_ms = at(0.5);
      out.offset_p99_ms = at(0.99);
      out.offset_max_ms = offsets.back();
    }
    std::lock_guard lock(audio_mu_);
    out.audio = audio_text_;
    out.sound = player_ ? player_->stats() : sound_;
    return out;
  }

 private:
  // Frames offered since the status line was last computed.
  struct Window {
    uint64_t frames = 0;
    uint64_t bytes = 0;
    uint64_t latency_ns = 0;  // sum over `frames`
  };

  void run(std::promise<Result<void>>& opened) {
    // The main thread takes SIGINT/SIGTERM (its blocked calls must see EINTR); X and SDL
    // calls here should not.
    block_stop_signals();

    auto sdl = SdlVideo::init();
    if (!sdl) {
      opened.set_value(Unexpected(sdl.error()));
      return;
    }
    {
      // Here, before any track starts: SDL's subsystems are set up from one thread.
      std::lock_guard lock(audio_mu_);
      sdl_audio_ = SDL_InitSubSystem(SDL_INIT_AUDIO) == 0;
      if (!sdl_audio_) sdl_audio_error_ = SDL_GetError();
    }
    // The test pattern and most sources are BT.709; SDL's default is BT.601.
    SDL_SetYUVConversionMode(SDL_YUV_CONVERSION_BT709);
    auto screen = DisplayWindow::open();
    if (!screen) {
      opened.set_value(Unexpected(screen.error()));
      return;
    }
    log().info("[display] window open ({}); f: fullscreen, q/Esc: stop", screen->describe());
    screen_ = &*screen;
    renderer_ = screen->renderer();
    opened.set_value({});

    loop();

    queue_.clear();  // the textures before the renderer they belong to
    spare_.clear();
    texture_.reset();
    renderer_ = nullptr;
    screen_ = nullptr;
  }

  void loop() {
    auto next_status = Clock::now();
    auto last_status = Clock::now();
    auto last_stop_request = Clock::time_point{};
    bool dirty = false;  // something to redraw without a new frame (resize, expose, status)
    for (;;) {
      SDL_Event event;
      while (SDL_PollEvent(&event)) {
        if (event.type == SDL_QUIT ||
            (event.type == SDL_WINDOWEVENT && event.window.event == SDL_WINDOWEVENT_CLOSE)) {
          quit_requested_ = true;
        } else if (event.type == SDL_KEYDOWN) {
          const SDL_Keycode key = event.key.keysym.sym;
          if (key == SDLK_q || key == SDLK_ESCAPE) quit_requested_ = true;
          if (key == SDLK_f) {
            screen_->toggle_fullscreen();
            dirty = true;
          }
        } else if (event.type == SDL_WINDOWEVENT) {
          dirty = true;
        }
      }
      if (quit_requested_ && Clock::now() - last_stop_request > 200ms) {
        // Repeated until the main thread stops us: a signal that lands just before it blocks
        // would otherwise go unseen until its next timeout.
        if (last_stop_request == Clock::time_point{}) log().info("[display] quit requested");
        last_stop_request = Clock::now();
        on_quit_();
      }

      // With sound, the picture waits for the audio clock: wake when the next frame is due.
      std::shared_ptr<AudioPlayer> player;
      {
        std::lock_guard lock(audio_mu_);
        player = player_;
      }
      const std::optional<int64_t> heard = player ? player->clock() : std::nullopt;
      auto wait = std::chrono::nanoseconds(10ms);
      if (heard && !queue_.empty()) {
        wait = std::clamp(std::chrono::nanoseconds(queue_.front().pts - *heard),
                          std::chrono::nanoseconds(0), wait);
      }
      const std::optional<double> sound_ms =
          player ? std::optional<double>(player->stats().latency_ms) : std::nullopt;
      std::optional<Pending> frame;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, wait, [&] { return stopping_ || pending_.has_value(); });
        if (stopping_) return;
        if (pending_) {
          frame = std::move(pending_);
          pending_.reset();
        }
        if (Clock::now() >= next_status) {
          update_status(Clock::now() - last_status, sound_ms);
          last_status = Clock::now();
          next_status = last_status + 500ms;
          dirty = true;
        }
      }
      if (!player && !queue_.empty()) flush_queue();  // the sound ended: the newest, now
      if (frame && player) {
        enqueue(*frame);
        frame.reset();  // the slot's credit goes back at once: the texture holds the picture
      } else if (frame) {
        const bool uploaded = upload(frame->format, frame->frame.data());
        frame.reset();  // the slot's credit goes back before we render
        if (uploaded) {
          render();
          std::lock_guard lock(mu_);
          ++counts_.shown;
          dirty = false;
        }
      }
      if (player && present_due(player->clock())) dirty = false;
      if (dirty) {
        render();
        dirty = false;
      }
    }
  }

  // Under mu_: turns the frames offered since the last call into the status text.
  void update_status(Clock::duration elapsed, std::optional<double> sound_ms) {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    const double fps = seconds > 0 ? window_.frames / seconds : 0;
    const double gbps = seconds > 0 ? window_.bytes / seconds / 1e9 : 0;
    const double latency_ms = window_.frames ? window_.latency_ns / 1e6 / window_.frames : 0;
    status_ = fmt::format("{:.1f} fps {:.3f} GB/s drops {} skipped {} lat {:.2f} ms", fps, gbps,
                          sender_dropped_, counts_.dropped, latency_ms);
    if (sound_ms) status_ += fmt::format(" sound {:.0f} ms", *sound_ms);
    window_ = {};
  }

  // A texture for the stream's format, or null (said once).
  UniqueTexture make_texture(const proto::StreamStart& f) {
    const Uint32 want = texture_format(f.pixel_format);
    // The renderer picks its YUV-to-RGB shader when the texture is made.
    SDL_SetYUVConversionMode(
        static_cast<SDL_YUV_CONVERSION_MODE>(yuv_conversion_mode(f.colour, f.height)));
    UniqueTexture t(SDL_CreateTexture(renderer_, want, SDL_TEXTUREACCESS_STREAMING,
                                      static_cast<int>(f.width), static_cast<int>(f.height)));
    if (!t) {
      if (!texture_failed_) {
        log().warn("[display] SDL_CreateTexture({}, {}x{}) failed: {}; not showing this stream",
                   SDL_GetPixelFormatName(want), f.width, f.height, SDL_GetError());
      }
      texture_failed_ = true;
      return t;
    }
    texture_failed_ = false;
    return t;
  }

  // Copies the frame into the shown texture, (re)creating it on a format change.
  bool upload(const proto::StreamStart& f, std::span<const std::byte> data) {
    if (!texture_ || !same_format(f)) {
      if (!change_format(f)) return false;
    }
    return fill(texture_.get(), f, data);
  }

  bool same_format(const proto::StreamStart& f) const {
    return f.width == tex_w_ && f.height == tex_h_ && f.pixel_format == tex_format_;
  }

  // A new stream format: textures of the old one go, the window fits the new one.
  bool change_format(const proto::StreamStart& f) {
    queue_.clear();
    spare_.clear();
    texture_ = make_texture(f);
    if (!texture_) return false;
    {
      const Uint32 want = texture_format(f.pixel_format);
      tex_w_ = f.width;
      tex_h_ = f.height;
      tex_format_ = f.pixel_format;
      screen_->fit(f.width, f.height);
      std::lock_guard lock(mu_);
      format_text_ = fmt::format("{}x{} {}", f.width, f.height, name(f.pixel_format));
      log().info("[display] showing {}x{} {} as an {} texture", f.width, f.height,
                 name(f.pixel_format), SDL_GetPixelFormatName(want));
    }
    return true;
  }

  // With sound: the frame into a texture of the queue, to be shown when the sound reaches it.
  void enqueue(const Pending& frame) {
    const auto& f = frame.format;
    if (!same_format(f)) {
      if (!change_format(f)) return;
      spare_.push_back(std::move(texture_));  // nothing is shown until the first frame is due
    }
    if (queue_.size() >= kMostQueued) show_front(std::nullopt);  // the sound stalled
    UniqueTexture t;
    if (!spare_.empty()) {
      t = std::move(spare_.back());
      spare_.pop_back();
    } else {
      t = make_texture(f);
      if (!t) return;
    }
    if (!fill(t.get(), f, frame.frame.data())) {
      spare_.push_back(std::move(t));
      return;
    }
    queue_.push_back(Queued{std::move(t), frame.frame.info().pts_ns});
  }

  // Shows the newest queued frame whose time has come (those before it are skipped); true if
  // one was shown.
  bool present_due(std::optional<int64_t> heard) {
    if (!heard) return false;
    size_t due = 0;
    while (due < queue_.size() && queue_[due].pts <= *heard + kEarlyNs) ++due;
    if (due == 0) return false;
    for (size_t i = 0; i + 1 < due; ++i) {
      spare_.push_back(std::move(queue_.front().texture));
      queue_.pop_front();
      std::lock_guard lock(mu_);
      ++counts_.dropped;
    }
    show_front(heard);
    return true;
  }

  // Shows the oldest queued frame; `heard`: the audio clock it was due by.
  void show_front(std::optional<int64_t> heard) {
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    std::swap(texture_, q.texture);
    if (q.texture) spare_.push_back(std::move(q.texture));
    render();
    std::lock_guard lock(mu_);
    ++counts_.shown;
    if (heard) {
      ++counts_.paced;
      if (offsets_ms_.size() < kMostOffsets) {
        offsets_ms_.push_back(static_cast<float>(std::abs(double(q.pts - *heard)) / 1e6));
      }
    }
  }

  // The sound ended: the newest frame is shown, the rest were skipped.
  void flush_queue() {
    while (queue_.size() > 1) {
      spare_.push_back(std::move(queue_.front().texture));
      queue_.pop_front();
      std::lock_guard lock(mu_);
      ++counts_.dropped;
    }
    show_front(std::nullopt);
  }

  // Copies a frame into texture `t` of the stream's format.
  bool fill(SDL_Texture* t, const proto::StreamStart& f, std::span<const std::byte> data) {
    auto pitch = [&](int p) { return static_cast<int>(f.layout.planes[p].stride); };
    int rc = 0;
    int converted_pitch = 0;
    switch (f.pixel_format) {
      case PixelFormat::nv12:
        rc = SDL_UpdateNVTexture(t, nullptr, plane_data(f, data, 0), pitch(0),
                                 plane_data(f, data, 1), pitch(1));
        break;
      case PixelFormat::i420:
        rc = SDL_UpdateYUVTexture(t, nullptr, plane_data(f, data, 0), pitch(0),
                                  plane_data(f, data, 1), pitch(1), plane_data(f, data, 2),
                                  pitch(2));
        break;
      case PixelFormat::uyvy:
      case PixelFormat::yuy2:
      case PixelFormat::rgba:
      case PixelFormat::bgra:
      case PixelFormat::rgb24:
        rc = SDL_UpdateTexture(t, nullptr, plane_data(f, data, 0), pitch(0));
        break;
      case PixelFormat::p010:
        converted_pitch = p010_to_nv12(f, data, converted_);
        rc = SDL_UpdateNVTexture(t, nullptr, converted_.data(), converted_pitch,
                                 converted_.data() + size_t(converted_pitch) * f.height,
                                 converted_pitch);
        break;
      case PixelFormat::yuv422p10:
        converted_pitch = yuv422p10_to_yuy2(f, data, converted_);
        rc = SDL_UpdateTexture(t, nullptr, converted_.data(), converted_pitch);
        break;
      case PixelFormat::v210:
        converted_pitch = v210_to_yuy2(f, data, converted_);
        rc = SDL_UpdateTexture(t, nullptr, converted_.data(), converted_pitch);
        break;
      case PixelFormat::yuv444p:
      case PixelFormat::yuv444p10:
      case PixelFormat::yuv444p12: {
        converted_pitch = yuv444_to_i420(f, data, converted_);
        const uint8_t* cb = converted_.data() + size_t(converted_pitch) * f.height;
        const size_t chroma = size_t(converted_pitch / 2) * ((f.height + 1) / 2);
        rc = SDL_UpdateYUVTexture(t, nullptr, converted_.data(), converted_pitch, cb,
                                  converted_pitch / 2, cb + chroma, converted_pitch / 2);
        break;
      }
    }
    if (rc != 0) {
      if (!upload_failed_) log().warn("[display] texture upload failed: {}", SDL_GetError());
      upload_failed_ = true;
      return false;
    }
    upload_failed_ = false;
    return true;
  }

  void render() {
    int out_w = 0, out_h = 0;
    SDL_GetRendererOutputSize(renderer_, &out_w, &out_h);
    SDL_SetRenderDrawColor(renderer_, 0, 0, 0, 255);
    SDL_RenderClear(renderer_);
    if (texture_ && tex_w_ && tex_h_ && out_w > 0 && out_h > 0) {
      // Letterbox: the largest rectangle of the stream's aspect that fits, centred.
      const double scale = std::min(double(out_w) / tex_w_, double(out_h) / tex_h_);
      const int w = std::max(1, static_cast<int>(std::lround(tex_w_ * scale)));
      const int h = std::max(1, static_cast<int>(std::lround(tex_h_ * scale)));
      const SDL_Rect dst{(out_w - w) / 2, (out_h - h) / 2, w, h};
      SDL_RenderCopy(renderer_, texture_.get(), nullptr, &dst);
    }
    std::string status, format;
    {
      std::lock_guard lock(mu_);
      status = status_;
      format = format_text_;
    }
    // Font pixels of 3 screen pixels from 1800 pixels across, else 2, or 1 where the longer
    // line would not fit (a 640-pixel window fits a usual status line at 2).
    const size_t chars = std::max(status.size(), format.size());
    int scale = out_w >= 1800 ? 3 : 2;
    while (scale > 1 && static_cast<int>(chars) * kFontAdvance * scale + 8 * scale > out_w) {
      --scale;
    }
    int y = 4 * scale;
    if (!status.empty()) y += draw_text(renderer_, status, 4 * scale, y, scale);
    if (!format.empty()) draw_text(renderer_, format, 4 * scale, y, scale);
    SDL_RenderPresent(renderer_);
  }

  // Shared with the sink thread and stop(), under mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Pending> pending_;  // the mailbox: at most one frame waiting
  bool stopping_ = false;
  Counts counts_;
  Window window_;
  std::optional<uint32_t> last_stream_;  // ring_epoch of the last frame offered
  uint64_t last_sequence_ = 0;           // its FrameWritten.sequence
  uint64_t sender_dropped_ = 0;          // gaps in the sequence: frames the sender dropped
  std::string status_;                   // the overlay's first line; "" until the first update
  std::string format_text_;              // its second: "640x360 uyvy422", the texture's stream
  std::vector<float> offsets_ms_;        // each paced frame's |pts - audio clock| when shown

  // Sound: set by the writer thread of the window's stream, read by the display thread.
  mutable std::mutex audio_mu_;
  std::shared_ptr<AudioPlayer> player_;  // the track playing, or null
  AudioPlayer::Stats sound_;             // the last track's, once it ended
  std::string audio_text_;               // what played it
  bool sdl_audio_ = false;               // SDL's audio subsystem is up
  std::string sdl_audio_error_;          // else why not
  bool audio_refusal_said_ = false;
  const int64_t audio_delay_ns_;

  // Display thread only. The window and its renderer are owned by run()'s locals.
  DisplayWindow* screen_ = nullptr;
  SDL_Renderer* renderer_ = nullptr;
  UniqueTexture texture_;  // the frame shown
  struct Queued {
    UniqueTexture texture;
    int64_t pts = 0;
  };
  std::deque<Queued> queue_;          // with sound: frames uploaded, waiting for their time
  std::vector<UniqueTexture> spare_;  // textures of the stream's format to upload into
  uint32_t tex_w_ = 0, tex_h_ = 0;
  PixelFormat tex_format_ = PixelFormat::nv12;
  std::vector<uint8_t> converted_;  // the frame converted for formats SDL has no texture for
  bool texture_failed_ = false;
  bool upload_failed_ = false;
  bool quit_requested_ = false;
  std::function<void()> on_quit_;  // asks the receiver to stop

  std::thread thread_;
};

}  // namespace

bool Display::available() { return true; }

Result<std::unique_ptr<Display>> Display::open(std::function<void()> on_quit,
                                               int64_t audio_delay_ns) {
  auto display = std::make_unique<SdlDisplay>(std::move(on_quit), audio_delay_ns);
  if (auto ok = display->start(); !ok) return Unexpected(ok.error());
  return std::unique_ptr<Display>(std::move(display));
}

}  // namespace rdmavideo::recv_cli
