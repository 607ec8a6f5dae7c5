// SPDX-License-Identifier: Apache-2.0
// A stand-in for OBS's obs.dll, built as obs.dll for the Windows plugin's tests under wine: the
// libobs functions rdmavideo-obs.dll imports (obs-plugin/windows/obs.def), implemented just
// far enough to drive the plugin as OBS does. It keeps output types, settings (obs_data),
// profile config (config_t) and outputs; an output's data capture is a thread that calls the
// plugin's raw_video and raw_audio2 in real time with frames in the format asked for: white
// flashes on the first frame of every second and, on every mix, a beep on the same instant
// (what tests/support/av_sync.py measures). It is not OBS, and checks the plugin's logic and
// its use of the libobs ABI, never OBS itself. stand_in.hpp is the host's side.
#include "stand_in.hpp"

#include <windows.h>
// windows.h first: libobs' headers expect it on Windows.
#include <obs-module.h>
#include <util/config-file.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using nlohmann::json;

struct obs_data {
  json values = json::object();
  json defaults = json::object();
  std::map<std::string, std::string> strings;  // what get_string returned: kept alive here
  std::string json_text;
  std::atomic<int> refs{1};

  const json* find(const char* name) const {
    if (auto it = values.find(name); it != values.end()) return &*it;
    if (auto it = defaults.find(name); it != defaults.end()) return &*it;
    return nullptr;
  }
};

struct config_data {
  std::map<std::string, std::map<std::string, std::string>> sections;
  int saves = 0;
};

struct video_output {
  video_output_info info{};
};
struct audio_output {
  audio_output_info info{};
};

struct proc_handler {
  std::map<std::string, std::pair<proc_handler_proc_t, void*>> procs;
};

struct obs_output {
  obs_output_info info{};
  void* data = nullptr;
  obs_data_t* settings = nullptr;
  std::string name, last_error;
  std::atomic<bool> active{false};
  std::optional<video_scale_info> conversion;
  size_t mixers = 0;
  proc_handler procs;
  std::mutex capture_mu;
  std::thread capture;
  std::atomic<bool> capturing{false};
  std::atomic<int> stop_code{-1};
  std::atomic<uint64_t> frames_fed{0};
};

namespace {

std::mutex g_mu;
std::vector<obs_output_info> g_output_types;
video_output g_video;
audio_output g_audio;
config_data g_profile;
obs_output_t* g_last_output = nullptr;

// The capture thread: OBS's video and audio threads in one, in real time from the start.
void run_capture(obs_output_t* output) {
  const video_output_info& canvas = g_video.info;
  const video_format format = output->conversion ? output->conversion->format : canvas.format;
  const uint32_t w = canvas.width, h = canvas.height;
  const bool ten_bit = format == VIDEO_FORMAT_P010;
  const size_t sample = ten_bit ? 2 : 1;
  std::vector<uint8_t> luma(size_t{w} * h * sample), chroma(size_t{w} * (h / 2) * sample);
  auto fill = [&](bool white) {
    const uint16_t y = white ? 235 : 81, cb = white ? 128 : 90, cr = white ? 128 : 240;
    auto put = [&](std::vector<uint8_t>& plane, size_t i, uint16_t v8) {
      if (ten_bit) {
        const uint16_t v = static_cast<uint16_t>(v8 << 8);  // 10 bits in the high bits
        plane[i * 2] = static_cast<uint8_t>(v & 0xff);
        plane[i * 2 + 1] = static_cast<uint8_t>(v >> 8);
      } else {
        plane[i] = static_cast<uint8_t>(v8);
      }
    };
    for (size_t i = 0; i < size_t{w} * h; ++i) put(luma, i, y);
    for (size_t i = 0; i < size_t{w} * (h / 2); i += 2) put(chroma, i, cb), put(chroma, i + 1, cr);
  };
  const double fps = static_cast<double>(canvas.fps_num) / canvas.fps_den;
  const uint32_t rate = g_audio.info.samples_per_sec;
  const size_t channels = get_audio_channels(g_audio.info.speakers);
  constexpr uint32_t kChunk = 1024;  // AUDIO_OUTPUT_FRAMES
  std::vector<std::vector<float>> audio(channels, std::vector<float>(kChunk));
  const auto start = std::chrono::steady_clock::now();
  const uint64_t base_ns = 1'000'000'000;  // OBS's clock: any origin, one for both
  uint64_t frame = 0, samples = 0;
  bool white_now = false;
  fill(false);
  while (output->capturing) {
    const double video_due = static_cast<double>(frame) / fps;
    const double audio_due = static_cast<double>(samples) / rate;
    const double due = std::min(video_due, audio_due);
    std::this_thread::sleep_until(start + std::chrono::duration<double>(due));
    if (!output->capturing) break;
    if (video_due <= audio_due) {
      const bool white = frame % static_cast<uint64_t>(std::lround(fps)) == 0;
      if (white != white_now) fill(white), white_now = white;
      video_data v{};
      v.data[0] = luma.data();
      v.data[1] = chroma.data();
      v.linesize[0] = v.linesize[1] = static_cast<uint32_t>(w * sample);
      v.timestamp = base_ns + static_cast<uint64_t>(video_due * 1e9);
      output->info.raw_video(output->data, &v);
      ++frame;
      ++output->frames_fed;
    } else {
      for (size_t mix = 0; mix < MAX_AUDIO_MIXES; ++mix) {
        if (!(output->mixers & (size_t{1} << mix))) continue;
        const double hz = 1000.0 / static_cast<double>(mix + 1);  // mix 1: 1 kHz, mix 2: 500 Hz
        for (uint32_t i = 0; i < kChunk; ++i) {
          const uint64_t n = samples + i;
          const bool beep = n % rate < rate / 10;
          const double level = beep ? 0.5 : 0.01;
          const float s = static_cast<float>(
              level * std::sin(2 * std::numbers::pi * hz * static_cast<double>(n) / rate));
          for (auto& plane : audio) plane[i] = s;
        }
        audio_data a{};
        for (size_t c = 0; c < channels; ++c)
          a.data[c] = reinterpret_cast<uint8_t*>(audio[c].data());
        a.frames = kChunk;
        a.timestamp = base_ns + samples * 1'000'000'000ull / rate;
        output->info.raw_audio2(output->data, mix, &a);
      }
      samples += kChunk;
    }
  }
}

void end_capture(obs_output_t* output) {
  std::thread ending;
  {
    std::lock_guard lock(output->capture_mu);
    output->capturing = false;
    ending = std::move(output->capture);
  }
  if (ending.joinable()) {
    if (ending.get_id() == std::this_thread::get_id()) {
      ending.detach();  // the plugin ended it from a callback
    } else {
      ending.join();
    }
  }
}

}  // namespace

// ---- the host's side (stand_in.hpp)

extern "C" {

void stand_in_set_canvas(const video_output_info* video, const audio_output_info* audio) {
  g_video.info = *video;
  g_audio.info = *audio;
}

config_t* stand_in_profile() { return &g_profile; }

int stand_in_profile_saves() { return g_profile.saves; }

int stand_in_stop_code(obs_output_t* output) { return output->stop_code; }

uint64_t stand_in_frames_fed(obs_output_t* output) { return output->frames_fed; }

bool stand_in_capturing(obs_output_t* output) { return output->capturing; }

obs_output_t* stand_in_last_output() { return g_last_output; }

bool stand_in_call_proc(obs_output_t* output, const char* name, calldata_t* data) {
  auto it = output->procs.procs.find(name);
  if (it == output->procs.procs.end()) return false;
  it->second.first(it->second.second, data);
  return true;
}

// ---- logging and modules

void blog(int level, const char* format, ...) {
  const char* what = level <= LOG_ERROR ? "error" : level <= LOG_WARNING ? "warning" : "info";
  va_list args;
  va_start(args, format);
  std::lock_guard lock(g_mu);
  std::fprintf(stderr, "obs %s: ", what);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

void obs_register_output_s(const obs_output_info* info, size_t size) {
  obs_output_info copy{};
  std::memcpy(&copy, info, std::min(size, sizeof(copy)));
  g_output_types.push_back(copy);
}

// ---- obs_data

obs_data_t* obs_data_create() { return new obs_data; }

obs_data_t* obs_data_create_from_json(const char* text) {
  auto* d = new obs_data;
  try {
    d->values = json::parse(text);
  } catch (const std::exception&) {
    delete d;
    return nullptr;
  }
  return d;
}

void obs_data_release(obs_data_t* d) {
  if (d && --d->refs == 0) delete d;
}

const char* obs_data_get_json(obs_data_t* d) {
  d->json_text = d->values.dump();
  return d->json_text.c_str();
}

const char* obs_data_get_string(obs_data_t* d, const char* name) {
  const json* v = d->find(name);
  auto& kept = d->strings[name];
  kept = v && v->is_string() ? v->get<std::string>() : "";
  return kept.c_str();
}

long long obs_data_get_int(obs_data_t* d, const char* name) {
  const json* v = d->find(name);
  return v && v->is_number() ? v->get<long long>() : 0;
}

bool obs_data_get_bool(obs_data_t* d, const char* name) {
  const json* v = d->find(name);
  return v && v->is_boolean() && v->get<bool>();
}

void obs_data_set_string(obs_data_t* d, const char* name, const char* v) { d->values[name] = v; }
void obs_data_set_int(obs_data_t* d, const char* name, long long v) { d->values[name] = v; }
void obs_data_set_bool(obs_data_t* d, const char* name, bool v) { d->values[name] = v; }
void obs_data_set_default_string(obs_data_t* d, const char* name, const char* v) {
  d->defaults[name] = v;
}
void obs_data_set_default_int(obs_data_t* d, const char* name, long long v) {
  d->defaults[name] = v;
}
void obs_data_set_default_bool(obs_data_t* d, const char* name, bool v) { d->defaults[name] = v; }

// ---- the profile's config

const char* config_get_string(config_t* c, const char* section, const char* name) {
  auto& s = c->sections[section];
  auto it = s.find(name);
  return it == s.end() ? nullptr : it->second.c_str();
}

bool config_get_bool(config_t* c, const char* section, const char* name) {
  const char* v = config_get_string(c, section, name);
  return v && (std::string(v) == "true" || std::string(v) == "1");
}

void config_set_string(config_t* c, const char* section, const char* name, const char* value) {
  c->sections[section][name] = value;
}

void config_set_bool(config_t* c, const char* section, const char* name, bool value) {
  config_set_string(c, section, name, value ? "true" : "false");
}

int config_save_safe(config_t* c, const char*, const char*) {
  ++c->saves;
  return CONFIG_SUCCESS;
}

// ---- outputs

obs_output_t* obs_output_create(const char* id, const char* name, obs_data_t* settings,
                                obs_data_t*) {
  for (const auto& type : g_output_types) {
    if (std::string(type.id) != id) continue;
    auto* output = new obs_output;
    output->info = type;
    output->name = name;
    output->settings = obs_data_create();
    if (type.get_defaults) type.get_defaults(output->settings);
    if (settings) output->settings->values.update(settings->values);
    output->data = type.create(output->settings, output);
    g_last_output = output;
    return output;
  }
  return nullptr;
}

void obs_output_release(obs_output_t* output) {
  if (!output) return;
  if (output->active) obs_output_stop(output);
  end_capture(output);
  output->info.destroy(output->data);
  obs_data_release(output->settings);
  if (g_last_output == output) g_last_output = nullptr;
  delete output;
}

const char* obs_output_get_id(const obs_output_t* output) { return output->info.id; }
void* obs_obj_get_data(void* object) { return static_cast<obs_output_t*>(object)->data; }

obs_data_t* obs_output_get_settings(const obs_output_t* output) {
  ++output->settings->refs;
  return output->settings;
}

void obs_output_update(obs_output_t* output, obs_data_t* settings) {
  output->settings->values.update(settings->values);
  if (output->info.update) output->info.update(output->data, output->settings);
}

bool obs_output_start(obs_output_t* output) {
  output->stop_code = -1;
  const bool started = output->info.start(output->data);
  output->active = started;
  return started;
}

void obs_output_stop(obs_output_t* output) {
  output->info.stop(output->data, 0);
  output->active = false;
}

bool obs_output_active(const obs_output_t* output) { return output->active; }

void obs_output_signal_stop(obs_output_t* output, int code) {
  output->stop_code = code;
  output->active = false;
  end_capture(output);
}

bool obs_output_can_begin_data_capture(const obs_output_t*, uint32_t) { return true; }

bool obs_output_begin_data_capture(obs_output_t* output, uint32_t) {
  std::lock_guard lock(output->capture_mu);
  if (output->capturing) return true;
  output->capturing = true;
  output->capture = std::thread(run_capture, output);
  return true;
}

void obs_output_end_data_capture(obs_output_t* output) { end_capture(output); }

video_t* obs_output_video(const obs_output_t*) { return &g_video; }
audio_t* obs_output_audio(const obs_output_t*) { return &g_audio; }
const video_output_info* video_output_get_info(const video_t* video) { return &video->info; }
const audio_output_info* audio_output_get_info(const audio_t* audio) { return &audio->info; }

void obs_output_set_video_conversion(obs_output_t* output, const video_scale_info* conversion) {
  if (conversion) {
    output->conversion = *conversion;
  } else {
    output->conversion.reset();
  }
}

void obs_output_set_audio_conversion(obs_output_t*, const audio_convert_info* conversion) {
  if (conversion->format != AUDIO_FORMAT_FLOAT_PLANAR) {
    blog(LOG_ERROR, "stand-in: only float planar audio is made");
    std::abort();
  }
}

void obs_output_set_mixers(obs_output_t* output, size_t mixers) { output->mixers = mixers; }

const char* obs_output_get_last_error(obs_output_t* output) {
  return output->last_error.empty() ? nullptr : output->last_error.c_str();
}

void obs_output_set_last_error(obs_output_t* output, const char* message) {
  output->last_error = message ? message : "";
}

proc_handler_t* obs_output_get_proc_handler(const obs_output_t* output) {
  return const_cast<proc_handler_t*>(&output->procs);
}

void proc_handler_add(proc_handler_t* handler, const char* decl, proc_handler_proc_t proc,
                      void* data) {
  // "void get_stats(out int frames, ...)": the name is what stands before the parenthesis.
  std::string d = decl;
  const auto open = d.find('(');
  const auto space = d.rfind(' ', open);
  handler->procs[d.substr(space + 1, open - space - 1)] = {proc, data};
}

// calldata: the stand-in keeps its values in a map of its own behind `stack`.
void calldata_set_data(calldata_t* data, const char* name, const void* in, size_t size) {
  if (!data->stack)
    data->stack = reinterpret_cast<uint8_t*>(new std::map<std::string, std::string>);
  auto& values = *reinterpret_cast<std::map<std::string, std::string>*>(data->stack);
  values[name].assign(static_cast<const char*>(in), size);
}

bool calldata_get_data(const calldata_t* data, const char* name, void* out, size_t size) {
  if (!data->stack) return false;
  const auto& values = *reinterpret_cast<const std::map<std::string, std::string>*>(data->stack);
  auto it = values.find(name);
  if (it == values.end() || it->second.size() != size) return false;
  std::memcpy(out, it->second.data(), size);
  return true;
}

// ---- properties: recorded, never shown

struct obs_properties {
  std::vector<std::string> names;
};
struct obs_property {
  std::vector<std::string> items;
};
obs_properties_t* obs_properties_create() { return new obs_properties; }
static obs_property_t* add_property(obs_properties_t* props, const char* name) {
  props->names.push_back(name);
  static obs_property property;  // one for all: nothing reads it back
  return &property;
}
obs_property_t* obs_properties_add_bool(obs_properties_t* p, const char* name, const char*) {
  return add_property(p, name);
}
obs_property_t* obs_properties_add_int(obs_properties_t* p, const char* name, const char*, int, int,
                                       int) {
  return add_property(p, name);
}
obs_property_t* obs_properties_add_text(obs_properties_t* p, const char* name, const char*,
                                        enum obs_text_type) {
  return add_property(p, name);
}
obs_property_t* obs_properties_add_path(obs_properties_t* p, const char* name, const char*,
                                        enum obs_path_type, const char*, const char*) {
  return add_property(p, name);
}
obs_property_t* obs_properties_add_list(obs_properties_t* p, const char* name, const char*,
                                        enum obs_combo_type, enum obs_combo_format) {
  return add_property(p, name);
}
size_t obs_property_list_add_string(obs_property_t* property, const char* name, const char*) {
  property->items.push_back(name);
  return property->items.size() - 1;
}

}  // extern "C"
