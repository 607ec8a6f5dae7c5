// SPDX-License-Identifier: Apache-2.0
// The C API's configuration: the defaults of both configuration structs, and the settings a
// sender and a receiver name the same way (transport, memory, key file).
#include <fmt/format.h>

#include "c_api.hpp"
#include "rdmavideo/auth.hpp"

namespace rdmavideo::c_api {

Result<Settings> settings(const char* transport, const char* memory, const char* key_file) {
  Settings s;
  if (transport && *transport) {
    const auto kind = parse_transport(transport);
    if (!kind) {
      return make_error(ErrorCode::invalid_argument,
                        "transport \"{}\" unknown (auto, tcp or verbs)", transport);
    }
    s.transport = *kind;
  }
  if (memory && *memory) {
    const auto spec = memory::parse_memory(memory);
    if (!spec) {
      return make_error(ErrorCode::invalid_argument,
                        "memory \"{}\" unknown (host, pinned, cuda or cuda:N)", memory);
    }
    s.memory = *spec;
  }
  if (key_file && *key_file) {
    auto key = auth::load_key(key_file);
    if (!key) return Unexpected(key.error().context("key_file"));
    s.key = std::move(*key);
  }
  return s;
}

}  // namespace rdmavideo::c_api

extern "C" {

void rdmavideo_sender_config_init(rdmavideo_sender_config* config) {
  if (!config) return;
  *config = rdmavideo_sender_config{};
  config->struct_size = sizeof(*config);
  config->pool_buffers = 4;
  config->connect_timeout_ms = 5000;
}

void rdmavideo_receiver_config_init(rdmavideo_receiver_config* config) {
  if (!config) return;
  *config = rdmavideo_receiver_config{};
  config->struct_size = sizeof(*config);
  config->max_streams = 1;
  config->ring_slots = 8;
}

}  // extern "C"
