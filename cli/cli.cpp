// SPDX-License-Identifier: Apache-2.0
#include "cli.hpp"

#include <cstdio>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/process.hpp"

namespace rdmavideo::cli {
namespace {

std::atomic<bool> g_stop{false};

}  // namespace

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  // --version: "rdmavideo-recv 0.5.0", as every program says it.
  app.set_version_flag("--version", app.get_name() + " " + RDMAVIDEO_VERSION,
                       "Print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), e.what());
    return kExitUsage;
  }
  return std::nullopt;
}

int usage_error(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), message.c_str());
  return kExitUsage;
}

EndOptions::EndOptions(CLI::App& app, const std::string& frames) {
  app.add_option("--key-file", key_file_,
                 "Shared key: the peer must prove it, and this end proves it back (a file of "
                 "at least 32 bytes, mode 0600; make one with rdmavideo-doctor --new-key FILE)");
  app.add_option("--memory", memory_,
                 fmt::format("Where {} live: host, or cuda[:N] for GPU N's memory", frames))
      ->capture_default_str();
  app.add_option(
         "--gpu-path", gpu_path_,
         "With --memory cuda, how GPU memory meets the network: auto (dma-buf, then "
         "nvidia-peermem, then staged through pinned host memory), dmabuf, peermem or staged")
      ->capture_default_str();
}

std::optional<int> EndOptions::apply(const CLI::App& app,
                                     std::shared_ptr<const auth::SharedKey>& key,
                                     memory::MemorySpec& memory, gpu::PathChoice& gpu_path) const {
  if (!key_file_.empty()) {
    auto loaded = auth::load_key(key_file_);
    if (!loaded) return usage_error(app, "--key-file: " + loaded.error().message());
    key = std::move(*loaded);
  }
  auto spec = memory::parse_memory(memory_);
  if (!spec || spec->kind == memory::MemoryKind::pinned) {
    return usage_error(app, "--memory \"" + memory_ + "\" unknown (host, or cuda[:N] for GPU N)");
  }
  auto path = gpu::parse_path_choice(gpu_path_);
  if (!path) {
    return usage_error(
        app, "--gpu-path \"" + gpu_path_ + "\" unknown (auto, dmabuf, peermem or staged)");
  }
  if (*path != gpu::PathChoice::automatic && spec->kind != memory::MemoryKind::cuda) {
    return usage_error(app, "--gpu-path applies to GPU memory: give --memory cuda too");
  }
  memory = *spec;
  gpu_path = *path;
  return std::nullopt;
}

const std::atomic<bool>& stop_requested() { return g_stop; }

void install_stop_signals() { platform::on_stop_request(&g_stop); }

uint64_t raise_descriptor_limit() { return platform::raise_descriptor_limit(); }

int run_main(std::string_view program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    log().error("{}: {}", program, e.what());
    return kExitFailed;
  }
}

}  // namespace rdmavideo::cli
