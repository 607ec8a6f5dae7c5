// SPDX-License-Identifier: Apache-2.0
// Test support: run the real binaries as child processes, with stdin/stdout redirected to
// files or pipes and stderr captured to a file, and wait for them with a deadline.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.hpp"

extern char** environ;

namespace rdmavideo::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A temporary directory removed at the end of the test.
struct Redirect {
  std::string stdin_path;    ///< empty: /dev/null
  std::string stdout_path;   ///< empty: /dev/null (unless stdout_pipe)
  bool stdout_pipe = false;  ///< give the parent a pipe to read the child's stdout
  bool stdin_pipe = false;   ///< give the parent a pipe to write the child's stdin
};

class Process {
 public:
  Process(std::vector<std::string> argv, const std::filesystem::path& stderr_path,
          const Redirect& redirect = {})
      : stderr_path_(stderr_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int in_fds[2] = {-1, -1};
    if (redirect.stdin_pipe) {
      if (pipe2(in_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
      posix_spawn_file_actions_adddup2(&actions, in_fds[0], 0);
    } else {
      const std::string in = redirect.stdin_path.empty() ? "/dev/null" : redirect.stdin_path;
      posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
    }
    int pipe_fds[2] = {-1, -1};
    if (redirect.stdout_pipe) {
      if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
      posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    } else {
      const std::string out = redirect.stdout_path.empty() ? "/dev/null" : redirect.stdout_path;
      posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
    }
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (pipe_fds[1] >= 0) close(pipe_fds[1]);
    if (in_fds[0] >= 0) close(in_fds[0]);
    stdout_fd_ = pipe_fds[0];
    stdin_fd_ = in_fds[1];
    if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
  }
  ~Process() {
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
    close_stdin();
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  int stdout_fd() const { return stdout_fd_; }
  /// Writes all of `bytes` to the child's stdin pipe.
  bool write_stdin(const void* bytes, size_t size) {
    const char* p = static_cast<const char*>(bytes);
    while (size > 0) {
      const ssize_t n = ::write(stdin_fd_, p, size);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  void close_stdin() {
    if (stdin_fd_ >= 0) close(stdin_fd_);
    stdin_fd_ = -1;
  }
  void close_stdout() {
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
  }
  void signal(int sig) { kill(pid_, sig); }

  /// Exit code (128 + signal when killed); nullopt if still running at the deadline.
  std::optional<int> wait(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    if (exit_code_) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string stderr_text() const { return read_file(stderr_path_); }

  /// Waits until stderr matches `pattern`; returns the first capture group.
  std::optional<std::string> wait_for_stderr(
      const std::string& pattern, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const std::regex re(pattern);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = stderr_text();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stdin_fd_ = -1;
  std::filesystem::path stderr_path_;
  std::optional<int> exit_code_;
};

/// Starts rdmavideo-recv on `host` port 0 (127.0.0.1 unless given) and reads back the port.
class Receiver {
 public:
  Receiver(const TempDir& dir, std::vector<std::string> extra, const Redirect& redirect = {},
           const std::string& tag = "recv", const std::string& host = "127.0.0.1")
      : host_(host), process_(args(extra, host), dir / (tag + ".stderr"), redirect) {
    // A generous start-up limit: under the lab VM's software emulation on a busy machine,
    // loading the receiver's libraries alone can take several seconds.
    auto port = process_.wait_for_stderr(
        "listening on " + std::regex_replace(host, std::regex(R"(\.)"), R"(\.)") + R"(:(\d+))",
        std::chrono::seconds(30));
    if (!port)
      throw std::runtime_error("receiver did not report its port: " + process_.stderr_text());
    port_ = std::stoi(*port);
  }
  Process& process() { return process_; }
  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  static std::vector<std::string> args(std::vector<std::string> extra, const std::string& host) {
    std::vector<std::string> a{RDMAVIDEO_RECV_BIN, "--listen", host + ":0"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string host_;
  Process process_;
  int port_ = 0;
};

/// While it lives, programs started find the stand-in CUDA driver (tests/fakecuda) as they
/// would NVIDIA's libcuda.so.1: through the dynamic linker's path.
class WithFakeCuda {
 public:
  WithFakeCuda() {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    if (old) old_ = old;
    const std::string dir = std::filesystem::path(RDMAVIDEO_FAKE_CUDA).parent_path().string();
    setenv("LD_LIBRARY_PATH", (old_.empty() ? dir : dir + ":" + old_).c_str(), 1);
  }
  ~WithFakeCuda() {
    if (old_.empty()) {
      unsetenv("LD_LIBRARY_PATH");
    } else {
      setenv("LD_LIBRARY_PATH", old_.c_str(), 1);
    }
  }
  WithFakeCuda(const WithFakeCuda&) = delete;
  WithFakeCuda& operator=(const WithFakeCuda&) = delete;

 private:
  std::string old_;
};

/// An environment variable set while it lives (for the programs a test starts), then unset.
class WithEnv {
 public:
  WithEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~WithEnv() { unsetenv(name_); }
  WithEnv(const WithEnv&) = delete;
  WithEnv& operator=(const WithEnv&) = delete;

 private:
  const char* name_;
};

/// "key=value" lines (ffprobe's default writer without wrappers) as a map.
inline std::map<std::string, std::string> key_values(const std::string& text) {
  std::map<std::string, std::string> facts;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) facts[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return facts;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  return nlohmann::json::parse(read_file(path));
}

/// The stream named `name` in a receiver's --stats-json summary (a failure, and an empty
/// object, where there is none).
inline const nlohmann::json& stream_named(const nlohmann::json& summary, const std::string& name) {
  for (const auto& s : summary["streams"]) {
    if (s["name"] == name) return s;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no stream \"" << name << "\" in " << summary.dump(2);
  return none;
}

/// Polls `done` every few milliseconds until it holds (true) or `limit` passes (false).
inline bool wait_until(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

/// Runs a command line through /bin/sh; returns its exit code.
inline int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs a command line through /bin/sh and returns its stdout (stderr goes to the test's log).
inline std::string capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

/// An Xvfb server on a display number it picks itself (-displayfd), so tests can run side by
/// side; DISPLAY is set for the children the test starts. `options` go to Xvfb (e.g. "-wr"
/// for a white root window).
class VirtualScreen {
 public:
  explicit VirtualScreen(const TempDir& dir, const std::string& size = "1280x720",
                         std::vector<std::string> options = {})
      : server_(arguments(size, std::move(options)), dir / "xvfb.stderr",
                Redirect{"", "", true, false}) {
    std::string number;
    char c = 0;
    while (::read(server_.stdout_fd(), &c, 1) == 1 && c != '\n') number += c;
    if (number.empty()) throw std::runtime_error("Xvfb did not start: " + server_.stderr_text());
    name_ = ":" + number;
    setenv("DISPLAY", name_.c_str(), 1);
  }
  ~VirtualScreen() {
    server_.signal(SIGTERM);
    server_.wait(std::chrono::seconds(5));
  }
  const std::string& name() const { return name_; }

 private:
  static std::vector<std::string> arguments(const std::string& size,
                                            std::vector<std::string> options) {
    std::vector<std::string> argv{"Xvfb", "-displayfd", "1",         "-screen",
                                  "0",    size + "x24", "-nolisten", "tcp"};
    argv.insert(argv.end(), options.begin(), options.end());
    return argv;
  }

  Process server_;
  std::string name_;
};

}  // namespace rdmavideo::testing
