// SPDX-License-Identifier: Apache-2.0
// The canvas's sound: one tile's first track, converted and placed on the canvas's clock
// with its picture, or every tile's mixed (--audio-mix).
#include <algorithm>
#include <cstdlib>

#include "compositor_tile.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::media {

AudioPacket canvas_packet(int64_t pts_ns, std::span<const float> samples) {
  AudioPacket out;
  out.track = 0;
  out.pts_ns = pts_ns;
  out.samples = static_cast<uint32_t>(samples.size() / kAudioChannels);
  const auto bytes = std::as_bytes(samples);
  out.data.assign(bytes.begin(), bytes.end());
  return out;
}

void Compositor::audio_started(size_t index, const AudioTrack& track) {
  if (!canvas_track_ || track.index != 0 || (!mixer_ && index + 1 != options_.audio_tile)) return;
  auto converter = av::AudioConverter::open(track.format, kAudioRate, kAudioChannels);
  std::lock_guard lock(mu_);
  Tile& tile = *tiles_[index];
  if (!converter) {
    log().warn("[composite] tile {} (\"{}\"): its sound cannot be carried: {}", index + 1,
               tile.name, converter.error().message());
    return;
  }
  log().info("[composite] the canvas's sound{}: tile {} (\"{}\"), {}", mixer_ ? " mixes" : "",
             index + 1, tile.name, (*converter)->describe());
  tile.converter = std::move(*converter);
  tile.audio_rate = track.format.sample_rate;
  tile.mixing.clear();
}

// A packet of the tile's first track, converted and placed on the canvas's clock. Samples
// from before the stream's first frame have no place yet and are dropped (a recording starts
// with its first frame anyway).
bool Compositor::audio(size_t index, AudioPacket packet) {
  AudioPacket out;
  {
    std::lock_guard lock(mu_);
    Tile& tile = *tiles_[index];
    if (packet.track != 0 || !tile.converter || !tile.clock.tied() || tile.audio_rate == 0)
      return false;
    // Where its picture of the same instant is on the canvas: its time, shown that much later
    // (predicted at its first frame, deliver(); taken again from the frames' smoothed delay
    // only once that is known and has moved by more than a quarter period).
    if (tile.shown_after_ns) {
      const auto seen = static_cast<int64_t>(*tile.shown_after_ns);
      if (!tile.audio_shift_ns || std::llabs(seen - *tile.audio_shift_ns) > period_ns_ / 4)
        tile.audio_shift_ns = seen;
    }
    // Laid where the last packet ended, resampled a little toward where it belongs.
    const int64_t expected = static_cast<int64_t>(packet.samples) * kAudioRate / tile.audio_rate;
    const auto place =
        tile.clock.audio(packet.pts_ns, tile.audio_shift_ns.value_or(3 * period_ns_ / 2), expected);
    if (expected > 0) (void)tile.converter->compensate(place.delta, static_cast<int>(expected));
    auto converted = tile.converter->convert(packet.samples, packet.data);
    if (!converted) {
      log().warn("[composite] tile {} (\"{}\"): {}", index + 1, tile.name,
                 converted.error().message());
      tile.converter.reset();
      return false;
    }
    const auto n = static_cast<int64_t>(converted->size() / kAudioChannels);
    tile.clock.placed(place.at, n);
    if (n == 0 || place.at < 0) return true;  // nothing yet, or from before the canvas began
    if (mixer_) {
      // Into the tile's buffer at its canvas sample; what is already mixed is gone.
      const int64_t at = place.at;
      if (tile.mixing.empty() || at - tile.mix_start > kMixAheadSamples) {
        tile.mixing.clear();
        tile.mix_start = std::max(at, mixed_upto_);
      }
      const int64_t skip = std::max<int64_t>(0, tile.mix_start - at);
      if (skip >= n) return true;
      const size_t from = static_cast<size_t>(at + skip - tile.mix_start) * kAudioChannels;
      const size_t count = static_cast<size_t>(n - skip) * kAudioChannels;
      if (tile.mixing.size() < from + count) tile.mixing.resize(from + count, 0.0f);
      std::copy(converted->begin() + static_cast<ptrdiff_t>(skip * kAudioChannels),
                converted->end(), tile.mixing.begin() + static_cast<ptrdiff_t>(from));
      tile.audio_samples += static_cast<uint64_t>(n - skip);
      return true;
    }
    out = canvas_packet(
        static_cast<int64_t>(static_cast<__int128>(place.at) * 1'000'000'000 / kAudioRate),
        *converted);
    tile.audio_samples += out.samples;
  }
  return writer_->audio(std::move(out));
}

// Mixed sound, on the compositor's thread at each tick: every tile's samples up to
// `now_ns` less the mixing latency, silence where a tile has none, mixed and handed on.
void Compositor::mix_audio(int64_t now_ns) {
  const int64_t upto = std::max<int64_t>(0, now_ns - kMixLatencyNs) * kAudioRate / 1'000'000'000;
  if (upto <= mixed_upto_) return;
  const auto n = static_cast<size_t>(upto - mixed_upto_);
  std::vector<std::vector<float>> inputs(tiles_.size(),
                                         std::vector<float>(n * kAudioChannels, 0.0f));
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < tiles_.size(); ++i) {
      Tile& t = *tiles_[i];
      if (t.mixing.empty()) continue;
      // The part of [mixed_upto_, upto) the tile has, then what is left after it.
      const int64_t have_from = std::max(t.mix_start, mixed_upto_);
      const int64_t have_to = std::min<int64_t>(
          upto, t.mix_start + static_cast<int64_t>(t.mixing.size() / kAudioChannels));
      if (have_to > have_from) {
        std::copy(t.mixing.begin() + (have_from - t.mix_start) * kAudioChannels,
                  t.mixing.begin() + (have_to - t.mix_start) * kAudioChannels,
                  inputs[i].begin() + (have_from - mixed_upto_) * kAudioChannels);
      }
      const int64_t drop = std::min<int64_t>(
          upto - t.mix_start, static_cast<int64_t>(t.mixing.size() / kAudioChannels));
      if (drop > 0) {
        t.mixing.erase(t.mixing.begin(), t.mixing.begin() + drop * kAudioChannels);
        t.mix_start += drop;
      }
      if (t.mixing.empty()) t.mix_start = upto;
    }
  }
  std::vector<std::span<const float>> spans(inputs.begin(), inputs.end());
  auto mixed = mixer_->mix(spans, static_cast<uint32_t>(n));
  if (!mixed) {
    // Said once; the canvas goes on without its sound (mixer_ stays: the tiles read it).
    log().warn("[composite] mixing the sound failed, the canvas goes on silent: {}",
               mixed.error().message());
    mix_failed_ = true;
    return;
  }
  if (!mixed->empty()) {
    AudioPacket out = canvas_packet(mixed_pts_ns_, *mixed);
    mixed_pts_ns_ += static_cast<int64_t>(out.samples) * 1'000'000'000 / kAudioRate;
    writer_->audio(std::move(out));
  }
  std::lock_guard lock(mu_);
  mixed_upto_ = upto;
}

}  // namespace rdmavideo::media
