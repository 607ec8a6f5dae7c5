// SPDX-License-Identifier: Apache-2.0
#include "output.hpp"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "rdmavideo/caught.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::obs {
namespace {

std::mutex g_namer_mu;
std::function<std::string(size_t)> g_namer;

std::string track_name(size_t mix) {
  std::lock_guard lock(g_namer_mu);
  std::string name = g_namer ? g_namer(mix) : std::string();
  return name.empty() ? fmt::format("Track {}", mix + 1) : name;
}

class Output {
 public:
  explicit Output(obs_output_t* output) : output_(output) {}
  ~Output() {
    stop_run();
    join();
  }

  // libobs releases the output (destroy): from now on nothing here touches its handle, and
  // a stream still ending (a receiver that reads slowly, or not at all) ends on its own.
  void forget_output() {
    stop_run();
    published_.store(nullptr, std::memory_order_release);
    std::lock_guard lock(output_mu_);
    output_ = nullptr;
  }

  // OBS's UI thread (and libobs' reconnect thread): never waits on the network. The last
  // run's thread, still ending its stream or giving up a connect, is joined by the new one.
  bool start() {
    if (!obs_output_can_begin_data_capture(output_, 0)) return false;
    obs_data_t* data = obs_output_get_settings(output_);
    auto settings = OutputSettings::parse(
        obs_data_get_string(data, "destinations"), obs_data_get_string(data, "transport"),
        obs_data_get_string(data, "key_file"), obs_data_get_string(data, "name"),
        obs_data_get_int(data, "tracks"), obs_data_get_bool(data, "reconnect"));
    obs_data_release(data);
    if (!settings) return fail_now(settings.error().message());

    video_t* video = obs_output_video(output_);
    audio_t* audio = obs_output_audio(output_);
    if (!video || !audio) return fail_now("OBS has no video or audio output yet");
    video_output_info canvas = *video_output_get_info(video);
    const VideoPlan plan = plan_video(canvas);
    if (plan.conversion) {
      obs_output_set_video_conversion(output_, &*plan.conversion);
      log().info("[obs] OBS converts its {} canvas into {} for rdmavideo",
                 format_name(canvas.format), format_name(plan.conversion->format));
    } else {
      obs_output_set_video_conversion(output_, nullptr);
    }
    const audio_output_info* ai = audio_output_get_info(audio);
    const audio_convert_info convert{ai->samples_per_sec, AUDIO_FORMAT_FLOAT_PLANAR, ai->speakers};
    obs_output_set_audio_conversion(output_, &convert);
    obs_output_set_mixers(output_, settings->tracks);
    std::vector<ObsSender::Track> tracks;
    for (size_t mix = 0; mix < kMixTracks; ++mix) {
      if (settings->tracks & (1u << mix)) {
        tracks.push_back({mix, audio_track(ai->samples_per_sec, ai->speakers, track_name(mix))});
      }
    }
    // A stop flag of this run's own: the last run's connect, still giving up, keeps its
    // own (set), so this start neither waits for it nor brings it back to life.
    auto stopping = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard lock(run_mu_);
      run_stop_ = stopping;
    }
    {
      std::lock_guard lock(error_mu_);
      last_error_.clear();
    }
    published_.store(nullptr, std::memory_order_release);
    worker_ = std::thread([this, previous = std::move(worker_), settings = *settings, canvas, plan,
                           tracks, stopping]() mutable {
      if (previous.joinable()) previous.join();
      // OBS's process must outlive whatever the platform's libraries throw on this thread.
      try {
        {
          // The last run's sender is kept one run more: OBS ends its capture on a thread of its
          // own, so a late callback may still hold it.
          std::lock_guard lock(mu_);
          retired_ = std::move(sender_);
        }
        auto sender = ObsSender::start(settings, canvas, plan, tracks, stopping,
                                       [this, stopping](const Error& error) {
                                         // Every destination lost (no reconnect): OBS's output
                                         // stops, saying why. Not while OBS stops it: a stop
                                         // signalled then makes libobs reconnect (start again) an
                                         // output that is being released.
                                         set_error(error.message());
                                         if (!*stopping) signal_stop(OBS_OUTPUT_DISCONNECTED);
                                       });
        if (!sender) {
          set_error(sender.error().message());
          if (*stopping) return;  // given up for a stop: nothing to signal
          log().error("[obs] {}", sender.error().message());
          signal_stop(OBS_OUTPUT_CONNECT_FAILED);
          return;
        }
        log().info("[obs] sending {}", (*sender)->describe());
        {
          std::lock_guard lock(mu_);
          sender_ = std::move(*sender);
          published_.store(sender_.get(), std::memory_order_release);
        }
        bool capturing = false;
        {
          std::lock_guard lock(output_mu_);
          capturing = !*stopping && output_ && obs_output_begin_data_capture(output_, 0);
        }
        if (!capturing) end_stream();
      } catch (...) {
        const Error error = error_of(std::current_exception(), "start sending");
        set_error(error.message());
        log().error("[obs] {}", error.message());
        if (!*stopping) signal_stop(OBS_OUTPUT_ERROR);
      }
    });
    return true;
  }

  // OBS's UI thread: returns at once; the stream ends on a thread of its own, after the
  // connect in progress (if any) has given up.
  void stop() {
    stop_run();  // a connect in progress gives up at once
    obs_output_end_data_capture(output_);
    worker_ = std::thread([this, previous = std::move(worker_)]() mutable {
      if (previous.joinable()) previous.join();
      end_stream();
    });
  }

  // OBS's threads: the sender is set before capture begins and kept until the next start.
  void video(video_data* frame) {
    if (ObsSender* s = live()) s->video(*frame);
  }
  void audio(size_t mix, audio_data* data) {
    if (ObsSender* s = live()) s->audio(mix, *data);
  }

  uint64_t total_bytes() {
    std::lock_guard lock(mu_);
    return sender_ ? sender_->total_bytes() : 0;
  }
  int dropped_frames() {
    std::lock_guard lock(mu_);
    return sender_ ? static_cast<int>(sender_->dropped_frames()) : 0;
  }

  OutputStatus status() {
    OutputStatus st;
    st.active = obs_output_active(output_);
    std::lock_guard lock(mu_);
    if (sender_) {
      st.summary = sender_->describe();
      st.frames = sender_->frames();
      st.dropped = sender_->dropped_frames();
      st.bytes = sender_->total_bytes();
      st.destinations = sender_->destinations();
      st.callback_ns = sender_->video_callback_ns();
      st.callback_cpu_ns = sender_->video_callback_cpu_ns();
    }
    std::lock_guard error_lock(error_mu_);
    if (!last_error_.empty()) st.summary = last_error_;
    return st;
  }

 private:
  ObsSender* live() { return published_.load(std::memory_order_acquire); }
  // The run in progress gives up its connect, and its waits end.
  void stop_run() {
    std::lock_guard lock(run_mu_);
    *run_stop_ = true;
  }
  // The worker's: ends the stream without holding mu_, which the dialog's and
  // obs-websocket's stats take (a receiver that reads slowly can make the end take long).
  // sender_ is replaced only by the next start's worker, which joins this one first.
  void end_stream() {
    ObsSender* sender = nullptr;
    {
      std::lock_guard lock(mu_);
      sender = sender_.get();
    }
    if (!sender || sender->stopped()) return;  // OBS may stop an output twice (stop, then destroy)
    if (auto ok = sender->stop(); !ok) log().warn("[obs] {}", ok.error().message());
    log().info("[obs] stopped: {} frames, {} dropped, {} bytes", sender->frames(),
               sender->dropped_frames(), sender->total_bytes());
  }
  bool fail_now(const std::string& message) {
    set_error(message);
    log().error("[obs] {}", message);
    return false;
  }
  void set_error(const std::string& message) {
    {
      std::lock_guard lock(output_mu_);
      if (output_) obs_output_set_last_error(output_, message.c_str());
    }
    std::lock_guard lock(error_mu_);
    last_error_ = message;
  }
  // The worker's: OBS's output stops, unless libobs released it meanwhile.
  void signal_stop(int code) {
    std::lock_guard lock(output_mu_);
    if (output_) obs_output_signal_stop(output_, code);
  }
  void join() {
    if (worker_.joinable()) worker_.join();
  }

  // libobs' handle: OBS's threads (start, stop, callbacks) use it freely; the worker only
  // under output_mu_, and not once forget_output() made it null.
  std::mutex output_mu_;
  obs_output_t* output_;
  std::mutex mu_;  // sender_ against the UI thread's stats and the worker
  std::unique_ptr<ObsSender> sender_;
  std::unique_ptr<ObsSender> retired_;
  // What OBS's callbacks use, without a lock: set before obs_output_begin_data_capture.
  std::atomic<ObsSender*> published_{nullptr};
  std::mutex error_mu_;
  std::string last_error_;
  std::mutex run_mu_;  // run_stop_
  // The run in progress's stop flag: each start() makes one, each run's connect and session
  // keep their own.
  std::shared_ptr<std::atomic<bool>> run_stop_ = std::make_shared<std::atomic<bool>>(false);
  std::thread worker_;
};

Output* self(void* data) { return static_cast<Output*>(data); }

// An output released while its stream still ends is deleted on a thread of its own, so that
// obs_output_release() never waits on the network; the module's unload joins those threads.
struct Releasing {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};
std::mutex g_releasing_mu;
std::vector<Releasing> g_releasing;  // under g_releasing_mu

void release(Output* output) {
  output->forget_output();
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(g_releasing_mu);
  // Those that have finished are joined now, so the list does not grow with every release.
  std::erase_if(g_releasing, [](Releasing& r) {
    if (!*r.done) return false;
    r.thread.join();
    return true;
  });
  g_releasing.push_back({std::thread([output, done] {
                           delete output;
                           *done = true;
                         }),
                         done});
}

obs_properties_t* properties(void*) {
  obs_properties_t* props = obs_properties_create();
  obs_properties_add_text(props, "destinations", "Receivers (host:port, comma-separated)",
                          OBS_TEXT_DEFAULT);
  obs_property_t* transport = obs_properties_add_list(props, "transport", "Transport",
                                                      OBS_COMBO_TYPE_LIST, OBS_COMBO_FORMAT_STRING);
  obs_property_list_add_string(transport, "Automatic (RDMA where there is a route, else TCP)",
                               "auto");
  obs_property_list_add_string(transport, "TCP", "tcp");
  obs_property_list_add_string(transport, "RDMA (verbs)", "verbs");
  obs_properties_add_path(props, "key_file", "Shared key file", OBS_PATH_FILE, nullptr, nullptr);
  obs_properties_add_text(props, "name", "Stream name", OBS_TEXT_DEFAULT);
  obs_properties_add_int(props, "tracks",
                         "Audio tracks (bit mask: 1 track 1, 2 track 2, 3 both, ...)", 0, 63, 1);
  obs_properties_add_bool(props, "reconnect", "Reconnect a lost receiver");
  return props;
}

void defaults(obs_data_t* settings) {
  obs_data_set_default_string(settings, "destinations", "127.0.0.1:5000");
  obs_data_set_default_string(settings, "transport", "auto");
  obs_data_set_default_string(settings, "key_file", "");
  obs_data_set_default_string(settings, "name", "OBS");
  obs_data_set_default_int(settings, "tracks", 1);
  obs_data_set_default_bool(settings, "reconnect", false);
}

// obs-websocket's GetOutputStatus and the dialog read these through libobs.
void get_stats_proc(void* data, calldata_t* cd) {
  const OutputStatus st = self(data)->status();
  calldata_set_int(cd, "frames", static_cast<long long>(st.frames));
  calldata_set_int(cd, "dropped", static_cast<long long>(st.dropped));
  calldata_set_int(cd, "bytes", static_cast<long long>(st.bytes));
  calldata_set_int(cd, "callback_ns", static_cast<long long>(st.callback_ns));
  calldata_set_int(cd, "callback_cpu_ns", static_cast<long long>(st.callback_cpu_ns));
}

}  // namespace

void set_track_namer(std::function<std::string(size_t mix)> namer) {
  std::lock_guard lock(g_namer_mu);
  g_namer = std::move(namer);
}

OutputStatus status_of(obs_output_t* output) {
  if (!output || std::string_view(obs_output_get_id(output)) != kOutputId) return {};
  void* data = obs_obj_get_data(output);
  return data ? self(data)->status() : OutputStatus{};
}

void wait_for_released_outputs() {
  std::vector<Releasing> releasing;
  {
    std::lock_guard lock(g_releasing_mu);
    releasing.swap(g_releasing);
  }
  for (auto& r : releasing) r.thread.join();
}

// OBS's callbacks are C: what is thrown below one is logged, naming what failed, and the
// callback returns its failure value (the rule boundary.hpp keeps for GStreamer).
template <typename Body>
auto shielded(const char* what, Body&& body) noexcept -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    log().error("[obs] {}", error_of(std::current_exception(), what).message());
  }
  if constexpr (!std::is_void_v<decltype(body())>) return {};  // false, 0, NULL
}

void register_output() {
  obs_output_info info{};
  info.id = kOutputId;
  info.flags = OBS_OUTPUT_AV | OBS_OUTPUT_MULTI_TRACK;
  info.get_name = [](void*) -> const char* { return "rdmavideo (uncompressed over RDMA or TCP)"; };
  info.create = [](obs_data_t*, obs_output_t* output) -> void* {
    return shielded("create the output", [&]() -> void* {
      auto* out = new Output(output);
      proc_handler_add(
          obs_output_get_proc_handler(output),
          "void get_stats(out int frames, out int dropped, out int bytes, out int callback_ns, "
          "out int callback_cpu_ns)",
          get_stats_proc, out);
      return out;
    });
  };
  info.destroy = [](void* data) { shielded("release the output", [&] { release(self(data)); }); };
  info.start = [](void* data) { return shielded("start", [&] { return self(data)->start(); }); };
  info.stop = [](void* data, uint64_t) { shielded("stop", [&] { self(data)->stop(); }); };
  info.raw_video = [](void* data, video_data* frame) {
    shielded("send a frame", [&] { self(data)->video(frame); });
  };
  info.raw_audio2 = [](void* data, size_t mix, audio_data* frames) {
    shielded("send sound", [&] { self(data)->audio(mix, frames); });
  };
  info.get_defaults = defaults;
  info.get_properties = properties;
  info.get_total_bytes = [](void* data) {
    return shielded("count bytes", [&] { return self(data)->total_bytes(); });
  };
  info.get_dropped_frames = [](void* data) {
    return shielded("count dropped frames", [&] { return self(data)->dropped_frames(); });
  };
  obs_register_output(&info);
}

}  // namespace rdmavideo::obs
