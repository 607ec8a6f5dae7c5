// SPDX-License-Identifier: Apache-2.0
#include "display_window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "rdmavideo/log.hpp"
#include "window_manager.hpp"

namespace rdmavideo::recv_cli {

Result<SdlVideo> SdlVideo::init() {
  // Our SIGINT/SIGTERM handlers stop the receiver; SDL's own would replace them.
  SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1");
  if (SDL_Init(SDL_INIT_VIDEO) != 0) {
    return make_error(ErrorCode::resource, "display: SDL_Init(video) failed: {}", SDL_GetError());
  }
  SdlVideo video(true);
  // With no X or Wayland server SDL falls back to drivers that show nothing; take those only
  // when SDL_VIDEODRIVER asks for them.
  const std::string driver = SDL_GetCurrentVideoDriver() ? SDL_GetCurrentVideoDriver() : "";
  const char* requested = SDL_getenv("SDL_VIDEODRIVER");
  if ((driver == "offscreen" || driver == "dummy" || driver == "evdev") &&
      (!requested || driver != requested)) {
    const char* x = SDL_getenv("DISPLAY");
    return make_error(ErrorCode::resource,
                      "display: no X or Wayland display to open a window on (DISPLAY={}); SDL "
                      "found only its \"{}\" video driver",
                      x ? x : "unset", driver);
  }
  return video;
}

Result<DisplayWindow> DisplayWindow::open() {
  UniqueWindow window(SDL_CreateWindow("rdmavideo-recv", SDL_WINDOWPOS_CENTERED,
                                       SDL_WINDOWPOS_CENTERED, 960, 540,
                                       SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI));
  if (!window) {
    return make_error(ErrorCode::resource, "display: SDL_CreateWindow failed: {}", SDL_GetError());
  }
  UniqueRenderer renderer(SDL_CreateRenderer(window.get(), -1, 0));
  if (!renderer) {
    return make_error(ErrorCode::resource, "display: SDL_CreateRenderer failed: {}",
                      SDL_GetError());
  }
  return DisplayWindow(std::move(window), std::move(renderer));
}

std::string DisplayWindow::describe() const {
  SDL_RendererInfo info{};
  SDL_GetRendererInfo(renderer_.get(), &info);
  std::string id;
  if (const auto x11 = x11_window_id(window_.get())) id = fmt::format(", x11 window 0x{:x}", *x11);
  return fmt::format("{} renderer, {} video{}", info.name, SDL_GetCurrentVideoDriver(), id);
}

// f: the window fills the screen at the desktop's resolution (no mode change), or goes back.
// SDL2 on X11 asks the window manager for fullscreen (a _NET_WM_STATE_FULLSCREEN message to
// the root window, as the EWMH specifies) and leaves the resizing to it. With no window
// manager, nothing acts on that message, yet SDL takes the window to be screen-sized and
// renders a screen-sized picture into the unchanged window, showing a corner of it. So where
// no EWMH window manager runs (a bare X server driving a monitor), we make the window cover
// the screen ourselves: borderless, at the screen's origin and size.
void DisplayWindow::toggle_fullscreen() {
  // The window manager may have ended fullscreen itself (its own key binding).
  if (fullscreen_ == Fullscreen::window_manager &&
      !(SDL_GetWindowFlags(window_.get()) & SDL_WINDOW_FULLSCREEN)) {
    fullscreen_ = Fullscreen::off;
  }
  switch (fullscreen_) {
    case Fullscreen::off:
      if (!x11_without_window_manager(window_.get())) {
        if (SDL_SetWindowFullscreen(window_.get(), SDL_WINDOW_FULLSCREEN_DESKTOP) != 0) {
          log().warn("[display] SDL_SetWindowFullscreen(desktop) failed: {}", SDL_GetError());
          return;
        }
        fullscreen_ = Fullscreen::window_manager;
        log().info("[display] fullscreen on");
        return;
      }
      if (SDL_Rect screen{};
          SDL_GetDisplayBounds(SDL_GetWindowDisplayIndex(window_.get()), &screen) == 0) {
        SDL_GetWindowPosition(window_.get(), &windowed_.x, &windowed_.y);
        SDL_GetWindowSize(window_.get(), &windowed_.w, &windowed_.h);
        SDL_SetWindowBordered(window_.get(), SDL_FALSE);
        SDL_SetWindowPosition(window_.get(), screen.x, screen.y);
        SDL_SetWindowSize(window_.get(), screen.w, screen.h);
        SDL_RaiseWindow(window_.get());
        fullscreen_ = Fullscreen::covering;
        log().info(
            "[display] fullscreen on: no window manager, so the window covers the {}x{} "
            "screen itself",
            screen.w, screen.h);
      } else {
        log().warn("[display] fullscreen: SDL_GetDisplayBounds failed: {}", SDL_GetError());
      }
      return;
    case Fullscreen::window_manager:
      if (SDL_SetWindowFullscreen(window_.get(), 0) != 0) {
        log().warn("[display] SDL_SetWindowFullscreen(off) failed: {}", SDL_GetError());
        return;
      }
      break;
    case Fullscreen::covering:
      SDL_SetWindowSize(window_.get(), windowed_.w, windowed_.h);
      SDL_SetWindowPosition(window_.get(), windowed_.x, windowed_.y);
      SDL_SetWindowBordered(window_.get(), SDL_TRUE);
      break;
  }
  fullscreen_ = Fullscreen::off;
  log().info("[display] fullscreen off");
}

// Sizes a windowed window to the stream, shrunk to fit the desktop.
void DisplayWindow::fit(uint32_t width, uint32_t height) {
  if (fullscreen_ != Fullscreen::off) return;
  SDL_Rect usable{0, 0, 1920, 1080};
  SDL_GetDisplayUsableBounds(SDL_GetWindowDisplayIndex(window_.get()), &usable);
  const double scale = std::min({1.0, 0.9 * usable.w / width, 0.9 * usable.h / height});
  SDL_SetWindowSize(window_.get(), std::max(1, static_cast<int>(width * scale)),
                    std::max(1, static_cast<int>(height * scale)));
  SDL_SetWindowPosition(window_.get(), SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED);
}

}  // namespace rdmavideo::recv_cli
