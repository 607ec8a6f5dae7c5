// SPDX-License-Identifier: Apache-2.0
// Shared plumbing of the command-line tools. Exit codes: 0 done, 1 failed at run time,
// 2 bad usage.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/memory.hpp"

namespace rdmavideo::auth {
class SharedKey;
}

namespace rdmavideo::cli {

inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

/// Parses; returns the exit code when the program should stop now (help shown, or a bad
/// flag reported on one line as "<program>: <what> (see --help)").
std::optional<int> parse(CLI::App& app, int argc, char** argv);

/// Prints "<program>: <message>" on one line and returns kExitUsage.
int usage_error(const CLI::App& app, const std::string& message);

/// The options both ends have, wired once: --key-file FILE (docs/security.md), --memory
/// host|cuda[:N] (where frames live on this end) and --gpu-path auto|dmabuf|peermem|staged
/// (how GPU memory meets the network). Made before parse() (the options it adds hold
/// references into it, so it stays where it is made); apply() after.
class EndOptions {
 public:
  /// Adds them to `app`; `frames` is what --memory places ("received frames").
  EndOptions(CLI::App& app, const std::string& frames);
  EndOptions(const EndOptions&) = delete;
  EndOptions& operator=(const EndOptions&) = delete;
  /// Loads the key, if one was named, and reads where frames live. A key file that cannot be
  /// used (missing, too short, readable by others) or a bad value is a usage error, printed
  /// on one line: the exit code.
  std::optional<int> apply(const CLI::App& app, std::shared_ptr<const auth::SharedKey>& key,
                           memory::MemorySpec& memory, gpu::PathChoice& gpu_path) const;

 private:
  std::string key_file_;
  std::string memory_ = "host";
  std::string gpu_path_ = "auto";
};

/// Set when the user asks the tool to stop: SIGINT or SIGTERM on Linux, Ctrl+C or a closed
/// console on Windows (rdmavideo/platform/process.hpp). A blocked call returns (EINTR) and
/// the tool finishes cleanly.
const std::atomic<bool>& stop_requested();
void install_stop_signals();

/// Raises the soft descriptor limit (RLIMIT_NOFILE) to the hard one, as a server that holds
/// a descriptor per connection does; returns the soft limit now in force.
uint64_t raise_descriptor_limit();

/// Runs `body`, turning an escaped exception into one error line and kExitFailed.
int run_main(std::string_view program, const std::function<int()>& body);

}  // namespace rdmavideo::cli
