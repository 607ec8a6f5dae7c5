// SPDX-License-Identifier: Apache-2.0
// --display: an SDL2 window that shows the stream while the receiver records or discards it.
//
// Lifecycle: Display::open() starts the display thread, which initialises SDL video and opens
// the window (SDL must be driven from the thread that created the window, so the whole SDL
// loop lives there); open() returns once that worked or failed. The sink thread then calls
// offer() for every frame it has finished with, and the main thread calls stop() at the end,
// which joins the thread and closes the window.
//
// The display is fed through a one-slot mailbox: offer() never waits. When the display is
// still busy with an earlier frame, the newer frame replaces the waiting one, whose lease is
// dropped at once (its slot's credit goes back to the sender) and counted as a display drop.
// So a slow display drops display frames, never recorded ones. The display thread uploads a
// frame into its texture and drops the lease before it renders.
//
// Keys: f toggles fullscreen (at the desktop's resolution, through the window manager; on an X
// server with no window manager the window covers the screen itself). q or Esc (or closing
// the window) calls the on_quit callback given to open(), from the display thread, until the
// receiver stops it; the receiver then stops as on SIGINT, so a recording is finalised. A
// line in the corner shows fps, GB/s, frames the sender dropped, frames the display skipped
// and the latency.
//
// Sound: the stream that owns the window has its first audio track played (audio_player.hpp),
// and then the picture follows what is heard, as in a player: frames are uploaded at once
// (their leases dropped, so the sender is never held back) into a queue of textures, and each
// is shown when the audio clock reaches its pts (plus --audio-delay). A frame whose time has
// passed by the next is skipped and counted as dropped. When the queue is full (32 frames: the
// sound stalled), the oldest is shown anyway, so the picture never freezes for want of sound.
// Without a sound device the picture is shown as it comes, with one warning.
//
// Without SDL2 in the build, available() is false and open() fails with `unsupported`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "audio_player.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/media/monitor.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::recv_cli {

// The receiver's window: a media::Monitor for the stream that owns it.
class Display : public media::Monitor {
 public:
  struct Counts {
    uint64_t shown = 0;    ///< frames uploaded and presented
    uint64_t dropped = 0;  ///< frames replaced in the mailbox, or skipped as late for the sound
    uint64_t paced = 0;    ///< of those shown, shown when the audio clock reached them
    /// How far from the audio clock paced frames were shown (|pts - clock|, ms).
    double offset_p50_ms = 0, offset_p99_ms = 0, offset_max_ms = 0;
    std::string audio;         ///< what played the last track ("" when none did)
    AudioPlayer::Stats sound;  ///< and how it went
  };

  /// Whether this build has a display (SDL2).
  static bool available();
  /// Starts the display thread and opens the window; fails when SDL cannot open a window.
  /// `on_quit` is how the window asks the receiver to stop. `audio_delay_ns` is
  /// --audio-delay: positive, the sound comes that much later than the picture.
  static Result<std::unique_ptr<Display>> open(std::function<void()> on_quit,
                                               int64_t audio_delay_ns = 0);

  /// Main thread: closes the window and joins the thread; a waiting frame counts as dropped.
  virtual void stop() = 0;
  /// After stop(): what was shown and dropped.
  virtual Counts counts() const = 0;
};

/// Stops `display` at the receiver's end and says in the log what it showed (and how its
/// sound kept time); the same for the summary JSON.
nlohmann::json finish_display(Display& display);

}  // namespace rdmavideo::recv_cli
