// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/output_template.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <ctime>
#include <filesystem>

#include "rdmavideo/log.hpp"

namespace rdmavideo::media {
namespace {

constexpr std::array<std::string_view, 5> kPlaceholders = {"{name}", "{n}", "{peer}", "{date}",
                                                           "{time}"};
constexpr size_t kMaxNameBytes = 64;
constexpr int kMaxSuffix = 9999;

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

std::string local_time(uint64_t ns, const char* format) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000u);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char text[32];
  const size_t n = std::strftime(text, sizeof text, format, &tm);
  return std::string(text, n);
}

}  // namespace

bool OutputTemplate::is_template(std::string_view output) {
  for (auto placeholder : kPlaceholders) {
    if (contains(output, placeholder)) return true;
  }
  return false;
}

Result<void> OutputTemplate::check(const std::string& output, uint32_t max_streams, bool serve,
                                   std::string_view setting) {
  // Any {word} must be one we know.
  for (size_t open = output.find('{'); open != std::string::npos;
       open = output.find('{', open + 1)) {
    const size_t close = output.find('}', open);
    const std::string_view word = close == std::string::npos
                                      ? std::string_view(output).substr(open)
                                      : std::string_view(output).substr(open, close - open + 1);
    if (std::find(kPlaceholders.begin(), kPlaceholders.end(), word) == kPlaceholders.end()) {
      return make_error(ErrorCode::invalid_argument,
                        "{} {}: unknown placeholder {} (known: {{name}} {{n}} {{peer}} "
                        "{{date}} {{time}})",
                        setting, output, word);
    }
  }
  if (output.empty()) return {};
  if (max_streams > 1) {
    if (output == "-") {
      return make_error(ErrorCode::invalid_argument,
                        "{} -: stdout carries one stream, and {} streams are taken at once",
                        setting, max_streams);
    }
    if (!contains(output, "{name}") && !contains(output, "{n}")) {
      return make_error(ErrorCode::invalid_argument,
                        "{} {}: with {} streams at once the file name needs {{name}} or {{n}}, "
                        "e.g. 'rec/{{name}}.mov'",
                        setting, output, max_streams);
    }
  }
  // A plain path's folder must be there now, not found missing at the first frame (a
  // template makes the folders it names).
  if (output != "-" && !is_template(output)) {
    const auto folder = std::filesystem::path(output).parent_path();
    if (std::error_code ec; !folder.empty() && !std::filesystem::is_directory(folder, ec)) {
      return make_error(ErrorCode::invalid_argument, "{} {}: the folder {} does not exist", setting,
                        output, folder.string());
    }
  }
  if (serve && output != "-" && !is_template(output)) {
    std::error_code ec;
    if (!std::filesystem::is_character_file(output, ec)) {
      return make_error(ErrorCode::invalid_argument,
                        "{} {}: serving one stream after another, every stream would replace the "
                        "file; use a template such as '{{name}}-{{date}}-{{time}}{}'",
                        setting, output, std::filesystem::path(output).extension().string());
    }
  }
  return {};
}

std::string OutputTemplate::safe_name(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    out += safe ? c : '_';
  }
  // No leading dot (hidden files, "."/".."), no ".." anywhere, no leading '-' (a file name a
  // command would take for an option: "rm {name}.mov").
  for (size_t at; (at = out.find("..")) != std::string::npos;) out.replace(at, 2, "_.");
  if (!out.empty() && (out.front() == '.' || out.front() == '-')) out.front() = '_';
  if (out.size() > kMaxNameBytes) out.resize(kMaxNameBytes);
  if (out.empty()) out = "stream";
  return out;
}

std::string OutputTemplate::expand(std::string_view output, const TemplateFields& fields) {
  std::string out;
  for (size_t i = 0; i < output.size();) {
    auto take = [&](std::string_view placeholder, const std::string& value) {
      if (output.substr(i, placeholder.size()) != placeholder) return false;
      out += value;
      i += placeholder.size();
      return true;
    };
    if (take("{name}", safe_name(fields.name)) || take("{n}", std::to_string(fields.number)) ||
        take("{peer}", safe_name(fields.peer)) ||
        take("{date}", local_time(fields.first_frame_ns, "%Y-%m-%d")) ||
        take("{time}", local_time(fields.first_frame_ns, "%H-%M-%S"))) {
      continue;
    }
    out += output[i++];
  }
  return out;
}

Result<std::string> OutputTemplate::reserve(const std::string& path, std::string_view setting) {
  const std::filesystem::path p(path);
  // A template may name a folder per day or per sender: make it.
  if (std::error_code ec; !p.parent_path().empty() && !std::filesystem::exists(p.parent_path())) {
    if (!std::filesystem::create_directories(p.parent_path(), ec)) {
      return make_error(ErrorCode::system, "{} {}: cannot create {}: {}", setting, path,
                        p.parent_path().string(), ec.message());
    }
    log().info("[recv] created {} for {}", p.parent_path().string(), setting);
  }
  const std::string stem = (p.parent_path() / p.stem()).string();
  const std::string ext = p.extension().string();
  for (int suffix = 0; suffix <= kMaxSuffix; ++suffix) {
    const std::string candidate = suffix == 0 ? path : fmt::format("{}-{}{}", stem, suffix, ext);
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      if (suffix > 0) {
        log().info("[recv] {} {} exists: writing {} instead", setting, path, candidate);
      }
      return candidate;
    }
    if (errno != EEXIST) {
      return Unexpected(system_error(fmt::format("{} {}: create", setting, candidate), errno));
    }
  }
  return make_error(ErrorCode::resource, "{} {}: it and {} numbered files beside it exist", setting,
                    path, kMaxSuffix);
}

}  // namespace rdmavideo::media
