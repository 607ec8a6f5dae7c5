// SPDX-License-Identifier: Apache-2.0
// Drives rdmavideo-obs.dll as OBS for Windows would, over the stand-in obs.dll and
// obs-frontend-api.dll beside this program (stand_in_obs.cpp): loads the module, feeds its
// output OBS's program picture and mix tracks in real time, stops it, and prints one JSON
// object. It checks the plugin's logic and its use of the libobs ABI under wine, never OBS.
//
//   obs_host_windows --plugin DLL --destinations HOST:PORT [--seconds S] [--size WxH]
//                    [--fps N] [--format nv12|p010] [--colorspace 709|2100pq] [--tracks MASK]
//                    [--name NAME] [--mode host|obs|dialog]
//
// --mode host: a libobs program without the frontend: the host makes the output and starts
//   and stops it (a receiver that is not there is a start that fails, said in the JSON).
// --mode obs: inside "OBS": the profile holds the settings and "start with OBS", the frontend
//   says FINISHED_LOADING (the plugin makes its output and starts it) and EXIT.
// --mode dialog: inside "OBS" with nothing saved: the Tools menu item opens the dialog, whose
//   controls are filled in and its Start clicked, as a user would; its status text is read
//   back while it sends, and Stop clicked.
#include <windows.h>
// windows.h first: libobs' headers expect it on Windows.
#include <obs-module.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "stand_in.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string plugin, destinations, name = "OBS program", mode = "host";
  double seconds = 3;
  uint32_t width = 1280, height = 720, fps = 60;
  video_format format = VIDEO_FORMAT_NV12;
  video_colorspace colorspace = VIDEO_CS_709;
  int tracks = 1;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "obs_host_windows: %s\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--plugin") {
      a.plugin = v;
    } else if (k == "--destinations") {
      a.destinations = v;
    } else if (k == "--seconds") {
      a.seconds = std::stod(v);
    } else if (k == "--size") {
      if (std::sscanf(v.c_str(), "%ux%u", &a.width, &a.height) != 2) die("--size WxH");
    } else if (k == "--fps") {
      a.fps = static_cast<uint32_t>(std::stoul(v));
    } else if (k == "--format") {
      a.format = v == "p010"   ? VIDEO_FORMAT_P010
                 : v == "nv12" ? VIDEO_FORMAT_NV12
                               : (die(v), a.format);
    } else if (k == "--colorspace") {
      a.colorspace = v == "2100pq" ? VIDEO_CS_2100_PQ
                     : v == "709"  ? VIDEO_CS_709
                                   : (die(v), a.colorspace);
    } else if (k == "--tracks") {
      a.tracks = std::stoi(v);
    } else if (k == "--name") {
      a.name = v;
    } else if (k == "--mode") {
      a.mode = v;
    } else {
      die("unknown " + k);
    }
  }
  if (a.plugin.empty() || a.destinations.empty()) die("--plugin and --destinations are needed");
  return a;
}

nlohmann::json settings_of(const Args& a) {
  return {{"destinations", a.destinations},
          {"transport", "tcp"},
          {"name", a.name},
          {"tracks", a.tracks},
          {"reconnect", false}};
}

// Until `done` or `limit`, running the thread's messages (the dialog's, its timer's).
template <typename Done>
bool pump_until(Done done, double limit_s) {
  const auto end = Clock::now() + std::chrono::duration<double>(limit_s);
  while (Clock::now() < end) {
    MSG msg;
    while (PeekMessageW(&msg, nullptr, 0, 0, PM_REMOVE)) {
      TranslateMessage(&msg);
      DispatchMessageW(&msg);
    }
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

nlohmann::json stats_of(obs_output_t* output) {
  calldata_t cd{};
  nlohmann::json stats;
  if (stand_in_call_proc(output, "get_stats", &cd)) {
    for (const char* key : {"frames", "dropped", "bytes"}) {
      long long v = 0;
      calldata_get_int(&cd, key, &v);
      stats[key] = v;
    }
  }
  return stats;
}

std::string window_text(HWND window) {
  wchar_t text[1024] = {};
  GetWindowTextW(window, text, 1024);
  char out[4096] = {};
  WideCharToMultiByte(CP_UTF8, 0, text, -1, out, sizeof(out), nullptr, nullptr);
  return out;
}

void set_control(HWND dialog, int id, const std::string& text) {
  HWND control = GetDlgItem(dialog, id);
  SetWindowTextA(control, text.c_str());
  SendMessageW(dialog, WM_COMMAND, MAKEWPARAM(id, EN_KILLFOCUS), reinterpret_cast<LPARAM>(control));
}

void click(HWND dialog, int id) { SendMessageW(GetDlgItem(dialog, id), BM_CLICK, 0, 0); }

// The rows of a drop-down list.
std::vector<std::string> combo_rows(HWND dialog, int id) {
  HWND combo = GetDlgItem(dialog, id);
  std::vector<std::string> rows;
  const auto n = SendMessageW(combo, CB_GETCOUNT, 0, 0);
  for (LRESULT i = 0; i < n; ++i) {
    wchar_t text[1024] = {};
    if (SendMessageW(combo, CB_GETLBTEXTLEN, static_cast<WPARAM>(i), 0) >= 1024) continue;
    SendMessageW(combo, CB_GETLBTEXT, static_cast<WPARAM>(i), reinterpret_cast<LPARAM>(text));
    char out[4096] = {};
    WideCharToMultiByte(CP_UTF8, 0, text, -1, out, sizeof(out), nullptr, nullptr);
    rows.emplace_back(out);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  video_output_info video{};
  video.name = "video";
  video.format = a.format;
  video.fps_num = a.fps;
  video.fps_den = 1;
  video.width = a.width;
  video.height = a.height;
  video.colorspace = a.colorspace;
  video.range = VIDEO_RANGE_PARTIAL;
  audio_output_info audio{};
  audio.name = "audio";
  audio.samples_per_sec = 48000;
  audio.format = AUDIO_FORMAT_FLOAT_PLANAR;
  audio.speakers = SPEAKERS_STEREO;
  stand_in_set_canvas(&video, &audio);

  HWND main_window = nullptr;
  if (a.mode != "host") {
    main_window = CreateWindowExW(0, L"STATIC", L"OBS", WS_OVERLAPPEDWINDOW, 0, 0, 100, 100,
                                  nullptr, nullptr, GetModuleHandleW(nullptr), nullptr);
    if (!main_window)
      die("no main window: CreateWindowEx failed " + std::to_string(GetLastError()));
    stand_in_frontend_present(true, main_window);
  }
  if (a.mode == "obs") {
    config_set_string(stand_in_profile(), "rdmavideo", "Settings", settings_of(a).dump().c_str());
    config_set_bool(stand_in_profile(), "rdmavideo", "StartWithObs", true);
  }

  HMODULE plugin = LoadLibraryA(a.plugin.c_str());
  if (!plugin) die("LoadLibrary " + a.plugin + ": error " + std::to_string(GetLastError()));
  // A module's entry point, as OBS looks it up (through void (*)(), which any function's type
  // may be cast to and from).
  auto entry = [&]<typename F>(const char* name, F*) {
    FARPROC f = GetProcAddress(plugin, name);
    if (!f) die(std::string("the plugin exports no ") + name);
    return reinterpret_cast<F*>(reinterpret_cast<void (*)()>(f));
  };
  using SetPointer = void(obs_module_t*);
  using Version = uint32_t();
  using Load = bool();
  using Unload = void();
  entry("obs_module_set_pointer", static_cast<SetPointer*>(nullptr))(nullptr);
  const auto version = entry("obs_module_ver", static_cast<Version*>(nullptr))();
  if (!entry("obs_module_load", static_cast<Load*>(nullptr))()) die("obs_module_load failed");

  nlohmann::json out;
  out["module_ver"] = version;
  out["tools_items"] = nlohmann::json::array();
  for (int i = 0; i < stand_in_tools_items(); ++i)
    out["tools_items"].push_back(stand_in_tools_item_name(i));

  obs_output_t* output = nullptr;
  HWND dialog = nullptr;
  if (a.mode == "host") {
    obs_data_t* s = obs_data_create_from_json(settings_of(a).dump().c_str());
    output = obs_output_create("rdmavideo_output", "rdmavideo", s, nullptr);
    obs_data_release(s);
    if (!output) die("the plugin registered no rdmavideo_output");
    out["started"] = obs_output_start(output);
  } else {
    stand_in_frontend_event(OBS_FRONTEND_EVENT_FINISHED_LOADING);
    output = stand_in_last_output();
    if (!output) die("the plugin made no output at FINISHED_LOADING");
    if (a.mode == "dialog") {
      if (stand_in_tools_items() != 1) die("the plugin added no Tools menu item");
      stand_in_tools_item_click(0);
      dialog = FindWindowW(L"rdmavideoOutputDialog", nullptr);
      if (!dialog) die("the Tools menu item opened no dialog");
      out["dialog_parent_is_main_window"] = GetWindow(dialog, GW_OWNER) == main_window;
      // The receivers on the network (a stand-in browse result where the test gives one):
      // once found, choosing the first adds its name to the Receivers field.
      pump_until(
          [&] {
            const auto rows = combo_rows(dialog, 112);
            return !rows.empty() && rows[0] != "Looking for receivers...";
          },
          10);
      out["found"] = combo_rows(dialog, 112);
      SendMessageW(GetDlgItem(dialog, 112), CB_SETCURSEL, 1, 0);
      SendMessageW(dialog, WM_COMMAND, MAKEWPARAM(112, CBN_SELCHANGE),
                   reinterpret_cast<LPARAM>(GetDlgItem(dialog, 112)));
      out["destinations_after_choice"] = window_text(GetDlgItem(dialog, 101));
      set_control(dialog, 101, a.destinations);                   // Receivers
      SendMessageW(GetDlgItem(dialog, 102), CB_SETCURSEL, 1, 0);  // Transport: TCP
      SendMessageW(dialog, WM_COMMAND, MAKEWPARAM(102, CBN_SELCHANGE),
                   reinterpret_cast<LPARAM>(GetDlgItem(dialog, 102)));
      set_control(dialog, 105, a.name);  // Stream name
      for (int i = 0; i < 6; ++i) {
        const bool want = (a.tracks >> i) & 1;
        const bool has =
            SendMessageW(GetDlgItem(dialog, 120 + i), BM_GETCHECK, 0, 0) == BST_CHECKED;
        if (want != has) click(dialog, 120 + i);
      }
      click(dialog, 110);  // Start
    }
  }
  const bool capturing =
      pump_until([&] { return stand_in_capturing(output) || stand_in_stop_code(output) >= 0; }, 15);
  out["capturing"] = capturing && stand_in_capturing(output);
  if (out["capturing"]) {
    pump_until([] { return false; }, a.seconds);
    if (dialog) {
      out["dialog_status"] = window_text(GetDlgItem(dialog, 108));
      out["dialog_table"] = window_text(GetDlgItem(dialog, 109));
      out["dialog_button"] = window_text(GetDlgItem(dialog, 110));
      click(dialog, 110);  // Stop
    } else if (a.mode == "host") {
      obs_output_stop(output);
    } else {
      stand_in_frontend_event(OBS_FRONTEND_EVENT_EXIT);  // the plugin stops and releases it
      output = nullptr;
    }
  }
  if (output) {
    pump_until([&] { return !stand_in_capturing(output); }, 10);
    out["frames_fed"] = stand_in_frames_fed(output);
    out["stop_code"] = stand_in_stop_code(output);
    const char* error = obs_output_get_last_error(output);
    out["last_error"] = error ? error : "";
    out["stats"] = stats_of(output);
  }
  if (dialog) {
    pump_until([] { return false; }, 1.5);  // the status after the stop
    out["dialog_status_after"] = window_text(GetDlgItem(dialog, 108));
    const char* saved = config_get_string(stand_in_profile(), "rdmavideo", "Settings");
    out["saved_settings"] = saved ? nlohmann::json::parse(saved) : nlohmann::json();
    click(dialog, 111);  // Close
    out["dialog_closed"] = FindWindowW(L"rdmavideoOutputDialog", nullptr) == nullptr;
    stand_in_frontend_event(OBS_FRONTEND_EVENT_EXIT);
  } else if (a.mode == "host") {
    obs_output_release(output);
  }
  entry("obs_module_unload", static_cast<Unload*>(nullptr))();
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
