// SPDX-License-Identifier: Apache-2.0
// A small libobs host, as another libobs program would use the plugin: it starts libobs with
// video (OpenGL through EGL on X11, so under Xvfb Mesa renders) and audio, loads only the
// modules it needs (image-source, obs-ffmpeg and the rdmavideo plugin; OBS's UI modules abort
// without the OBS application), builds a scene, and runs `rdmavideo_output` for a while.
//
//   obs_host --plugin PATH --destinations HOST:PORT --seconds S [--format NV12|P010|I444|BGRA]
//            [--colorspace 709|601|2100pq|2100hlg] [--range partial|full] [--color 0xAABBGGRR]
//            [--clip-a FILE] [--clip-b FILE] [--tracks MASK] [--size WxH] [--fps N/D]
//            [--record FILE.mkv [--record-encoder ffv1]] [--no-rdmavideo] [--null-output]
//            [--reconnect] [--after-release S] [--cycles N]
//
// --record runs OBS's own FFmpeg output (obs-ffmpeg's ffmpeg_output, which encodes OBS's raw
// canvas itself, as OBS's custom recording does) beside ours, writing the same canvas and
// tracks losslessly: what the tests compare sync against and the bench compares cost with.
// --no-rdmavideo leaves ours out (the bench's other case). --null-output adds a raw output
// of this program's own whose callbacks do nothing: what OBS itself spends making raw frames
// for any output (reading the canvas back, converting it), apart from what an output does.
// --abandon-recording ends the process without stopping OBS's FFmpeg output: under heavy render lag
// OBS 29's ffmpeg_output frees its encoder while its video callback still encodes (a crash of OBS's
// own output), and the bench needs only its cost, not its file.
// The scene: a colour source filling the canvas; --clip-a in the top-left quarter with its
// audio on track 1, --clip-b in the top-right quarter with its audio on track 2 (media
// sources, looping). On stdout at the end, one JSON object: the output's frames, dropped
// frames, bytes, the time spent in the raw video callback, and its last error; how long
// obs_output_stop, the output's get_stats after it and obs_output_release took on this (OBS's
// UI) thread; resident memory a third of the way through and at the end. --reconnect turns
// the plugin's reconnect on and libobs' own (obs_output_set_reconnect_settings, as OBS does
// for its streaming outputs); --after-release keeps libobs running that long after the
// output is released (a reconnect thread of libobs' would call into it then).
// Without --record the output is released before the JSON is printed. --cycles N starts and
// stops the output N times first (50 ms apart, stopped as OBS's frontend stops it), and the
// JSON gives the process's threads before and after and the slowest stop; a second line then
// gives how long obs_shutdown took.
#include <X11/Xlib.h>
#include <obs-module.h>
#include <obs-nix-platform.h>
#include <obs.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

namespace {

struct Args {
  std::string plugin, destinations, clip_a, clip_b, transport = "tcp", name = "OBS program";
  std::string record, record_encoder = "ffv1";
  bool abandon_recording = false;
  bool null_output = false;
  bool reconnect = false;
  double after_release = 0;
  int cycles = 0;
  bool rdmavideo = true;
  double seconds = 5;
  video_format format = VIDEO_FORMAT_NV12;
  video_colorspace colorspace = VIDEO_CS_709;
  video_range_type range = VIDEO_RANGE_PARTIAL;
  uint32_t color = 0xFFCC6633;  // ABGR: R 0x33, G 0x66, B 0xCC
  int tracks = 3;
  uint32_t width = 640, height = 360, fps_num = 30, fps_den = 1;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "obs_host: %s\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--no-rdmavideo") {
      a.rdmavideo = false;
      continue;
    }
    if (k == "--null-output") {
      a.null_output = true;
      continue;
    }
    if (k == "--abandon-recording") {
      a.abandon_recording = true;
      continue;
    }
    if (k == "--reconnect") {
      a.reconnect = true;
      continue;
    }
    if (i + 1 >= argc) die("missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--plugin")
      a.plugin = v;
    else if (k == "--destinations")
      a.destinations = v;
    else if (k == "--transport")
      a.transport = v;
    else if (k == "--record")
      a.record = v;
    else if (k == "--record-encoder")
      a.record_encoder = v;
    else if (k == "--seconds")
      a.seconds = std::stod(v);
    else if (k == "--cycles")
      a.cycles = std::stoi(v);
    else if (k == "--after-release")
      a.after_release = std::stod(v);
    else if (k == "--clip-a")
      a.clip_a = v;
    else if (k == "--clip-b")
      a.clip_b = v;
    else if (k == "--tracks")
      a.tracks = std::stoi(v);
    else if (k == "--color")
      a.color = static_cast<uint32_t>(std::stoul(v, nullptr, 0));
    else if (k == "--size")
      std::sscanf(v.c_str(), "%ux%u", &a.width, &a.height);
    else if (k == "--fps")
      std::sscanf(v.c_str(), "%u/%u", &a.fps_num, &a.fps_den);
    else if (k == "--format") {
      if (v == "NV12")
        a.format = VIDEO_FORMAT_NV12;
      else if (v == "P010")
        a.format = VIDEO_FORMAT_P010;
      else if (v == "I010")
        a.format = VIDEO_FORMAT_I010;
      else if (v == "I444")
        a.format = VIDEO_FORMAT_I444;
      else if (v == "BGRA")
        a.format = VIDEO_FORMAT_BGRA;
      else
        die("--format " + v);
    } else if (k == "--colorspace") {
      if (v == "709")
        a.colorspace = VIDEO_CS_709;
      else if (v == "601")
        a.colorspace = VIDEO_CS_601;
      else if (v == "2100pq")
        a.colorspace = VIDEO_CS_2100_PQ;
      else if (v == "2100hlg")
        a.colorspace = VIDEO_CS_2100_HLG;
      else
        die("--colorspace " + v);
    } else if (k == "--range") {
      a.range = v == "full" ? VIDEO_RANGE_FULL : VIDEO_RANGE_PARTIAL;
    } else
      die("unknown option " + k);
  }
  if (a.plugin.empty() || (a.rdmavideo && a.destinations.empty()))
    die("--plugin and --destinations are needed");
  return a;
}

void load_module(const std::string& path, const char* data_path) {
  obs_module_t* module = nullptr;
  if (obs_open_module(&module, path.c_str(), data_path) != MODULE_SUCCESS)
    die("cannot open module " + path);
  if (!obs_init_module(module)) die("module " + path + " did not load");
}

obs_source_t* media(const std::string& file, const char* name, uint32_t mixers) {
  obs_data_t* s = obs_data_create();
  obs_data_set_bool(s, "is_local_file", true);
  obs_data_set_string(s, "local_file", file.c_str());
  obs_data_set_bool(s, "looping", true);
  obs_data_set_bool(s, "hw_decode", false);
  obs_source_t* source = obs_source_create("ffmpeg_source", name, s, nullptr);
  obs_data_release(s);
  if (!source) die("cannot create a media source for " + file);
  obs_source_set_audio_mixers(source, mixers);
  return source;
}

void place(obs_scene_t* scene, obs_source_t* source, float x, float y, float w, float h) {
  obs_sceneitem_t* item = obs_scene_add(scene, source);
  vec2 pos{};
  pos.x = x;
  pos.y = y;
  obs_sceneitem_set_pos(item, &pos);
  vec2 bounds{};
  bounds.x = w;
  bounds.y = h;
  obs_sceneitem_set_bounds_type(item, OBS_BOUNDS_STRETCH);
  obs_sceneitem_set_bounds(item, &bounds);
}

long resident_kb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmRSS: %ld", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// A raw output that takes OBS's frames and audio and does nothing with them.
void register_null_output() {
  obs_output_info info{};
  info.id = "null_raw_output";
  info.flags = OBS_OUTPUT_AV | OBS_OUTPUT_MULTI_TRACK;
  info.get_name = [](void*) -> const char* { return "null raw output"; };
  info.create = [](obs_data_t*, obs_output_t* output) -> void* { return output; };
  info.destroy = [](void*) {};
  info.start = [](void* data) {
    auto* output = static_cast<obs_output_t*>(data);
    obs_output_set_mixers(output, 1);
    return obs_output_begin_data_capture(output, 0);
  };
  info.stop = [](void* data, uint64_t) {
    obs_output_end_data_capture(static_cast<obs_output_t*>(data));
  };
  info.raw_video = [](void*, video_data*) {};
  info.raw_audio2 = [](void*, size_t, audio_data*) {};
  obs_register_output(&info);
}

std::mutex g_mu;
std::condition_variable g_cv;
bool g_stopped = false;
long long g_stop_code = 0;

bool g_recording_stopped = false;
void on_recording_stop(void*, calldata_t*) {
  std::lock_guard lock(g_mu);
  g_recording_stopped = true;
  g_cv.notify_all();
}

void on_stop(void*, calldata_t* cd) {
  std::lock_guard lock(g_mu);
  g_stopped = true;
  g_stop_code = calldata_int(cd, "code");
  g_cv.notify_all();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  Display* display = XOpenDisplay(nullptr);
  if (!display) die("no X display (DISPLAY unset, or Xvfb not running)");
  obs_set_nix_platform(OBS_NIX_PLATFORM_X11_EGL);
  obs_set_nix_platform_display(display);
  if (!obs_startup("en-US", nullptr, nullptr)) die("obs_startup failed");

  obs_video_info ovi{};
  ovi.graphics_module = "libobs-opengl";
  ovi.fps_num = a.fps_num;
  ovi.fps_den = a.fps_den;
  ovi.base_width = ovi.output_width = a.width;
  ovi.base_height = ovi.output_height = a.height;
  ovi.output_format = a.format;
  ovi.colorspace = a.colorspace;
  ovi.range = a.range;
  ovi.gpu_conversion = true;
  ovi.scale_type = OBS_SCALE_BICUBIC;
  if (const int rc = obs_reset_video(&ovi); rc != OBS_VIDEO_SUCCESS)
    die("obs_reset_video: " + std::to_string(rc));
  obs_audio_info oai{};
  oai.samples_per_sec = 48000;
  oai.speakers = SPEAKERS_STEREO;
  if (!obs_reset_audio(&oai)) die("obs_reset_audio failed");

  const std::string plugins = "/usr/lib/x86_64-linux-gnu/obs-plugins/";
  load_module(plugins + "image-source.so", "/usr/share/obs/obs-plugins/image-source");
  load_module(plugins + "obs-ffmpeg.so", "/usr/share/obs/obs-plugins/obs-ffmpeg");
  load_module(a.plugin, nullptr);
  obs_post_load_modules();
  register_null_output();

  obs_scene_t* scene = obs_scene_create("scene");
  obs_data_t* cs = obs_data_create();
  obs_data_set_int(cs, "color", a.color);
  obs_data_set_int(cs, "width", a.width);
  obs_data_set_int(cs, "height", a.height);
  obs_source_t* colour = obs_source_create("color_source_v3", "colour", cs, nullptr);
  obs_data_release(cs);
  if (!colour) die("cannot create color_source_v3");
  place(scene, colour, 0, 0, static_cast<float>(a.width), static_cast<float>(a.height));
  const float qw = a.width / 2.0f, qh = a.height / 2.0f;
  if (!a.clip_a.empty()) place(scene, media(a.clip_a, "clip a", 1), 0, 0, qw, qh);
  if (!a.clip_b.empty()) place(scene, media(a.clip_b, "clip b", 2), qw, 0, qw, qh);
  obs_set_output_source(0, obs_scene_get_source(scene));

  obs_output_t* output = nullptr;
  if (a.rdmavideo) {
    obs_data_t* settings = obs_data_create();
    obs_data_set_string(settings, "destinations", a.destinations.c_str());
    obs_data_set_string(settings, "transport", a.transport.c_str());
    obs_data_set_string(settings, "name", a.name.c_str());
    obs_data_set_int(settings, "tracks", a.tracks);
    obs_data_set_bool(settings, "reconnect", a.reconnect);
    output = obs_output_create("rdmavideo_output", "rdmavideo", settings, nullptr);
    obs_data_release(settings);
    if (!output) die("cannot create rdmavideo_output: is the plugin loaded?");
    if (a.reconnect) obs_output_set_reconnect_settings(output, 20, 1);
    signal_handler_connect(obs_output_get_signal_handler(output), "stop", on_stop, nullptr);
    obs_output_set_media(output, obs_get_video(), obs_get_audio());
  }
  obs_output_t* recording = nullptr;
  if (!a.record.empty()) {
    obs_data_t* rs = obs_data_create();
    obs_data_set_string(rs, "url", a.record.c_str());
    obs_data_set_string(rs, "format_name", "matroska");
    obs_data_set_string(rs, "video_encoder", a.record_encoder.c_str());
    obs_data_set_int(rs, "video_encoder_id",
                     a.record_encoder == "ffv1" ? 33 /* AV_CODEC_ID_FFV1 */ : 0);
    obs_data_set_string(rs, "audio_encoder", "pcm_s16le");
    obs_data_set_int(rs, "audio_encoder_id", 0x10000 /* AV_CODEC_ID_PCM_S16LE */);
    obs_data_set_int(rs, "gop_size", 1);
    recording = obs_output_create("ffmpeg_output", "recording", rs, nullptr);
    obs_data_release(rs);
    if (!recording) die("cannot create ffmpeg_output");
    obs_output_set_mixers(recording, static_cast<size_t>(a.tracks));
    signal_handler_connect(obs_output_get_signal_handler(recording), "stop", on_recording_stop,
                           nullptr);
    obs_output_set_media(recording, obs_get_video(), obs_get_audio());
  }
  // Started and stopped again and again, as someone clicking Start and Stop does.
  const int threads_before = thread_count();
  double worst_cycle_ms = 0;
  for (int i = 0; output && i < a.cycles; ++i) {
    obs_output_start(output);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto stopping = std::chrono::steady_clock::now();
    if (obs_output_active(output)) {
      obs_output_stop(output);
    } else {
      obs_output_force_stop(output);
    }
    worst_cycle_ms = std::max(worst_cycle_ms, ms_since(stopping));
  }
  if (a.cycles > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::lock_guard lock(g_mu);
    g_stopped = false;
  }
  const int threads_after = thread_count();
  if (output && !obs_output_start(output)) {
    const char* why = obs_output_get_last_error(output);
    die(std::string("obs_output_start failed: ") + (why ? why : "no reason given"));
  }
  if (recording && !obs_output_start(recording)) {
    const char* why = obs_output_get_last_error(recording);
    die(std::string("ffmpeg_output did not start: ") + (why ? why : "no reason given"));
  }
  obs_output_t* null_output = nullptr;
  if (a.null_output) {
    null_output = obs_output_create("null_raw_output", "null", nullptr, nullptr);
    obs_output_set_media(null_output, obs_get_video(), obs_get_audio());
    if (!obs_output_start(null_output)) die("the null output did not start");
  }
  const double cpu_began = process_cpu_s();
  const uint32_t rendered_began = obs_get_total_frames(), lagged_began = obs_get_lagged_frames();
  const auto began = std::chrono::steady_clock::now();
  const auto until = began + std::chrono::duration<double>(a.seconds);
  long rss_early_kb = -1;
  {
    std::unique_lock lock(g_mu);
    g_cv.wait_until(lock, began + std::chrono::duration<double>(a.seconds / 3),
                    [] { return g_stopped; });
    rss_early_kb = resident_kb();
    g_cv.wait_until(lock, until, [] { return g_stopped; });
  }
  const long rss_late_kb = resident_kb();
  const double cpu_s = process_cpu_s() - cpu_began;
  // OBS's video thread's own counts over the same span: canvases rendered, and ticks it
  // missed (rendering took longer than a frame).
  const uint32_t rendered = obs_get_total_frames() - rendered_began;
  const uint32_t lagged = obs_get_lagged_frames() - lagged_began;
  const bool stopped_early = g_stopped;
  const auto stopping = std::chrono::steady_clock::now();
  // As OBS's frontend stops an output: one still connecting (not active yet) is stopped by
  // force, which obs_output_stop would leave running.
  if (output && !stopped_early) {
    if (obs_output_active(output)) {
      obs_output_stop(output);
    } else {
      obs_output_force_stop(output);
    }
  }
  const double stop_ms = ms_since(stopping);
  if (null_output) obs_output_stop(null_output);
  if (output) {
    std::unique_lock lock(g_mu);
    g_cv.wait_for(lock, std::chrono::seconds(20), [] { return g_stopped; });
  }
  calldata_t cd{};
  const auto asking = std::chrono::steady_clock::now();
  if (output) proc_handler_call(obs_output_get_proc_handler(output), "get_stats", &cd);
  const double stats_ms = ms_since(asking);
  const char* last_error = output ? obs_output_get_last_error(output) : nullptr;
  const std::string error = last_error ? last_error : "";
  const int frames = output ? obs_output_get_total_frames(output) : 0;
  const int dropped = output ? obs_output_get_frames_dropped(output) : 0;
  const auto bytes =
      static_cast<unsigned long long>(output ? obs_output_get_total_bytes(output) : 0);
  double release_ms = -1;
  if (output && !recording) {
    const auto releasing = std::chrono::steady_clock::now();
    obs_output_release(output);
    release_ms = ms_since(releasing);
    output = nullptr;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.after_release));
  }
  std::printf(
      "{\"frames\": %d, \"dropped\": %d, \"bytes\": %llu, \"handed\": %lld, \"callback_ns\": %lld, "
      "\"callback_cpu_ns\": %lld, \"stop_code\": %lld, \"stopped_early\": %s, \"error\": \"%s\", "
      "\"rendered\": %u, \"lagged\": %u, \"cpu_s\": %.3f, \"recorded\": %d, \"null_frames\": %d, "
      "\"stop_ms\": %.1f, \"stats_ms\": %.1f, \"release_ms\": %.1f, \"rss_early_kb\": %ld, "
      "\"rss_late_kb\": %ld, \"threads_before\": %d, \"threads_after\": %d, "
      "\"worst_cycle_ms\": %.1f}\n",
      frames, dropped, bytes, calldata_int(&cd, "frames"), calldata_int(&cd, "callback_ns"),
      calldata_int(&cd, "callback_cpu_ns"), g_stop_code, stopped_early ? "true" : "false",
      error.c_str(), rendered, lagged, cpu_s,
      recording ? obs_output_get_total_frames(recording) : 0,
      null_output ? obs_output_get_total_frames(null_output) : 0, stop_ms, stats_ms, release_ms,
      rss_early_kb, rss_late_kb, threads_before, threads_after, worst_cycle_ms);
  calldata_free(&cd);
  std::fflush(stdout);
  if (recording && a.abandon_recording) std::_Exit(0);
  if (recording) {
    obs_output_stop(recording);
    // ffmpeg_output finishes its file on a thread of its own, which may go on encoding the
    // frames it queued after it signals "stop"; releasing it then frees its encoder under
    // that thread (OBS 29's ffmpeg_output). So once the file stops growing, ours is released
    // and the process ends without tearing OBS's down.
    {
      std::unique_lock lock(g_mu);
      g_cv.wait_for(lock, std::chrono::seconds(30), [] { return g_recording_stopped; });
    }
    std::error_code ec;
    auto size = std::filesystem::file_size(a.record, ec);
    for (int i = 0; i < 120; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const auto now = std::filesystem::file_size(a.record, ec);
      if (now == size) break;
      size = now;
    }
    obs_output_release(output);
    std::fflush(stdout);
    std::_Exit(0);
  }
  obs_output_release(output);
  obs_output_release(null_output);
  obs_set_output_source(0, nullptr);
  obs_scene_release(scene);
  obs_source_release(colour);
  const auto shutting = std::chrono::steady_clock::now();
  obs_shutdown();
  std::printf("{\"shutdown_ms\": %.1f}\n", ms_since(shutting));
  std::fflush(stdout);
  XCloseDisplay(display);
  return 0;
}
