// SPDX-License-Identifier: Apache-2.0
#include "nmos/resources.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <fstream>

#include "nmos/clock.hpp"

namespace rdmavideo::nmos {
namespace {

json rational(Rational r) { return {{"numerator", r.num}, {"denominator", r.den}}; }

std::string read_mac(const std::string& name) {
  std::ifstream in("/sys/class/net/" + name + "/address");
  std::string mac;
  std::getline(in, mac);
  std::replace(mac.begin(), mac.end(), ':', '-');
  std::transform(mac.begin(), mac.end(), mac.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return mac.size() == 17 ? mac : "00-00-00-00-00-00";
}

// IS-04's colour words for the stream's colour.
std::string colorspace(const Colour& c) {
  if (c.matrix == colour::kBt2020 || c.primaries == colour::kBt2020) return "BT2020";
  if (c.matrix == colour::kBt601_625 || c.matrix == colour::kBt601_525) return "BT601";
  return "BT709";  // what BT.709 and sRGB (RGB) streams are, and streams that say nothing
}

std::string transfer(const Colour& c) {
  if (c.transfer == 16) return "PQ";
  if (c.transfer == 18) return "HLG";
  return "SDR";
}

json components(const VideoFormat& v) {
  const FormatTraits t = traits(v.pix_fmt);
  const uint32_t cw = v.width >> t.chroma_shift_x, ch = v.height >> t.chroma_shift_y;
  auto component = [&](const char* name, uint32_t w, uint32_t h) {
    return json{{"name", name}, {"width", w}, {"height", h}, {"bit_depth", t.bits}};
  };
  if (t.rgb) {
    json out = json::array({component("R", v.width, v.height), component("G", v.width, v.height),
                            component("B", v.width, v.height)});
    if (v.pix_fmt == PixelFormat::rgba || v.pix_fmt == PixelFormat::bgra)
      out.push_back(component("A", v.width, v.height));
    return out;
  }
  return json::array(
      {component("Y", v.width, v.height), component("Cb", cw, ch), component("Cr", cw, ch)});
}

// What every source has: its format, its device, no parents, the node's clock.
json source_core(const Common& c, const char* format, const std::string& device_id) {
  json s = resource_core(c);
  s["format"] = format;
  s["caps"] = json::object();
  s["device_id"] = device_id;
  s["parents"] = json::array();
  s["clock_name"] = "clk0";
  return s;
}

// What every flow has: its format, source and device, no parents.
json flow_core(const Common& c, const char* format, const std::string& source_id,
               const std::string& device_id) {
  json f = resource_core(c);
  f["format"] = format;
  f["source_id"] = source_id;
  f["device_id"] = device_id;
  f["parents"] = json::array();
  return f;
}

}  // namespace

std::vector<Interface> interfaces() {
  std::vector<Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_name || (a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Interface& i) { return i.name == a->ifa_name; });
    if (it == out.end()) {
      out.push_back({a->ifa_name, read_mac(a->ifa_name), ""});
      it = out.end() - 1;
    }
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && it->address.empty()) {
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      it->address = text;
    }
  }
  freeifaddrs(list);
  return out;
}

json resource_core(const Common& c) {
  return {{"id", c.id},
          {"version", next_version()},
          {"label", c.label},
          {"description", c.description},
          {"tags", json::object()}};
}

json node_resource(const Common& c, const std::string& host, uint16_t port,
                   const std::string& hostname, const std::vector<Interface>& ifs) {
  json node = resource_core(c);
  node["href"] = fmt::format("http://{}:{}/", host, port);
  node["hostname"] = hostname;
  node["api"] = {
      {"versions", {"v1.3"}},
      {"endpoints",
       {{{"host", host}, {"port", port}, {"protocol", "http"}, {"authorization", false}}}}};
  node["caps"] = json::object();
  node["services"] = json::array();
  node["clocks"] = {{{"name", "clk0"}, {"ref_type", "internal"}}};
  node["interfaces"] = json::array();
  for (const auto& i : ifs) {
    node["interfaces"].push_back({{"chassis_id", i.mac}, {"port_id", i.mac}, {"name", i.name}});
  }
  return node;
}

json device_resource(const Common& c, const std::string& node_id,
                     const std::vector<std::string>& senders,
                     const std::vector<std::string>& receivers, const std::string& host,
                     uint16_t port) {
  json device = resource_core(c);
  device["type"] = "urn:x-nmos:device:generic";
  device["node_id"] = node_id;
  device["senders"] = senders;
  device["receivers"] = receivers;
  device["controls"] = {{{"href", fmt::format("http://{}:{}/x-nmos/connection/v1.1/", host, port)},
                         {"type", "urn:x-nmos:control:sr-ctrl/v1.1"},
                         {"authorization", false}}};
  return device;
}

json video_source(const Common& c, const std::string& device_id, Rational rate) {
  json s = source_core(c, "urn:x-nmos:format:video", device_id);
  s["grain_rate"] = rational(rate);
  return s;
}

json audio_source(const Common& c, const std::string& device_id, const AudioFormat& audio) {
  json s = source_core(c, "urn:x-nmos:format:audio", device_id);
  static constexpr const char* kNames[] = {"L", "R", "C", "LFE", "Ls", "Rs", "Lrs", "Rrs"};
  s["channels"] = json::array();
  for (uint32_t i = 0; i < audio.channels; ++i) {
    s["channels"].push_back({{"label", i < std::size(kNames) && audio.channels > 1
                                           ? kNames[i]
                                           : fmt::format("Channel {}", i + 1)}});
  }
  return s;
}

json video_flow(const Common& c, const std::string& source_id, const std::string& device_id,
                const VideoFormat& v) {
  json f = flow_core(c, "urn:x-nmos:format:video", source_id, device_id);
  f["grain_rate"] = rational(v.rate);
  f["media_type"] = "video/raw";
  f["frame_width"] = v.width;
  f["frame_height"] = v.height;
  f["interlace_mode"] = "progressive";
  f["colorspace"] = colorspace(v.colour);
  f["transfer_characteristic"] = transfer(v.colour);
  f["components"] = components(v);
  return f;
}

json audio_flow(const Common& c, const std::string& source_id, const std::string& device_id,
                const AudioFormat& audio) {
  json f = flow_core(c, "urn:x-nmos:format:audio", source_id, device_id);
  f["sample_rate"] = rational(Rational{audio.sample_rate, 1});
  // Linear PCM as 32-bit floats, which is not one of the L16/L24 types of flow_audio_raw.
  f["media_type"] = "audio/x-rdmavideo-f32";
  return f;
}

json sender_resource(const Common& c, const std::string& flow_id, const std::string& device_id,
                     const std::vector<std::string>& bindings) {
  json s = resource_core(c);
  s["flow_id"] = flow_id;
  s["transport"] = std::string(kTransport);
  s["device_id"] = device_id;
  s["manifest_href"] = nullptr;
  s["interface_bindings"] = bindings;
  s["subscription"] = {{"receiver_id", nullptr}, {"active", false}};
  s["caps"] = json::object();
  return s;
}

json receiver_resource(const Common& c, const std::string& device_id,
                       const std::vector<std::string>& bindings) {
  json r = resource_core(c);
  r["format"] = "urn:x-nmos:format:video";
  // BCP-004-01: what it takes, as constraint sets: raw video, any size, rate and sampling
  // (a stream brings its format; the ring is made for it).
  r["caps"] = {{"media_types", {"video/raw"}},
               {"constraint_sets",
                {{{"urn:x-nmos:cap:meta:label", "raw video, any size and rate"},
                  {"urn:x-nmos:cap:format:media_type", {{"enum", {"video/raw"}}}}}}},
               {"version", r["version"]}};  // no later than the resource's own
  r["device_id"] = device_id;
  r["transport"] = std::string(kTransport);
  r["interface_bindings"] = bindings;
  r["subscription"] = {{"sender_id", nullptr}, {"active", false}};
  return r;
}

}  // namespace rdmavideo::nmos
