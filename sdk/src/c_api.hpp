// SPDX-License-Identifier: Apache-2.0
// What the C API's files share: turning the library's Errors (and any exception) into a
// status and this thread's last error, and reading a caller's struct of any struct_size.
#pragma once

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>

#include "rdmavideo/auth.hpp"
#include "rdmavideo/caught.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/protocol.hpp"
#include "rdmavideo/rdmavideo.h"
#include "rdmavideo/result.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::c_api {

/// Keeps `error` as this thread's last error and returns its status.
rdmavideo_status fail(const Error& error);
/// An invalid argument: `what` names it.
rdmavideo_status invalid(std::string_view what);
/// Forgets this thread's last error (each call that succeeds starts clean).
void clear_error();

/// Runs `body` (returning rdmavideo_status), turning an exception into an error naming `what`:
/// no exception leaves the library.
template <class Body>
rdmavideo_status guarded(std::string_view what, Body&& body) noexcept {
  try {
    clear_error();
    return body();
  } catch (...) {
    auto error = error_of(std::current_exception(), what);
    (void)fail(error);
    return error.code() == ErrorCode::resource ? RDMAVIDEO_ERROR_RESOURCE
                                               : RDMAVIDEO_ERROR_INTERNAL;
  }
}

/// The caller's struct as this library knows it: fields past its struct_size keep the
/// defaults `init` gives (a program built against an older header), and fields of a newer
/// header this library does not know are not read.
template <class T>
T read_struct(const T& given, void (*init)(T*)) {
  T value{};
  init(&value);
  const size_t n = std::min<size_t>(given.struct_size, sizeof(T));
  std::memcpy(static_cast<void*>(&value), &given, n);
  value.struct_size = sizeof(T);
  return value;
}

/// Writes `value` into the caller's struct, as far as its struct_size reaches.
template <class T>
void write_struct(const T& value, T* to) {
  const size_t n = std::min<size_t>(to->struct_size, sizeof(T));
  const uint32_t size = to->struct_size;
  std::memcpy(static_cast<void*>(to), &value, n);
  to->struct_size = size;
}

/// What a sender's and a receiver's configuration name alike: the transport ("auto", "tcp",
/// "verbs"; NULL or "": auto), where frames live ("host", "pinned", "cuda[:N]"; NULL or "":
/// host) and the shared key file (NULL or "": none).
struct Settings {
  TransportKind transport = TransportKind::automatic;
  memory::MemorySpec memory = memory::MemoryKind::host;
  std::shared_ptr<const auth::SharedKey> key;
};
Result<Settings> settings(const char* transport, const char* memory, const char* key_file);

/// `name` as the protocol carries it (at most proto::kNameBytes - 1 bytes), or an error naming
/// `what` it is ("name", "track name").
Result<std::string> checked_name(std::string_view name, std::string_view what);
/// The StreamStart for a caller's video format (its name: `default_name` where it gives none).
Result<proto::StreamStart> stream_start(const rdmavideo_video_format& format,
                                        std::string_view default_name);
/// The C layout of a StreamStart's frames.
rdmavideo_layout layout_of(const proto::StreamStart& format);
/// The AudioStart for a caller's audio format.
Result<proto::AudioStart> audio_start(const rdmavideo_audio_format& format);

}  // namespace rdmavideo::c_api
