// SPDX-License-Identifier: Apache-2.0
// What DNS-SD carries that is the project's own, on every platform: TXT records, a receiver's
// record, and finding a named destination at connect.
#include <fmt/format.h>

#ifdef _WIN32
// clang-format off
#include <winsock2.h>
#include <ws2tcpip.h>
// clang-format on
#else
#include <netdb.h>
#endif

#include <cctype>
#include <charconv>

#include "dnssd/names.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/text.hpp"

namespace rdmavideo::discovery {
namespace {

constexpr size_t kMaxTxtString = 255;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (auto item = text.substr(0, comma); !item.empty()) out.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

template <typename T>
Result<T> number(const Txt& txt, std::string_view key) {
  auto value = txt_value(txt, key);
  if (!value) return make_error(ErrorCode::protocol, "TXT has no \"{}\"", key);
  T out{};
  auto [ptr, ec] = std::from_chars(value->data(), value->data() + value->size(), out);
  if (value->empty() || ec != std::errc() || ptr != value->data() + value->size()) {
    return make_error(ErrorCode::protocol, "TXT \"{}={}\" is not a number", key, printable(*value));
  }
  return out;
}

}  // namespace

std::string instance_label(std::string_view full) {
  std::string out;
  for (size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '.') break;
    if (c != '\\' || i + 1 >= full.size()) {
      out += c;
      continue;
    }
    if (i + 3 < full.size() && std::isdigit(static_cast<unsigned char>(full[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(full[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(full[i + 3]))) {
      out += static_cast<char>((full[i + 1] - '0') * 100 + (full[i + 2] - '0') * 10 +
                               (full[i + 3] - '0'));
      i += 3;
    } else {
      out += full[++i];
    }
  }
  return out;
}

Error nobody_answered(std::string_view name, std::string_view type,
                      std::chrono::milliseconds wait) {
  return Error(
      ErrorCode::timeout,
      fmt::format("no {} called \"{}\" answered within {} ms (DNS-SD, {})",
                  type == kReceiverType ? "receiver" : "service", name, wait.count(), type));
}

std::optional<std::string> txt_value(const Txt& txt, std::string_view key) {
  for (const auto& [k, v] : txt) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Result<std::vector<std::string>> txt_strings(const Txt& txt) {
  std::vector<std::string> out;
  for (const auto& [key, value] : txt) {
    const bool printable_key = std::all_of(
        key.begin(), key.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != '='; });
    if (key.empty() || !printable_key) {
      return make_error(ErrorCode::invalid_argument,
                        "TXT key \"{}\" must be printable ASCII without '='", printable(key));
    }
    std::string item = key;
    if (!value.empty()) item.append("=").append(value);
    if (item.size() > kMaxTxtString) {
      return make_error(ErrorCode::invalid_argument, "TXT \"{}\" is {} bytes, more than {}", key,
                        item.size(), kMaxTxtString);
    }
    out.push_back(std::move(item));
  }
  return out;
}

Txt parse_txt(const std::vector<std::string>& strings) {
  Txt out;
  for (const auto& s : strings) {
    const auto eq = s.find('=');
    std::string key = s.substr(0, eq);
    if (key.empty() || txt_value(out, key)) continue;
    out.emplace_back(std::move(key), eq == std::string::npos ? std::string() : s.substr(eq + 1));
  }
  return out;
}

Txt receiver_txt(const ReceiverRecord& r) {
  Txt txt{{"txtvers", "1"},
          {"proto", std::to_string(r.protocol)},
          {"transports", join(r.transports)},
          {"key", r.key_required ? "required" : "none"}};
  if (r.key_required && !r.key_id.empty()) txt.emplace_back("key_id", r.key_id);
  txt.emplace_back("streams_free", std::to_string(r.streams_free));
  txt.emplace_back("max_streams", std::to_string(r.max_streams));
  if (!r.version.empty()) txt.emplace_back("version", r.version);
  return txt;
}

Result<ReceiverRecord> parse_receiver_txt(const Txt& txt) {
  ReceiverRecord r;
  auto proto = number<uint16_t>(txt, "proto");
  if (!proto) return Unexpected(proto.error());
  r.protocol = *proto;
  r.transports = split(txt_value(txt, "transports").value_or(""));
  const auto key = txt_value(txt, "key").value_or("none");
  if (key != "required" && key != "none") {
    return make_error(ErrorCode::protocol, "TXT \"key={}\" is neither required nor none",
                      printable(key));
  }
  r.key_required = key == "required";
  r.key_id = txt_value(txt, "key_id").value_or("");
  auto free = number<uint32_t>(txt, "streams_free");
  if (!free) return Unexpected(free.error());
  r.streams_free = *free;
  auto max = number<uint32_t>(txt, "max_streams");
  if (!max) return Unexpected(max.error());
  r.max_streams = *max;
  r.version = txt_value(txt, "version").value_or("");
  return r;
}

std::function<Result<Endpoint>(const Endpoint& named)> receiver_resolver(
    std::chrono::milliseconds wait) {
  return [wait](const Endpoint& named) -> Result<Endpoint> {
    auto found = find(named.host, kReceiverType, wait);
    if (!found) return Unexpected(found.error());
    return found->endpoint();
  };
}

Endpoint host_or_name(const std::string& host, uint16_t port) {
  if (!available()) return Endpoint{host, port};  // no names to find: as given
#ifdef _WIN32
  static const bool sockets = [] {  // Winsock, started (counted) for getaddrinfo
    WSADATA data{};
    return WSAStartup(MAKEWORD(2, 2), &data) == 0;
  }();
  if (!sockets) return Endpoint{host, port};
#endif
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) freeaddrinfo(found);
  if (rc == EAI_NONAME || rc == EAI_FAIL) return Endpoint{host, 0, true};
  return Endpoint{host, port};
}

}  // namespace rdmavideo::discovery
