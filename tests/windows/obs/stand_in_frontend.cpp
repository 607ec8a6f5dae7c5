// SPDX-License-Identifier: Apache-2.0
// A stand-in for OBS's obs-frontend-api.dll (see stand_in_obs.cpp): the frontend functions
// the plugin imports. Absent by default, as in a libobs host; a host makes it present to
// drive what the plugin does inside OBS (its output made at FINISHED_LOADING, the Tools menu).
#include <obs-frontend-api.h>

#include <string>
#include <utility>
#include <vector>

#include "stand_in.hpp"

namespace {

bool g_present = false;
void* g_main_window = nullptr;
std::vector<std::pair<obs_frontend_event_cb, void*>> g_callbacks;
struct ToolsItem {
  std::string name;
  obs_frontend_cb callback;
  void* data;
};
std::vector<ToolsItem> g_tools;

}  // namespace

extern "C" {

void stand_in_frontend_present(bool present, void* main_window_handle) {
  g_present = present;
  g_main_window = main_window_handle;
}

void stand_in_frontend_event(obs_frontend_event event) {
  for (auto [callback, data] : std::vector(g_callbacks)) callback(event, data);
}

int stand_in_tools_items() { return static_cast<int>(g_tools.size()); }
const char* stand_in_tools_item_name(int index) { return g_tools.at(index).name.c_str(); }
void stand_in_tools_item_click(int index) { g_tools.at(index).callback(g_tools.at(index).data); }

void* obs_frontend_get_main_window(void) { return g_present ? g_main_window : nullptr; }
void* obs_frontend_get_main_window_handle(void) { return g_present ? g_main_window : nullptr; }
config_t* obs_frontend_get_profile_config(void) { return g_present ? stand_in_profile() : nullptr; }

void obs_frontend_add_event_callback(obs_frontend_event_cb callback, void* data) {
  g_callbacks.emplace_back(callback, data);
}

void obs_frontend_remove_event_callback(obs_frontend_event_cb callback, void* data) {
  std::erase(g_callbacks, std::pair{callback, data});
}

void obs_frontend_add_tools_menu_item(const char* name, obs_frontend_cb callback, void* data) {
  g_tools.push_back({name, callback, data});
}
}
