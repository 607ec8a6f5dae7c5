// SPDX-License-Identifier: Apache-2.0
// What the tests read of the programs' results: the error lines a program printed, a
// recording's streams (ffprobe), and its sync as heard (tests/support/av_sync.py; the test
// defines RDMAVIDEO_SOURCE_DIR).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"

namespace rdmavideo::testing {

/// The lines of `text` that say "error" (a program's log lines at error level).
inline std::vector<std::string> error_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") != std::string::npos) out.push_back(line);
  }
  return out;
}

/// "codec,type" of each stream of `file`, one a line, as ffprobe says them.
inline std::string stream_codecs(const std::filesystem::path& file) {
  return capture("ffprobe -v error -show_entries stream=codec_name,codec_type -of csv=p=0 '" +
                 file.string() + "'");
}

#ifdef RDMAVIDEO_SOURCE_DIR
/// av_sync.py's measure of `file`'s audio track `track` against its picture's flashes (within
/// `crop`, W:H:X:Y, where given); an empty object, and a failure, where it measured nothing.
inline nlohmann::json av_sync(const std::filesystem::path& file, int track = 0,
                              const std::string& crop = "") {
  const std::string text =
      capture("python3 '" RDMAVIDEO_SOURCE_DIR "/tests/support/av_sync.py' '" + file.string() +
              "' --audio " + std::to_string(track) + (crop.empty() ? "" : " --crop " + crop));
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    ADD_FAILURE() << "av_sync.py gave no result for " << file << ": " << text;
    return nlohmann::json::object();
  }
}
#endif

}  // namespace rdmavideo::testing
