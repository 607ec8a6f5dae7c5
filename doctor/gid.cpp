// SPDX-License-Identifier: Apache-2.0
#include "gid.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>

namespace rdmavideo::doctor {

GidType parse_gid_type(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text == "RoCE v2") return GidType::roce_v2;
  if (text == "IB/RoCE v1") return GidType::ib_roce_v1;
  return GidType::unknown;
}

std::string_view to_string(GidType type) {
  switch (type) {
    case GidType::ib_roce_v1: return "IB/RoCE v1";
    case GidType::roce_v2: return "RoCE v2";
    case GidType::unknown: return "?";
  }
  return "?";
}

bool is_zero(const GidBytes& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

std::string format_gid(const GidBytes& gid) {
  std::string out;
  out.reserve(39);
  for (size_t i = 0; i < gid.size(); i += 2) {
    if (i > 0) out += ':';
    out += fmt::format("{:02x}{:02x}", gid[i], gid[i + 1]);
  }
  return out;
}

GidAddress describe_gid(const GidBytes& gid, GidType type, bool ethernet) {
  GidAddress out;
  if (!ethernet) return out;
  static constexpr std::array<uint8_t, 12> kMappedPrefix = {0, 0, 0, 0, 0,    0,
                                                            0, 0, 0, 0, 0xff, 0xff};
  char text[INET6_ADDRSTRLEN] = {};
  if (std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), gid.begin())) {
    out.ipv4 = true;
    inet_ntop(AF_INET, gid.data() + 12, text, sizeof text);
  } else {
    out.link_local = gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
    inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  }
  out.text = text;
  out.routable = type == GidType::roce_v2 && (out.ipv4 || !out.link_local);
  return out;
}

}  // namespace rdmavideo::doctor
