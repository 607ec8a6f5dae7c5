// SPDX-License-Identifier: Apache-2.0
// The dialog on Windows: a window of Win32 controls owned by OBS's main window
// (obs_frontend_get_main_window_handle), run by OBS's own message loop on its UI thread. The
// controls' ids are part of its interface: a test drives it through them.
#include <windows.h>
// windows.h first: libobs' headers expect it on Windows.
#include <commdlg.h>
#include <obs-frontend-api.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "dialog.hpp"
#include "dialog_model.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::obs {
namespace {

constexpr const wchar_t* kClass = L"rdmavideoOutputDialog";
enum Control : int {
  kDestinations = 101,
  kTransport,
  kKeyFile,
  kBrowse,
  kName,
  kReconnect,
  kStartWithObs,
  kStatus,
  kTable,
  kStart,
  kClose,
  kFound,         // the receivers DNS-SD found: choosing one adds it to kDestinations
  kRescan,        // browse again
  kTrack1 = 120,  // to kTrack1 + 5
};
constexpr UINT_PTR kRefreshTimer = 1;

HWND g_window = nullptr;
// The browse under way (it takes about a second), and the rows the drop-down shows.
std::future<std::vector<FoundReceiver>> g_browsing;
std::vector<FoundReceiver> g_found;

std::wstring widen(const std::string& text) {
  if (text.empty()) return {};
  const int n =
      MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0);
  std::wstring wide(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), wide.data(), n);
  return wide;
}

std::string narrow(const std::wstring& wide) {
  if (wide.empty()) return {};
  const int n = WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), nullptr,
                                    0, nullptr, nullptr);
  std::string text(static_cast<size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), text.data(), n,
                      nullptr, nullptr);
  return text;
}

HWND item(HWND window, int id) { return GetDlgItem(window, id); }

std::string text_of(HWND window, int id) {
  HWND control = item(window, id);
  std::wstring text(static_cast<size_t>(GetWindowTextLengthW(control)) + 1, L'\0');
  text.resize(
      static_cast<size_t>(GetWindowTextW(control, text.data(), static_cast<int>(text.size()))));
  return narrow(text);
}

void set_text(HWND window, int id, const std::string& text) {
  SetWindowTextW(item(window, id), widen(text).c_str());
}

bool checked(HWND window, int id) {
  return SendMessageW(item(window, id), BM_GETCHECK, 0, 0) == BST_CHECKED;
}

void check(HWND window, int id, bool on) {
  SendMessageW(item(window, id), BM_SETCHECK, on ? BST_CHECKED : BST_UNCHECKED, 0);
}

// Lays the controls out as the Qt dialog does: a form, the status, the destinations, buttons.
void create_controls(HWND window) {
  const auto instance = reinterpret_cast<HINSTANCE>(GetWindowLongPtrW(window, GWLP_HINSTANCE));
  auto font = reinterpret_cast<WPARAM>(GetStockObject(DEFAULT_GUI_FONT));
  auto add = [&](const wchar_t* cls, const wchar_t* text, DWORD style, int x, int y, int w, int h,
                 int id) {
    HWND control =
        CreateWindowExW(cls == std::wstring(L"EDIT") ? WS_EX_CLIENTEDGE : 0, cls, text,
                        WS_CHILD | WS_VISIBLE | style, x, y, w, h, window,
                        reinterpret_cast<HMENU>(static_cast<INT_PTR>(id)), instance, nullptr);
    SendMessageW(control, WM_SETFONT, font, TRUE);
    return control;
  };
  int y = 12;
  auto label = [&](const wchar_t* text) { add(L"STATIC", text, 0, 12, y + 3, 110, 20, -1); };
  label(L"Receivers");
  add(L"EDIT", L"", WS_TABSTOP | ES_AUTOHSCROLL, 130, y, 480, 22, kDestinations);
  y += 30;
  label(L"On the network");
  add(L"COMBOBOX", L"", WS_TABSTOP | CBS_DROPDOWNLIST | WS_VSCROLL, 130, y, 390, 160, kFound);
  add(L"BUTTON", L"Refresh", WS_TABSTOP | BS_PUSHBUTTON, 530, y, 80, 22, kRescan);
  y += 30;
  label(L"Transport");
  HWND transport = add(L"COMBOBOX", L"", WS_TABSTOP | CBS_DROPDOWNLIST | WS_VSCROLL, 130, y, 480,
                       120, kTransport);
  for (const auto& choice : transport_choices()) {
    SendMessageW(transport, CB_ADDSTRING, 0, reinterpret_cast<LPARAM>(widen(choice.first).c_str()));
  }
  y += 30;
  label(L"Shared key file");
  add(L"EDIT", L"", WS_TABSTOP | ES_AUTOHSCROLL, 130, y, 390, 22, kKeyFile);
  add(L"BUTTON", L"Browse...", WS_TABSTOP | BS_PUSHBUTTON, 530, y, 80, 22, kBrowse);
  y += 30;
  label(L"Stream name");
  SendMessageW(add(L"EDIT", L"", WS_TABSTOP | ES_AUTOHSCROLL, 130, y, 480, 22, kName),
               EM_SETLIMITTEXT, 63, 0);
  y += 30;
  label(L"Audio tracks");
  for (int i = 0; i < 6; ++i) {
    add(L"BUTTON", std::to_wstring(i + 1).c_str(), WS_TABSTOP | BS_AUTOCHECKBOX, 130 + i * 50, y,
        45, 22, kTrack1 + i);
  }
  y += 30;
  add(L"BUTTON", L"Reconnect a lost receiver", WS_TABSTOP | BS_AUTOCHECKBOX, 130, y, 300, 22,
      kReconnect);
  y += 26;
  add(L"BUTTON", L"Start with OBS", WS_TABSTOP | BS_AUTOCHECKBOX, 130, y, 300, 22, kStartWithObs);
  y += 34;
  add(L"STATIC", L"", 0, 12, y, 600, 48, kStatus);
  y += 54;
  add(L"EDIT", L"", ES_MULTILINE | ES_READONLY | WS_VSCROLL, 12, y, 600, 110, kTable);
  y += 120;
  add(L"BUTTON", L"Start", WS_TABSTOP | BS_DEFPUSHBUTTON, 12, y, 90, 26, kStart);
  add(L"BUTTON", L"Close", WS_TABSTOP | BS_PUSHBUTTON, 522, y, 90, 26, kClose);
}

void load(HWND window) {
  const DialogFields f = load_fields();
  set_text(window, kDestinations, f.destinations);
  const auto choices = transport_choices();
  int index = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].second == f.transport) index = static_cast<int>(i);
  }
  SendMessageW(item(window, kTransport), CB_SETCURSEL, static_cast<WPARAM>(index), 0);
  set_text(window, kKeyFile, f.key_file);
  set_text(window, kName, f.name);
  for (int i = 0; i < 6; ++i) check(window, kTrack1 + i, f.tracks[static_cast<size_t>(i)]);
  check(window, kReconnect, f.reconnect);
  check(window, kStartWithObs, f.start_with_obs);
}

void save(HWND window) {
  DialogFields f;
  f.destinations = text_of(window, kDestinations);
  const auto choices = transport_choices();
  const auto index = SendMessageW(item(window, kTransport), CB_GETCURSEL, 0, 0);
  f.transport = index >= 0 && static_cast<size_t>(index) < choices.size()
                    ? choices[static_cast<size_t>(index)].second
                    : choices.front().second;
  f.key_file = text_of(window, kKeyFile);
  f.name = text_of(window, kName);
  for (int i = 0; i < 6; ++i) f.tracks[static_cast<size_t>(i)] = checked(window, kTrack1 + i);
  f.reconnect = checked(window, kReconnect);
  f.start_with_obs = checked(window, kStartWithObs);
  save_fields(f);
}

void refresh(HWND window) {
  const DialogStatus st = dialog_status();
  set_text(window, kStart, st.active ? "Stop" : "Start");
  std::string text = st.text;
  for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; at += 2)
    text.insert(at, "\r");
  set_text(window, kStatus, text);
  std::string table = "Receiver\tTransport\tState\tFrames\tDrops\tGB/s";
  for (const auto& row : st.rows) {
    table += "\r\n";
    for (size_t c = 0; c < row.size(); ++c) table += (c ? "\t" : "") + row[c];
  }
  set_text(window, kTable, table);
}

void look_for_receivers(HWND window) {
  if (g_browsing.valid()) return;
  HWND found = item(window, kFound);
  SendMessageW(found, CB_RESETCONTENT, 0, 0);
  SendMessageW(found, CB_ADDSTRING, 0, reinterpret_cast<LPARAM>(L"Looking for receivers..."));
  SendMessageW(found, CB_SETCURSEL, 0, 0);
  g_browsing = std::async(std::launch::async, [] { return found_receivers(browse_receivers()); });
}

// From the refresh timer: the browse's rows once it is done. Row 0 says what was found; the
// receivers follow, in g_found's order.
void show_found(HWND window) {
  if (!g_browsing.valid() ||
      g_browsing.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return;
  }
  const auto rows = g_browsing.get();
  g_found.clear();
  HWND found = item(window, kFound);
  SendMessageW(found, CB_RESETCONTENT, 0, 0);
  const bool none = rows.size() == 1 && rows[0].entry.empty();
  const std::string head = none ? rows[0].label
                                : std::to_string(rows.size()) +
                                      (rows.size() == 1 ? " receiver" : " receivers") +
                                      " found: choose one to add it";
  SendMessageW(found, CB_ADDSTRING, 0, reinterpret_cast<LPARAM>(widen(head).c_str()));
  for (const auto& row : rows) {
    if (row.entry.empty()) continue;
    g_found.push_back(row);
    SendMessageW(found, CB_ADDSTRING, 0, reinterpret_cast<LPARAM>(widen(row.label).c_str()));
  }
  SendMessageW(found, CB_SETCURSEL, 0, 0);
}

void choose_found(HWND window) {
  const auto index = SendMessageW(item(window, kFound), CB_GETCURSEL, 0, 0);
  if (index < 1 || static_cast<size_t>(index) > g_found.size()) return;
  set_text(
      window, kDestinations,
      with_receiver(text_of(window, kDestinations), g_found[static_cast<size_t>(index) - 1].entry));
  save(window);
}

void browse(HWND window) {
  wchar_t path[MAX_PATH] = {};
  const std::wstring current = widen(text_of(window, kKeyFile));
  current.copy(path, MAX_PATH - 1);
  OPENFILENAMEW ofn{};
  ofn.lStructSize = sizeof(ofn);
  ofn.hwndOwner = window;
  ofn.lpstrFile = path;
  ofn.nMaxFile = MAX_PATH;
  ofn.lpstrTitle = L"Shared key file";
  ofn.Flags = OFN_FILEMUSTEXIST | OFN_PATHMUSTEXIST;
  if (GetOpenFileNameW(&ofn)) {
    set_text(window, kKeyFile, narrow(path));
    save(window);
  }
}

void on_command(HWND window, int id, int code) {
  switch (id) {
    case kDestinations:
    case kKeyFile:
    case kName:
      if (code == EN_KILLFOCUS) save(window);
      return;
    case kTransport:
      if (code == CBN_SELCHANGE) save(window);
      return;
    case kBrowse: browse(window); return;
    case kFound:
      if (code == CBN_SELCHANGE) choose_found(window);
      return;
    case kRescan: look_for_receivers(window); return;
    case kReconnect:
    case kStartWithObs: save(window); return;
    case kStart: {
      save(window);
      const std::string why = toggle_output();
      refresh(window);
      if (!why.empty()) set_text(window, kStatus, why);
      return;
    }
    case kClose: DestroyWindow(window); return;
    default:
      if (id >= kTrack1 && id < kTrack1 + 6) save(window);
  }
}

// No exception may reach OBS's message loop: one is logged and the message taken as handled.
LRESULT CALLBACK window_proc(HWND window, UINT message, WPARAM wp, LPARAM lp) {
  try {
    switch (message) {
      case WM_CREATE:
        create_controls(window);
        load(window);
        refresh(window);
        look_for_receivers(window);
        SetTimer(window, kRefreshTimer, 250, nullptr);
        return 0;
      case WM_COMMAND: on_command(window, LOWORD(wp), HIWORD(wp)); return 0;
      case WM_TIMER:
        refresh(window);
        show_found(window);
        return 0;
      case WM_CLOSE: DestroyWindow(window); return 0;
      case WM_DESTROY:
        KillTimer(window, kRefreshTimer);
        if (g_browsing.valid()) g_browsing.wait();
        g_browsing = {};
        g_window = nullptr;
        return 0;
      default: break;
    }
  } catch (const std::exception& e) {
    log().error("rdmavideo dialog: {}", e.what());
    return 0;
  }
  return DefWindowProcW(window, message, wp, lp);
}

HINSTANCE this_module() {
  HMODULE module = nullptr;
  GetModuleHandleExW(
      GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
      reinterpret_cast<LPCWSTR>(&window_proc), &module);
  return module;
}

}  // namespace

void open_dialog() {
  if (g_window) {
    ShowWindow(g_window, SW_SHOWNORMAL);
    SetForegroundWindow(g_window);
    return;
  }
  const HINSTANCE instance = this_module();
  WNDCLASSEXW cls{};
  cls.cbSize = sizeof(cls);
  cls.lpfnWndProc = window_proc;
  cls.hInstance = instance;
  cls.hCursor = LoadCursorW(nullptr, reinterpret_cast<LPCWSTR>(IDC_ARROW));
  cls.hbrBackground = reinterpret_cast<HBRUSH>(COLOR_BTNFACE + 1);
  cls.lpszClassName = kClass;
  RegisterClassExW(&cls);  // fails harmlessly when registered by an earlier opening
  RECT size{0, 0, 624, 450};
  const DWORD style = WS_OVERLAPPED | WS_CAPTION | WS_SYSMENU;
  AdjustWindowRectEx(&size, style, FALSE, WS_EX_DLGMODALFRAME);
  g_window = CreateWindowExW(WS_EX_DLGMODALFRAME, kClass, L"rdmavideo Output", style, CW_USEDEFAULT,
                             CW_USEDEFAULT, size.right - size.left, size.bottom - size.top,
                             static_cast<HWND>(obs_frontend_get_main_window_handle()), nullptr,
                             instance, nullptr);
  if (!g_window) {
    log().error("rdmavideo dialog: CreateWindowEx failed ({})", GetLastError());
    return;
  }
  ShowWindow(g_window, SW_SHOWNORMAL);
}

void close_dialog() {
  if (g_window) DestroyWindow(g_window);
}

}  // namespace rdmavideo::obs
