// SPDX-License-Identifier: Apache-2.0
// The C API's version, statuses and per-thread last error.
#include <cstdlib>
#include <cstring>
#include <string>

#include "c_api.hpp"
#include "rdmavideo/log.hpp"

#ifndef RDMAVIDEO_VERSION
#error "RDMAVIDEO_VERSION is set by the build"
#endif

namespace rdmavideo::c_api {
namespace {

thread_local std::string last_error;

rdmavideo_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::protocol: return RDMAVIDEO_ERROR_PROTOCOL;
    case ErrorCode::peer_closed: return RDMAVIDEO_ERROR_PEER_CLOSED;
    case ErrorCode::timeout: return RDMAVIDEO_ERROR_TIMED_OUT;
    case ErrorCode::resource: return RDMAVIDEO_ERROR_RESOURCE;
    case ErrorCode::unsupported: return RDMAVIDEO_ERROR_UNSUPPORTED;
    case ErrorCode::invalid_argument: return RDMAVIDEO_ERROR_INVALID_ARGUMENT;
    case ErrorCode::system: return RDMAVIDEO_ERROR_SYSTEM;
    case ErrorCode::auth_failed: return RDMAVIDEO_ERROR_AUTH_FAILED;
  }
  return RDMAVIDEO_ERROR_INTERNAL;
}

// A library inside someone else's program says only what goes wrong, unless asked for more.
const bool kLogLevelSet = [] {
  const char* level = std::getenv("RDMAVIDEO_LOG_LEVEL");
  auto parsed = level ? spdlog::level::from_str(level) : spdlog::level::warn;
  // from_str() takes an unknown name for "off": only "off" itself means that.
  if (parsed == spdlog::level::off && std::string_view(level ? level : "") != "off") {
    parsed = spdlog::level::warn;
  }
  set_log_level(parsed);
  return true;
}();

}  // namespace

rdmavideo_status fail(const Error& error) {
  try {
    last_error = error.message();
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what kind
  }
  return status_of(error.code());
}

rdmavideo_status invalid(std::string_view what) {
  return fail(Error(ErrorCode::invalid_argument, std::string(what)));
}

void clear_error() { last_error.clear(); }

}  // namespace rdmavideo::c_api

using namespace rdmavideo;

extern "C" {

const char* rdmavideo_version(void) { return RDMAVIDEO_VERSION; }

rdmavideo_status rdmavideo_set_log_level(const char* level) {
  return c_api::guarded("rdmavideo_set_log_level", [&] {
    const std::string_view name = level ? level : "";
    const auto parsed = spdlog::level::from_str(std::string(name));
    if (parsed == spdlog::level::off && name != "off") {
      return c_api::invalid(
          fmt::format("log level \"{}\" unknown (trace, debug, info, warn, error or off)", name));
    }
    set_log_level(parsed);
    return RDMAVIDEO_OK;
  });
}

const char* rdmavideo_last_error(void) { return c_api::last_error.c_str(); }

const char* rdmavideo_status_name(rdmavideo_status status) {
  // In C an enum is an int, and a caller may pass any: read it as one. (In C++ a value beyond
  // the enumerators' range is undefined, and clang's UBSan says so at the load.)
  static_assert(sizeof(rdmavideo_status) == sizeof(int));
  int value = 0;
  std::memcpy(&value, &status, sizeof value);
  switch (value) {
    case RDMAVIDEO_OK: return "RDMAVIDEO_OK";
    case RDMAVIDEO_DROPPED: return "RDMAVIDEO_DROPPED";
    case RDMAVIDEO_TIMEOUT: return "RDMAVIDEO_TIMEOUT";
    case RDMAVIDEO_ENDED: return "RDMAVIDEO_ENDED";
    case RDMAVIDEO_ERROR_INVALID_ARGUMENT: return "RDMAVIDEO_ERROR_INVALID_ARGUMENT";
    case RDMAVIDEO_ERROR_PROTOCOL: return "RDMAVIDEO_ERROR_PROTOCOL";
    case RDMAVIDEO_ERROR_PEER_CLOSED: return "RDMAVIDEO_ERROR_PEER_CLOSED";
    case RDMAVIDEO_ERROR_TIMED_OUT: return "RDMAVIDEO_ERROR_TIMED_OUT";
    case RDMAVIDEO_ERROR_RESOURCE: return "RDMAVIDEO_ERROR_RESOURCE";
    case RDMAVIDEO_ERROR_UNSUPPORTED: return "RDMAVIDEO_ERROR_UNSUPPORTED";
    case RDMAVIDEO_ERROR_SYSTEM: return "RDMAVIDEO_ERROR_SYSTEM";
    case RDMAVIDEO_ERROR_AUTH_FAILED: return "RDMAVIDEO_ERROR_AUTH_FAILED";
    case RDMAVIDEO_ERROR_INTERNAL: return "RDMAVIDEO_ERROR_INTERNAL";
  }
  return "(not a status)";
}

}  // extern "C"
