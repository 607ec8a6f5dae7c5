// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace rdmavideo {

std::string_view to_string(TransportKind kind) {
  switch (kind) {
    case TransportKind::automatic: return "auto";
    case TransportKind::tcp: return "tcp";
    case TransportKind::verbs: return "verbs";
  }
  return "unknown";
}

std::optional<TransportKind> parse_transport(std::string_view text) {
  if (text == "auto") return TransportKind::automatic;
  if (text == "tcp") return TransportKind::tcp;
  if (text == "verbs") return TransportKind::verbs;
  return std::nullopt;
}

std::string Endpoint::to_string() const {
  if (named) return host;
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero) {
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return make_error(ErrorCode::invalid_argument, "\"{}\" is not [ADDRESS]:PORT", text);
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return make_error(ErrorCode::invalid_argument, "\"{}\" is not HOST:PORT", text);
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535 ||
      (value == 0 && !allow_port_zero)) {
    return make_error(ErrorCode::invalid_argument, "\"{}\": port \"{}\" out of range ({}..65535)",
                      text, port, allow_port_zero ? 0 : 1);
  }
  if (host.empty()) {
    return make_error(ErrorCode::invalid_argument, "\"{}\": host is empty", text);
  }
  return Endpoint{std::string(host), static_cast<uint16_t>(value)};
}

Result<Endpoint> parse_destination(std::string_view text) {
  // An address ends in ":PORT" (digits); anything else is a name.
  const auto colon = text.rfind(':');
  const bool has_port = colon != std::string_view::npos && colon + 1 < text.size() &&
                        text.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
  // An IPv4 address is an address, port or not (no receiver is called 10.0.0.2).
  const bool ipv4 = !text.empty() &&
                    text.find_first_not_of("0123456789.") == std::string_view::npos &&
                    std::count(text.begin(), text.end(), '.') == 3;
  if (has_port || ipv4 || (!text.empty() && text.front() == '[')) {
    return parse_endpoint(text, false);
  }
  if (text.empty()) return make_error(ErrorCode::invalid_argument, "a receiver's name is empty");
  if (text.size() > 63) {  // a DNS label, which an instance name is
    return make_error(ErrorCode::invalid_argument,
                      "\"{}\" is not HOST:PORT, and too long for a receiver's name ({} bytes, "
                      "at most 63)",
                      text, text.size());
  }
  return Endpoint{std::string(text), 0, true};
}

Result<std::vector<Endpoint>> parse_endpoints(std::string_view list) {
  std::vector<Endpoint> out;
  std::string_view rest = list;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      auto endpoint = parse_destination(item);
      if (!endpoint) {
        return Unexpected(endpoint.error().context(fmt::format("destinations \"{}\"", list)));
      }
      out.push_back(*endpoint);
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (out.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "destinations is empty: give host:port, or several comma-separated");
  }
  if (out.size() > kMaxDestinations) {
    return make_error(ErrorCode::invalid_argument, "destinations has {} receivers; at most {}",
                      out.size(), kMaxDestinations);
  }
  return out;
}

}  // namespace rdmavideo
