// SPDX-License-Identifier: Apache-2.0
// GID table entries as the doctor prints and judges them: the colon hex form ibv_devinfo and
// show_gids print, the address a RoCE GID stands for, and whether an entry can carry
// rdma_cm traffic across routers. Pure functions over 16 bytes and sysfs text, so the tests
// can check them on a machine without an RDMA device.
//
// A RoCE v2 GID is the netdev's IP address (IPv4 as ::ffff:a.b.c.d), carried in UDP port
// 4791, so it is routable; a RoCE v1 (or IB) GID is only good inside one L2 segment or
// subnet. rdma_cm picks the RoCE v2 GID of the source address by default, and a link-local
// IPv6 GID cannot reach another subnet, hence "routable" = RoCE v2 and an IPv4-mapped or a
// non-link-local IPv6 address.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace rdmavideo::doctor {

using GidBytes = std::array<uint8_t, 16>;

enum class GidType {
  ib_roce_v1,  // sysfs "IB/RoCE v1"
  roce_v2,     // sysfs "RoCE v2"
  unknown,     // no gid_attrs/types entry (older kernels, iWARP) or text we do not know
};

/// From the text of /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>.
GidType parse_gid_type(std::string_view sysfs_text);
std::string_view to_string(GidType type);  // "RoCE v2", "IB/RoCE v1", "?"

bool is_zero(const GidBytes& gid);
/// "fe80:0000:0000:0000:5054:00ff:fe12:3456": eight groups of four hex digits.
std::string format_gid(const GidBytes& gid);

struct GidAddress {
  std::string text;         // "10.99.0.1", "2001:db8::1", "fe80::1"; empty for an IB GID
  bool ipv4 = false;        // IPv4-mapped (::ffff:a.b.c.d)
  bool link_local = false;  // fe80::/10
  bool routable = false;    // RoCE v2 and IPv4 or non-link-local IPv6
};
/// What the entry stands for. `ethernet`: the port's link layer is Ethernet (RoCE), where a
/// GID is an IP address; on InfiniBand a GID is a subnet prefix and a port GUID.
GidAddress describe_gid(const GidBytes& gid, GidType type, bool ethernet);

}  // namespace rdmavideo::doctor
