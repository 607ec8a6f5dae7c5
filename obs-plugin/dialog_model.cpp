// SPDX-License-Identifier: Apache-2.0
#include "dialog_model.hpp"

#include <fmt/format.h>

#include "output.hpp"
#include "profile.hpp"

namespace rdmavideo::obs {

std::vector<std::pair<std::string, std::string>> transport_choices() {
  std::vector<std::pair<std::string, std::string>> choices{
      {"Automatic (RDMA where there is a route, else TCP)", "auto"}, {"TCP", "tcp"}};
#ifndef _WIN32
  choices.emplace_back("RDMA (verbs)", "verbs");
#endif
  return choices;
}

DialogFields load_fields() {
  obs_data_t* s = load_settings();
  obs_output_t* output = main_output();
  obs_data_t* defaults = output ? obs_output_get_settings(output) : nullptr;  // with the defaults
  obs_data_t* from = defaults ? defaults : s;
  DialogFields f;
  f.destinations = obs_data_get_string(from, "destinations");
  f.transport = obs_data_get_string(from, "transport");
  f.key_file = obs_data_get_string(from, "key_file");
  f.name = obs_data_get_string(from, "name");
  const auto mask = obs_data_get_int(from, "tracks");
  for (size_t i = 0; i < f.tracks.size(); ++i) f.tracks[i] = (mask & (1 << i)) != 0;
  f.reconnect = obs_data_get_bool(from, "reconnect");
  f.start_with_obs = start_with_obs();
  if (defaults) obs_data_release(defaults);
  obs_data_release(s);
  return f;
}

void save_fields(const DialogFields& f) {
  obs_data_t* s = obs_data_create();
  obs_data_set_string(s, "destinations", f.destinations.c_str());
  obs_data_set_string(s, "transport", f.transport.c_str());
  obs_data_set_string(s, "key_file", f.key_file.c_str());
  obs_data_set_string(s, "name", f.name.c_str());
  int mask = 0;
  for (size_t i = 0; i < f.tracks.size(); ++i) mask |= f.tracks[i] ? 1 << i : 0;
  obs_data_set_int(s, "tracks", mask);
  obs_data_set_bool(s, "reconnect", f.reconnect);
  save_settings(s);
  obs_data_release(s);
  if (f.start_with_obs != start_with_obs()) set_start_with_obs(f.start_with_obs);
}

DialogStatus dialog_status() {
  const OutputStatus st = status_of(main_output());
  DialogStatus d;
  d.active = st.active;
  d.text = st.active ? "Sending: " : "Stopped. ";
  d.text += st.summary;
  if (st.frames > 0) {
    d.text += fmt::format(
        "\n{} frames, {} dropped, {:.2f} GB sent, {:.2f} ms a frame in OBS's video callback",
        st.frames, st.dropped, static_cast<double>(st.bytes) / 1e9,
        static_cast<double>(st.callback_ns) / 1e6 / static_cast<double>(st.frames));
  }
  for (const auto& dest : st.destinations) {
    d.rows.push_back({dest.endpoint, dest.transport, dest.state, std::to_string(dest.frames),
                      std::to_string(dest.dropped), fmt::format("{:.3f}", dest.gbps)});
  }
  return d;
}

std::string toggle_output() {
  obs_output_t* output = main_output();
  if (!output) return "OBS has not made the output yet";
  if (obs_output_active(output)) {
    obs_output_stop(output);
    return {};
  }
  if (obs_output_start(output)) return {};
  const char* why = obs_output_get_last_error(output);
  return std::string("Not started: ") + (why ? why : "see OBS's log");
}

}  // namespace rdmavideo::obs
