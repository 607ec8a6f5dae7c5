// SPDX-License-Identifier: Apache-2.0
// What the display needs to know about the X11 server under its SDL window, kept here so that
// Xlib's headers (whose macros Success, None and Status break other code) reach no other file.
// The display thread calls these on its own window: x11_window_id() for the log line when the
// window opens, x11_without_window_manager() when f asks for fullscreen. Both answer for X11
// only; on Wayland or another SDL video driver they give "no id" and false, and touch no X11.
#pragma once

#include <cstdint>
#include <optional>

struct SDL_Window;

namespace rdmavideo::recv_cli {

/// The X11 window id of `window` (for xdotool, xwininfo and the display tests), or nullopt
/// when the window is not on X11.
std::optional<uint64_t> x11_window_id(SDL_Window* window);

/// True when `window` is on X11 and no EWMH window manager has announced itself on the root
/// window (_NET_SUPPORTING_WM_CHECK): then nothing will act on a fullscreen request, and the
/// display makes the window cover the screen itself. False where it cannot tell.
bool x11_without_window_manager(SDL_Window* window);

}  // namespace rdmavideo::recv_cli
