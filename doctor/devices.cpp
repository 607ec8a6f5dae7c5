// SPDX-License-Identifier: Apache-2.0
// check_devices: what libibverbs and sysfs say about each RDMA device, port and GID. All
// facts are gathered first, then judged, because whether a bad port fails the run depends
// on whether any other port can carry video.
#include <endian.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks.hpp"
#include "gid.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::doctor {
namespace {

namespace fs = std::filesystem;

const fs::path kSysfsDevices = "/sys/class/infiniband";

// The one verbs handle the transport never opens itself (rdma_cm opens contexts for it).
struct ContextDeleter {
  void operator()(ibv_context* context) const noexcept {
    const char* name = ibv_get_device_name(context->device);
    if (ibv_close_device(context) != 0) {  // returns -1 and sets errno
      const int err = errno;
      try {
        log().warn("verbs {}: ibv_close_device failed: {}", name, std::strerror(err));
      } catch (...) {
      }
    }
  }
};
using UniqueContext = std::unique_ptr<ibv_context, ContextDeleter>;
struct DeviceListDeleter {
  void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};
using UniqueDeviceList = std::unique_ptr<ibv_device*, DeviceListDeleter>;

std::optional<std::string> read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;  // unpopulated gid_attrs: EINVAL
  return line;
}

std::vector<std::string> sysfs_device_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kSysfsDevices, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The interface of the default route, to name in the rdma_rxe example; eth0 when none.
std::string default_route_netdev() {
  std::ifstream in("/proc/net/route");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    char iface[64] = {};
    char destination[16] = {};
    if (std::sscanf(line.c_str(), "%63s %15s", iface, destination) == 2 &&
        std::string_view(destination) == "00000000") {
      return iface;
    }
  }
  return "eth0";
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string entries(size_t count) {
  return fmt::format("{} entr{}", count, count == 1 ? "y" : "ies");
}

uint32_t mtu_bytes(ibv_mtu mtu) {
  return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? 128u << mtu : 0u;
}

int width_lanes(uint8_t width) {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
  }
  return 0;
}

struct Speed {
  const char* name;
  double lane_gbps;
};
Speed lane_speed(uint8_t speed) {
  switch (speed) {
    case 1: return {"SDR", 2.5};
    case 2: return {"DDR", 5.0};
    case 4: return {"QDR", 10.0};
    case 8: return {"FDR10", 10.3125};
    case 16: return {"FDR", 14.0625};
    case 32: return {"EDR", 25.78125};
    case 64: return {"HDR", 50.0};
    case 128: return {"NDR", 100.0};
  }
  return {"?", 0.0};
}

// ibv_devinfo's names (ibv_port_state_str says "active"), as users search for them.
const char* port_state_str(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP: return "PORT_NOP";
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
  }
  return "PORT_?";
}

const char* phys_state_str(uint8_t phys_state) {
  switch (phys_state) {
    case 1: return "Sleep";
    case 2: return "Polling";
    case 3: return "Disabled";
    case 4: return "PortConfigurationTraining";
    case 5: return "LinkUp";
    case 6: return "LinkErrorRecovery";
    case 7: return "PhyTest";
  }
  return "?";
}

const char* transport_str(ibv_transport_type type) {
  switch (type) {
    case IBV_TRANSPORT_IB: return "InfiniBand";
    case IBV_TRANSPORT_IWARP: return "iWARP";
    case IBV_TRANSPORT_USNIC: return "usNIC";
    case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
    case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
    default: return "unknown";
  }
}

std::string format_guid(__be64 guid_be) {
  const uint64_t guid = be64toh(guid_be);
  return fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", (guid >> 48) & 0xffff, (guid >> 32) & 0xffff,
                     (guid >> 16) & 0xffff, guid & 0xffff);
}

struct GidEntry {
  int index = 0;
  GidBytes gid{};
  GidType type = GidType::unknown;
  std::string netdev;  // gid_attrs/ndevs/<index>; empty on InfiniBand
  GidAddress address;
};

struct PortFacts {
  uint8_t number = 0;
  ibv_port_attr attr{};
  std::string error;  // ibv_query_port failed: the message
  bool ethernet = false;
  bool iwarp = false;
  std::string netdev;  // first GID's netdev, else the device's "parent" (rxe)
  std::vector<GidEntry> gids;

  bool active() const { return error.empty() && attr.state == IBV_PORT_ACTIVE; }
  bool has_routable_gid() const {
    return std::any_of(gids.begin(), gids.end(),
                       [](const GidEntry& g) { return g.address.routable; });
  }
  // rdma_cm can address the port: IB and iWARP always (by IPoIB or the netdev's IP), RoCE
  // only through a RoCE v2 GID that carries an IP address.
  bool addressable() const { return error.empty() && (iwarp || !ethernet || has_routable_gid()); }
  bool usable() const { return active() && addressable(); }
};

struct DeviceFacts {
  std::string name;
  std::string uverbs;  // "uverbs0": /dev/infiniband/<this>
  ibv_transport_type transport = IBV_TRANSPORT_UNKNOWN;
  std::string node_guid;
  std::string error;  // open or query failed: the message
  std::string fix;    // and what to do about it
  ibv_device_attr attr{};
  std::vector<PortFacts> ports;
};

std::vector<GidEntry> read_gids(ibv_context* context, const std::string& device, uint8_t port,
                                const ibv_port_attr& attr, bool ethernet) {
  std::vector<GidEntry> gids;
  const fs::path attrs = kSysfsDevices / device / "ports" / std::to_string(port) / "gid_attrs";
  for (int index = 0; index < attr.gid_tbl_len; ++index) {
    ibv_gid gid{};
    if (ibv_query_gid(context, port, index, &gid) != 0) continue;
    GidEntry entry;
    entry.index = index;
    std::memcpy(entry.gid.data(), gid.raw, entry.gid.size());
    if (is_zero(entry.gid)) continue;
    const std::string i = std::to_string(index);
    entry.type = parse_gid_type(read_line(attrs / "types" / i).value_or(""));
    entry.netdev = read_line(attrs / "ndevs" / i).value_or("");
    entry.address = describe_gid(entry.gid, entry.type, ethernet);
    gids.push_back(std::move(entry));
  }
  return gids;
}

DeviceFacts gather_device(ibv_device* device) {
  DeviceFacts d;
  d.name = ibv_get_device_name(device);
  d.uverbs = device->dev_name;
  d.transport = device->transport_type;
  d.node_guid = format_guid(ibv_get_device_guid(device));
  UniqueContext context(ibv_open_device(device));
  if (!context) {
    const int err = errno;
    d.error =
        system_error(fmt::format("ibv_open_device (/dev/infiniband/{})", d.uverbs), err).message();
    if (err == EACCES || err == EPERM) {
      d.fix = fmt::format(
          "give this user access to /dev/infiniband/{}: run as root, or add the "
          "user to the group owning it (rdma-core's udev rules use \"rdma\")",
          d.uverbs);
    } else if (err == ENOENT || err == ENODEV || err == ENXIO) {
      d.fix = fmt::format("/dev/infiniband/{} is missing: modprobe ib_uverbs", d.uverbs);
    } else {
      d.fix =
          "see the driver's messages in dmesg; reload the driver (e.g. modprobe -r mlx5_ib; "
          "modprobe mlx5_ib)";
    }
    return d;
  }
  if (int rc = ibv_query_device(context.get(), &d.attr); rc != 0) {  // returns the errno value
    d.error = system_error("ibv_query_device", rc).message();
    d.fix = "see the driver's messages in dmesg";
    return d;
  }
  const std::string parent = read_line(kSysfsDevices / d.name / "parent").value_or("");
  for (uint8_t port = 1; port <= d.attr.phys_port_cnt; ++port) {
    PortFacts p;
    p.number = port;
    p.iwarp = d.transport == IBV_TRANSPORT_IWARP;
    if (int rc = ibv_query_port(context.get(), port, &p.attr); rc != 0) {
      p.error = system_error("ibv_query_port", rc).message();
      d.ports.push_back(std::move(p));
      continue;
    }
    p.ethernet = p.attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    p.gids = read_gids(context.get(), d.name, port, p.attr, p.ethernet);
    for (const auto& g : p.gids) {
      if (!g.netdev.empty()) {
        p.netdev = g.netdev;
        break;
      }
    }
    if (p.netdev.empty()) p.netdev = parent;
    d.ports.push_back(std::move(p));
  }
  return d;
}

std::string speed_text(const ibv_port_attr& attr) {
  const int lanes = width_lanes(attr.active_width);
  const Speed speed = lane_speed(attr.active_speed);
  if (lanes == 0 || speed.lane_gbps == 0) {
    return fmt::format("speed ? (width code {}, speed code {})", attr.active_width,
                       attr.active_speed);
  }
  return fmt::format("{}X {} ({:g} Gb/s)", lanes, speed.name, lanes * speed.lane_gbps);
}

std::string netdev_or(const PortFacts& p, std::string_view fallback) {
  return p.netdev.empty() ? std::string(fallback) : p.netdev;
}

// --- judging ------------------------------------------------------------------------------

Check port_check(const DeviceFacts& d, const PortFacts& p, Status problem) {
  Check c;
  c.name = fmt::format("port:{}/{}", d.name, p.number);
  c.label = fmt::format("{} port {}", d.name, p.number);
  if (!p.error.empty()) {
    c.status = problem;
    c.detail = p.error;
    c.fix = "see the driver's messages in dmesg";
    return c;
  }
  const ibv_port_attr& a = p.attr;
  const char* layer = p.iwarp ? "Ethernet (iWARP)" : p.ethernet ? "Ethernet (RoCE)" : "InfiniBand";
  c.detail =
      fmt::format("{} (physical {}), link layer {}{}, active MTU {} (max {}), {}, max_msg_sz {}",
                  port_state_str(a.state), phys_state_str(a.phys_state), layer,
                  p.netdev.empty() ? "" : " on " + p.netdev, mtu_bytes(a.active_mtu),
                  mtu_bytes(a.max_mtu), speed_text(a), format_bytes(a.max_msg_sz));
  if (!p.ethernet && !p.iwarp) c.detail += fmt::format(", LID {}", a.lid);
  if (p.active()) return c;
  c.status = problem;
  if (p.ethernet || p.iwarp) {
    const std::string dev = netdev_or(p, "<netdev>");
    c.fix = fmt::format(
        "bring the link up: check the cable and `ip link show {0}` (it needs UP and "
        "LOWER_UP; `ip link set {0} up`)",
        dev);
  } else if (a.state == IBV_PORT_INIT || a.state == IBV_PORT_ARMED) {
    c.fix =
        "no subnet manager has activated the port: run opensm on a node of the fabric (or "
        "enable the switch's subnet manager)";
  } else {
    c.fix = "check the cable and the switch port (`ibstat` shows the physical state)";
  }
  return c;
}

std::optional<Check> mtu_check(const DeviceFacts& d, const PortFacts& p) {
  if (!p.ethernet || !p.active() || mtu_bytes(p.attr.active_mtu) >= 4096) return std::nullopt;
  Check c;
  c.name = fmt::format("mtu:{}/{}", d.name, p.number);
  c.label = fmt::format("{} port {} MTU", d.name, p.number);
  c.status = Status::warn;
  c.detail = fmt::format("active MTU {} bytes: frames move in more, smaller packets than with 4096",
                         mtu_bytes(p.attr.active_mtu));
  const std::string dev = netdev_or(p, "<netdev>");
  c.fix = fmt::format(
      "raise the MTU of {0} (and of the peer and switches): ip link set dev {0} mtu "
      "9000; RoCE uses the largest of 1024/2048/4096 that fits the netdev MTU",
      dev);
  return c;
}

std::string gid_row(const GidEntry& g) {
  return fmt::format("{:<5} {:<39}  {:<10}  {:<8}  {}{}", g.index, format_gid(g.gid),
                     to_string(g.type), g.netdev.empty() ? "-" : g.netdev,
                     g.address.text.empty() ? "-" : g.address.text,
                     g.address.routable ? "  routable" : "");
}

Check gid_check(const DeviceFacts& d, const PortFacts& p, Status problem) {
  Check c;
  c.name = fmt::format("gids:{}/{}", d.name, p.number);
  c.label = fmt::format("{} port {} GIDs", d.name, p.number);
  if (!p.error.empty()) {
    c.status = Status::skip;
    c.detail = "port could not be queried";
    return c;
  }
  if (!p.gids.empty()) {
    c.info.push_back(fmt::format("{:<5} {:<39}  {:<10}  {:<8}  {}", "index", "GID", "type",
                                 "netdev", "address"));
    for (const auto& g : p.gids) c.info.push_back(gid_row(g));
  }
  if (p.iwarp) {
    c.status = Status::skip;
    c.detail = fmt::format("{}; iWARP: rdma_cm uses the netdev's IP addresses, not GIDs",
                           entries(p.gids.size()));
    return c;
  }
  if (!p.ethernet) {
    c.detail = fmt::format(
        "{} (InfiniBand: rdma_cm needs an IP address on the IPoIB netdev, e.g. "
        "ib0)",
        entries(p.gids.size()));
    return c;
  }
  std::vector<std::string> routable;
  bool ipv4_v1_only = false;
  for (const auto& g : p.gids) {
    if (g.address.routable) {
      routable.push_back(fmt::format("index {} ({}{})", g.index, g.address.text,
                                     g.netdev.empty() ? "" : " on " + g.netdev));
    }
    if (g.address.ipv4 && g.type == GidType::ib_roce_v1) ipv4_v1_only = true;
  }
  if (!routable.empty()) {
    c.detail =
        fmt::format("{} routable RoCE v2 GID{}: {} ({} in all)", routable.size(),
                    routable.size() == 1 ? "" : "s", join(routable, ", "), entries(p.gids.size()));
    return c;
  }
  if (ipv4_v1_only)
    ipv4_v1_only = !std::any_of(p.gids.begin(), p.gids.end(),
                                [](const GidEntry& g) { return g.type == GidType::roce_v2; });
  c.status = problem;
  c.detail = fmt::format(
      "no routable RoCE v2 GID ({}, none RoCE v2 with an IPv4 or global IPv6 "
      "address)",
      entries(p.gids.size()));
  const std::string dev = netdev_or(p, "<netdev>");
  if (ipv4_v1_only) {
    c.fix = fmt::format(
        "the port has RoCE v1 GIDs only: enable RoCE v2 in the NIC's RoCE mode "
        "(for mlx5: the device's roce mode / cma_roce_mode), then check again");
  } else {
    c.fix = fmt::format(
        "assign an IPv4 or IPv6 address to {0} on the network the peer is on: "
        "ip addr add ADDRESS/PREFIX dev {0} (RoCE v2 GIDs follow the netdev's "
        "addresses)",
        dev);
  }
  return c;
}

nlohmann::json device_json(const DeviceFacts& d) {
  nlohmann::json j{{"name", d.name},
                   {"uverbs", d.uverbs},
                   {"transport", transport_str(d.transport)},
                   {"node_guid", d.node_guid}};
  if (!d.error.empty()) {
    j["error"] = d.error;
    return j;
  }
  j["fw_ver"] = d.attr.fw_ver;
  j["max_mr_size"] = d.attr.max_mr_size;
  j["max_qp_wr"] = d.attr.max_qp_wr;
  j["phys_port_cnt"] = d.attr.phys_port_cnt;
  auto& ports = j["ports"] = nlohmann::json::array();
  for (const auto& p : d.ports) {
    nlohmann::json pj{{"port", p.number}};
    if (!p.error.empty()) {
      pj["error"] = p.error;
      ports.push_back(std::move(pj));
      continue;
    }
    const ibv_port_attr& a = p.attr;
    pj["state"] = port_state_str(a.state);
    pj["phys_state"] = phys_state_str(a.phys_state);
    pj["link_layer"] = p.ethernet ? "Ethernet" : "InfiniBand";
    pj["netdev"] = p.netdev;
    pj["active_mtu"] = mtu_bytes(a.active_mtu);
    pj["max_mtu"] = mtu_bytes(a.max_mtu);
    pj["active_width"] = width_lanes(a.active_width);
    pj["active_speed"] = lane_speed(a.active_speed).name;
    pj["rate_gbps"] = width_lanes(a.active_width) * lane_speed(a.active_speed).lane_gbps;
    pj["max_msg_sz"] = a.max_msg_sz;
    pj["lid"] = a.lid;
    pj["gid_tbl_len"] = a.gid_tbl_len;
    pj["usable"] = p.usable();
    auto& gids = pj["gids"] = nlohmann::json::array();
    for (const auto& g : p.gids) {
      gids.push_back({{"index", g.index},
                      {"gid", format_gid(g.gid)},
                      {"type", to_string(g.type)},
                      {"netdev", g.netdev},
                      {"address", g.address.text},
                      {"ipv4", g.address.ipv4},
                      {"routable", g.address.routable}});
    }
    ports.push_back(std::move(pj));
  }
  return j;
}

}  // namespace

std::vector<Section> check_devices() {
  std::vector<Section> sections;
  Section summary{"RDMA devices", "devices", {}, nlohmann::json::object()};
  const std::vector<std::string> in_sysfs = sysfs_device_names();
  summary.facts["sysfs"] = in_sysfs;

  Check found{"rdma_devices", "RDMA devices", Status::ok, "", "", {}};
  int count = 0;
  errno = 0;
  UniqueDeviceList list(ibv_get_device_list(&count));
  const int list_errno = errno;
  if (!list) count = 0;
  summary.facts["count"] = count;
  if (count == 0) {
    found.status = Status::fail;
    if (in_sysfs.empty()) {
      found.detail = "none found (this machine has no RDMA device)";
      found.fix = fmt::format(
          "load a driver (mlx5_ib, or for testing: modprobe rdma_rxe; rdma link add rxe0 type rxe "
          "netdev {}); without RDMA, run both ends with --transport tcp",
          default_route_netdev());
    } else if (!list && list_errno != 0) {
      found.detail = fmt::format("the kernel has {} but {}", join(in_sysfs, ", "),
                                 system_error("ibv_get_device_list", list_errno).message());
      found.fix = "load the user-space verbs module: modprobe ib_uverbs";
    } else {
      found.detail =
          fmt::format("the kernel has {} but libibverbs opened none of them", join(in_sysfs, ", "));
      std::error_code ec;
      found.fix = fs::exists("/dev/infiniband", ec)
                      ? "install the user-space driver (Debian: ibverbs-providers; rdma-core's "
                        "providers) that matches the kernel driver"
                      : "load the user-space verbs module: modprobe ib_uverbs";
    }
    summary.checks.push_back(std::move(found));
    summary.facts["devices"] = nlohmann::json::array();
    sections.push_back(std::move(summary));
    return sections;
  }

  std::vector<DeviceFacts> devices;
  devices.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) devices.push_back(gather_device(list.get()[i]));
  std::vector<std::string> names, usable;
  for (const auto& d : devices) {
    names.push_back(d.name);
    for (const auto& p : d.ports) {
      if (p.usable()) usable.push_back(fmt::format("{}/{}", d.name, p.number));
    }
  }
  // A broken port or device only fails the run when nothing else can carry video.
  const Status problem = usable.empty() ? Status::fail : Status::warn;
  found.detail = fmt::format("{} found: {}; usable ports: {}", count, join(names, ", "),
                             usable.empty() ? "none" : join(usable, ", "));
  if (usable.empty()) found.detail += " (see below for why)";
  summary.checks.push_back(std::move(found));
  summary.facts["usable_ports"] = usable;
  auto& facts = summary.facts["devices"] = nlohmann::json::array();
  for (const auto& d : devices) facts.push_back(device_json(d));
  sections.push_back(std::move(summary));

  for (const auto& d : devices) {
    Section s{fmt::format("Device {}", d.name), "", {}, nullptr};
    Check dev{fmt::format("device:{}", d.name), d.name, Status::ok, "", "", {}};
    if (!d.error.empty()) {
      dev.status = problem;
      dev.detail = d.error;
      dev.fix = d.fix;
      s.checks.push_back(std::move(dev));
      sections.push_back(std::move(s));
      continue;
    }
    dev.detail = fmt::format(
        "{} transport, /dev/infiniband/{}, fw {}, node GUID {}, {} port{}, "
        "max_mr_size {}, max_qp_wr {}",
        transport_str(d.transport), d.uverbs, d.attr.fw_ver[0] ? d.attr.fw_ver : "(none)",
        d.node_guid, d.attr.phys_port_cnt, d.attr.phys_port_cnt == 1 ? "" : "s",
        d.attr.max_mr_size == UINT64_MAX ? std::string("no limit")
                                         : format_bytes(d.attr.max_mr_size),
        d.attr.max_qp_wr);
    s.checks.push_back(std::move(dev));
    for (const auto& p : d.ports) {
      s.checks.push_back(port_check(d, p, problem));
      if (auto mtu = mtu_check(d, p)) s.checks.push_back(std::move(*mtu));
      s.checks.push_back(gid_check(d, p, problem));
    }
    sections.push_back(std::move(s));
  }
  return sections;
}

}  // namespace rdmavideo::doctor
