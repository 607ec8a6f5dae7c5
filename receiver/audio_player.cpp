// SPDX-License-Identifier: Apache-2.0
#include "audio_player.hpp"

#include <SDL.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "rdmavideo/audio_placement.hpp"
#include "rdmavideo/av/audio_converter.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::recv_cli {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kTargetNs = 100'000'000;   // the queue's depth to keep: a 40 ms batch and margin
constexpr int64_t kTooDeepNs = 500'000'000;  // beyond the target: dropped down to it at once
constexpr int64_t kGapNs =
    20'000'000;                       // a pts this far from the queue's end is a gap or an overlap
constexpr int64_t kJumpNs = kSecond;  // this far: a restarted source, the queue starts again
constexpr double kMostCorrection = 0.02;  // compensation: at most 2% faster or slower
constexpr double kSettleSeconds = 2;      // a depth error is corrected over about this long
constexpr double kSmoothing = 0.05;       // the depth's moving average, per chunk

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct AudioPlayer::Impl {
  proto::AudioStart format;
  int64_t delay_ns = 0;
  SDL_AudioDeviceID device = 0;
  SDL_AudioSpec have{};
  std::unique_ptr<av::AudioConverter> converter;
  std::string description;
  int64_t target = 0;     // device frames
  int64_t buffer_ns = 0;  // one SDL buffer

  mutable std::mutex mu;  // the queue and the clock: play() and SDL's audio thread
  std::vector<float> ring;
  size_t capacity = 0;   // frames
  size_t read = 0;       // frame index of the queue's first
  size_t frames = 0;     // frames queued
  int64_t tail_pts = 0;  // the sender's pts just after the last frame queued
  bool have_tail = false;
  bool started = false;                 // the device plays (the queue reached the target once)
  bool starved = false;                 // SDL found the queue short since the last chunk
  std::optional<int64_t> callback_pts;  // the first frame SDL took last, and when
  int64_t callback_time = 0;
  Stats stats;

  // play() only.
  double depth = -1;  // smoothed, frames
  double carry = 0;   // compensation's fraction of a sample, carried to the next chunk
  bool convert_failed = false;

  int64_t frames_of(int64_t ns) const { return ns * have.freq / kSecond; }
  int64_t ns_of(int64_t n) const { return n * kSecond / have.freq; }
  uint64_t ms_of(int64_t n) const { return static_cast<uint64_t>(n * 1000 / have.freq); }

  // Under mu.
  void drop_front(size_t n) {
    n = std::min(n, frames);
    read = (read + n) % capacity;
    frames -= n;
  }
  void push(const float* data, size_t n) {
    const size_t ch = have.channels;
    if (frames + n > capacity) {
      stats.dropped_ms += ms_of(static_cast<int64_t>(frames + n - capacity));
      drop_front(frames + n - capacity);
    }
    size_t at = (read + frames) % capacity;
    frames += n;
    while (n > 0) {
      const size_t run = std::min(n, capacity - at);
      if (data) {
        std::memcpy(&ring[at * ch], data, run * ch * sizeof(float));
        data += run * ch;
      } else {
        std::fill_n(&ring[at * ch], run * ch, 0.0f);
      }
      at = (at + run) % capacity;
      n -= run;
    }
  }

  // SDL's audio thread: the next buffer.
  void fill(float* out, size_t want) {
    const size_t ch = have.channels;
    std::lock_guard lock(mu);
    const size_t k = std::min(want, frames);
    if (k > 0) {
      callback_pts = tail_pts - ns_of(static_cast<int64_t>(frames));
      callback_time = now_ns();
    }
    size_t done = 0;
    while (done < k) {
      const size_t run = std::min(k - done, capacity - read);
      std::memcpy(out + done * ch, &ring[read * ch], run * ch * sizeof(float));
      read = (read + run) % capacity;
      frames -= run;
      done += run;
    }
    std::fill(out + k * ch, out + want * ch, 0.0f);
    if (started && k < want) {
      ++stats.underruns;
      starved = true;
    }
  }

  static void callback(void* user, Uint8* stream, int len) {
    auto* self = static_cast<Impl*>(user);
    self->fill(reinterpret_cast<float*>(stream),
               static_cast<size_t>(len) / (sizeof(float) * self->have.channels));
  }
};

AudioPlayer::AudioPlayer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AudioPlayer::~AudioPlayer() {
  if (impl_->device) SDL_CloseAudioDevice(impl_->device);  // waits for the callback
}

Result<std::unique_ptr<AudioPlayer>> AudioPlayer::open(const proto::AudioStart& format,
                                                       int64_t delay_ns) {
  auto impl = std::make_unique<Impl>();
  impl->format = format;
  impl->delay_ns = delay_ns;
  SDL_AudioSpec want{};
  want.freq = static_cast<int>(format.sample_rate);
  want.format = AUDIO_F32SYS;
  // SDL2 plays 1, 2, 4, 6 or 8 channels; the converter mixes the rest down or up.
  want.channels = static_cast<Uint8>(format.channels <= 2   ? format.channels
                                     : format.channels <= 6 ? 6
                                                            : 8);
  // About 20 ms, a power of two (1,024 at 48 kHz), and kept: SDL 2.26 allowed to change the
  // size hands the callback the device's size in a buffer of the size asked (its dummy
  // driver: 1,024 samples into 960, a heap overflow in SDL itself). Where the device wants
  // another size, SDL buffers between the two.
  want.samples = static_cast<Uint16>(
      std::bit_floor(std::clamp<uint32_t>(format.sample_rate / 50 * 4 / 3, 64, 8192)));
  want.callback = &Impl::callback;
  want.userdata = impl.get();
  impl->device =
      SDL_OpenAudioDevice(nullptr, 0, &want, &impl->have,
                          SDL_AUDIO_ALLOW_FREQUENCY_CHANGE | SDL_AUDIO_ALLOW_CHANNELS_CHANGE);
  if (impl->device == 0) {
    return make_error(ErrorCode::resource, "SDL_OpenAudioDevice({} Hz, {} channels) failed: {}",
                      want.freq, want.channels, SDL_GetError());
  }
  std::unique_ptr<AudioPlayer> player(new AudioPlayer(std::move(impl)));
  auto& s = *player->impl_;
  auto converter =
      av::AudioConverter::open(format, static_cast<uint32_t>(s.have.freq), s.have.channels);
  if (!converter) return Unexpected(converter.error());
  s.converter = std::move(*converter);
  s.target = s.frames_of(kTargetNs + std::max<int64_t>(0, delay_ns));
  s.buffer_ns = s.ns_of(s.have.samples);
  s.capacity = static_cast<size_t>(s.target + s.frames_of(kTooDeepNs + kSecond));
  s.ring.assign(s.capacity * s.have.channels, 0.0f);
  const char* driver = SDL_GetCurrentAudioDriver();
  s.description =
      fmt::format("{} Hz, {} channels, {}-sample buffers on SDL's {} driver ({})", s.have.freq,
                  s.have.channels, s.have.samples, driver ? driver : "?", s.converter->describe());
  return player;
}

void AudioPlayer::play(int64_t pts_ns, uint32_t samples, std::span<const std::byte> data) {
  auto& s = *impl_;
  if (samples == 0) return;
  const int64_t in_rate = s.format.sample_rate;
  const int64_t duration = static_cast<int64_t>(samples) * kSecond / in_rate;
  uint32_t skip = 0;
  int64_t gap = 0;  // device frames of silence before these samples
  bool restart = false;
  {
    std::lock_guard lock(s.mu);
    if (s.have_tail) {
      const int64_t diff = pts_ns - s.tail_pts;
      switch (continuity(diff, kGapNs, kJumpNs, kJumpNs)) {
        case Continuity::follows: break;
        case Continuity::gap: gap = s.frames_of(diff); break;
        case Continuity::overlap:
          skip = static_cast<uint32_t>(std::min<int64_t>(samples, -diff * in_rate / kSecond));
          s.stats.dropped_ms += static_cast<uint64_t>(skip * 1000 / in_rate);
          break;
        case Continuity::jump: restart = true; break;
      }
    }
    if (restart) {
      s.drop_front(s.frames);
      s.have_tail = false;
      s.started = false;
      s.starved = false;
      s.callback_pts.reset();
      ++s.stats.restarts;
    }
  }
  if (restart) {
    SDL_PauseAudioDevice(s.device,
                         1);  // not under mu: SDL's callback holds its lock, then takes mu
    s.depth = -1;
  }
  if (skip >= samples) return;
  auto converted = s.converter->convert(samples, data, skip);
  if (!converted) {
    if (!s.convert_failed) log().error("[display] audio: {}", converted.error().message());
    s.convert_failed = true;
    return;
  }
  const size_t n = converted->size() / s.have.channels;
  bool start = false;
  double depth_now = 0;
  {
    std::lock_guard lock(s.mu);
    if (s.starved) {
      // The queue ran dry: silence back to the target first, so the next stall is as far away.
      const int64_t refill = s.target - static_cast<int64_t>(s.frames + n);
      if (refill > 0) {
        s.push(nullptr, static_cast<size_t>(refill));
        s.stats.gaps_ms += s.ms_of(refill);
      }
      s.starved = false;
    }
    if (gap > 0) {
      s.push(nullptr, static_cast<size_t>(gap));
      s.stats.gaps_ms += s.ms_of(gap);
    }
    s.push(converted->data(), n);
    s.tail_pts = pts_ns + duration;
    s.have_tail = true;
    ++s.stats.chunks;
    const int64_t too_deep = s.target + s.frames_of(kTooDeepNs);
    if (static_cast<int64_t>(s.frames) > too_deep) {
      const auto excess = static_cast<size_t>(static_cast<int64_t>(s.frames) - s.target);
      s.stats.dropped_ms += s.ms_of(static_cast<int64_t>(excess));
      s.drop_front(excess);
      s.depth = -1;
    }
    if (!s.started && static_cast<int64_t>(s.frames) >= s.target) {
      s.started = true;
      start = true;
    }
    depth_now = static_cast<double>(s.frames);
  }
  if (start) SDL_PauseAudioDevice(s.device, 0);
  s.depth = s.depth < 0 ? depth_now : s.depth + kSmoothing * (depth_now - s.depth);
  // Play a little faster while the queue is deeper than the target, slower while shallower.
  const double error_s = (s.depth - static_cast<double>(s.target)) / s.have.freq;
  const double ratio = std::clamp(-error_s / kSettleSeconds, -kMostCorrection, kMostCorrection);
  const double want = ratio * static_cast<double>(n) + s.carry;
  const int delta = static_cast<int>(std::lround(want));
  s.carry = want - delta;
  if (n > 0) (void)s.converter->compensate(delta, static_cast<int>(n));
  std::lock_guard lock(s.mu);
  s.stats.latency_ms = (s.depth + s.have.samples) * 1000.0 / s.have.freq;
  s.stats.correction_ppm = ratio * 1e6;
}

std::optional<int64_t> AudioPlayer::clock() const {
  const auto& s = *impl_;
  std::lock_guard lock(s.mu);
  if (!s.started || !s.callback_pts) return std::nullopt;
  // SDL hands the device a buffer while it plays the last: what is heard is one buffer behind
  // the buffer taken, moving on with time, never past it.
  const int64_t since = std::clamp<int64_t>(now_ns() - s.callback_time, 0, s.buffer_ns);
  return *s.callback_pts - s.buffer_ns + since + s.delay_ns;
}

AudioPlayer::Stats AudioPlayer::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

const std::string& AudioPlayer::describe() const { return impl_->description; }

}  // namespace rdmavideo::recv_cli
