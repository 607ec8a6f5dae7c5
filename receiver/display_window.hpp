// SPDX-License-Identifier: Apache-2.0
// The display's window (display.cpp is its thread): SDL's video subsystem, the window and its
// renderer, the window sized to the stream, and fullscreen with a window manager or without
// one. Display thread only.
#pragma once

#include <SDL.h>

#include <cstdint>
#include <memory>
#include <string>

#include "rdmavideo/result.hpp"

namespace rdmavideo::recv_cli {

struct WindowDeleter {
  void operator()(SDL_Window* w) const noexcept { SDL_DestroyWindow(w); }
};
struct RendererDeleter {
  void operator()(SDL_Renderer* r) const noexcept { SDL_DestroyRenderer(r); }
};
struct TextureDeleter {
  void operator()(SDL_Texture* t) const noexcept { SDL_DestroyTexture(t); }
};
using UniqueWindow = std::unique_ptr<SDL_Window, WindowDeleter>;
using UniqueRenderer = std::unique_ptr<SDL_Renderer, RendererDeleter>;
using UniqueTexture = std::unique_ptr<SDL_Texture, TextureDeleter>;

// SDL_Init(VIDEO) paired with SDL_QuitSubSystem/SDL_Quit; declared before the window so it
// goes last.
class SdlVideo {
 public:
  /// Fails, saying why, where SDL finds no X or Wayland display (unless SDL_VIDEODRIVER asks
  /// for a driver that shows nothing).
  static Result<SdlVideo> init();
  SdlVideo(SdlVideo&& other) noexcept : active_(std::exchange(other.active_, false)) {}
  SdlVideo& operator=(SdlVideo&&) = delete;
  ~SdlVideo() {
    if (active_) SDL_Quit();
  }

 private:
  explicit SdlVideo(bool active) : active_(active) {}
  bool active_ = false;
};

class DisplayWindow {
 public:
  /// "rdmavideo-recv", 960x540, resizable, with SDL's default renderer.
  static Result<DisplayWindow> open();

  SDL_Renderer* renderer() const { return renderer_.get(); }
  /// "opengl renderer, x11 video, x11 window 0x1e00007" for the log.
  std::string describe() const;
  /// f: the window fills the screen, or goes back.
  void toggle_fullscreen();
  /// A windowed window sized to a stream of `width` x `height`, shrunk to fit the desktop.
  void fit(uint32_t width, uint32_t height);

 private:
  DisplayWindow(UniqueWindow window, UniqueRenderer renderer)
      : window_(std::move(window)), renderer_(std::move(renderer)) {}
  UniqueWindow window_;
  UniqueRenderer renderer_;  // declared after the window: destroyed before it
  enum class Fullscreen { off, window_manager, covering };
  Fullscreen fullscreen_ = Fullscreen::off;  // covering: no window manager; see toggle_fullscreen
  SDL_Rect windowed_{};                      // the window before it started covering the screen
};

}  // namespace rdmavideo::recv_cli
