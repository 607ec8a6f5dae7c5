// SPDX-License-Identifier: Apache-2.0
// A fresh folder under the system's temporary folder, removed with everything in it when the
// TempDir goes. Portable: the Windows build's tests use it too.
#pragma once

#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace rdmavideo::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device random;
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto candidate =
          std::filesystem::temp_directory_path() /
          ("rdmavideo-test-" + std::to_string(random()) + std::to_string(random()));
      std::error_code ec;
      if (std::filesystem::create_directory(candidate, ec)) {  // false where it already was
        path_ = candidate;
        return;
      }
    }
    throw std::runtime_error("TempDir: no fresh folder under the temporary folder");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rdmavideo::testing
