// SPDX-License-Identifier: Apache-2.0
#include "window_manager.hpp"

#include <SDL.h>

#include <memory>

// Last: it pulls in Xlib, whose macros (Success, None, Status) break CLI11 and others.
#include <SDL_syswm.h>
#include <X11/Xatom.h>

namespace rdmavideo::recv_cli {
namespace {

// Looks up a few Xlib functions in the libX11 that SDL's X11 driver already has loaded, so the
// display needs no X11 library of its own (and a Wayland session never calls them).
class Xlib {
 public:
  Xlib() : library_(SDL_LoadObject("libX11.so.6")) {
    if (!library_) return;
    intern_atom =
        reinterpret_cast<decltype(intern_atom)>(SDL_LoadFunction(library_.get(), "XInternAtom"));
    get_window_property = reinterpret_cast<decltype(get_window_property)>(
        SDL_LoadFunction(library_.get(), "XGetWindowProperty"));
    x_free = reinterpret_cast<decltype(x_free)>(SDL_LoadFunction(library_.get(), "XFree"));
  }
  bool loaded() const { return intern_atom && get_window_property && x_free; }

  decltype(&XInternAtom) intern_atom = nullptr;
  decltype(&XGetWindowProperty) get_window_property = nullptr;
  decltype(&XFree) x_free = nullptr;

 private:
  struct Unload {
    void operator()(void* library) const noexcept { SDL_UnloadObject(library); }
  };
  std::unique_ptr<void, Unload> library_;
};

// The window's X11 handles, or nullopt when it is not on X11.
std::optional<SDL_SysWMinfo> x11_info(SDL_Window* window) {
  SDL_SysWMinfo wm;
  SDL_VERSION(&wm.version);
  if (!SDL_GetWindowWMInfo(window, &wm) || wm.subsystem != SDL_SYSWM_X11) return std::nullopt;
  return wm;
}

}  // namespace

std::optional<uint64_t> x11_window_id(SDL_Window* window) {
  const auto wm = x11_info(window);
  if (!wm) return std::nullopt;
  return uint64_t{wm->info.x11.window};
}

bool x11_without_window_manager(SDL_Window* window) {
  const auto wm = x11_info(window);
  if (!wm) return false;
  const Xlib x;
  if (!x.loaded()) return false;  // cannot tell: leave it to SDL
  ::Display* display = wm->info.x11.display;
  const Atom check = x.intern_atom(display, "_NET_SUPPORTING_WM_CHECK", True);
  if (check == 0) return true;  // the atom was never even made: no EWMH client ever ran
  Atom type = 0;
  int format = 0;
  unsigned long items = 0, left = 0;
  unsigned char* data = nullptr;
  const int rc = x.get_window_property(display, DefaultRootWindow(display), check, 0, 1, False,
                                       XA_WINDOW, &type, &format, &items, &left, &data);
  if (data) x.x_free(data);
  return rc != 0 || type != XA_WINDOW || items == 0;  // 0: Success
}

}  // namespace rdmavideo::recv_cli
