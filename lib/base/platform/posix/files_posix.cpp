// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "platform/files_detail.hpp"
#include "rdmavideo/platform/files.hpp"
#include "rdmavideo/unique_handle.hpp"

namespace rdmavideo::platform {
namespace {

UniqueFd open_read(const std::string& name) {
  return UniqueFd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
}

}  // namespace

Result<uint64_t> check_private_file(const std::filesystem::path& path, std::string_view what) {
  const std::string name = path.string();
  UniqueFd fd = open_read(name);
  if (!fd) return Unexpected(system_error(std::string(what), errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    return Unexpected(system_error(fmt::format("{}: fstat", what), errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::invalid_argument, "{} is not a regular file", what);
  }
  if ((st.st_mode & 077) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "{} is accessible by group or others (mode {:04o}); the key must be "
                      "private: chmod 600 {}",
                      what, st.st_mode & 07777, name);
  }
  return static_cast<uint64_t>(st.st_size);
}

Result<size_t> read_file_into(const std::filesystem::path& path, std::span<std::byte> into,
                              std::string_view what) {
  UniqueFd fd = open_read(path.string());
  if (!fd) return Unexpected(system_error(std::string(what), errno));
  size_t got = 0;
  while (got < into.size()) {
    const ssize_t n = ::read(fd.get(), into.data() + got, into.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unexpected(system_error(fmt::format("{}: read", what), errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

Result<void> write_private_file(const std::filesystem::path& path, std::span<const std::byte> bytes,
                                std::string_view what) {
  const std::string name = path.string();
  UniqueFd fd(::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Unexpected(system_error(std::string(what), errno));
  // The mode given to open() passes through the umask, which may only take bits away.
  const bool ok =
      ::fchmod(fd.get(), 0600) == 0 &&
      ::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
      ::fsync(fd.get()) == 0;
  const int err = errno;
  if (!ok) {
    ::unlink(name.c_str());
    return Unexpected(system_error(fmt::format("{}: write", what), err));
  }
  return {};
}

}  // namespace rdmavideo::platform
