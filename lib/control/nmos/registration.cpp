// SPDX-License-Identifier: Apache-2.0
#include "nmos/registration.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <random>

#include "rdmavideo/log.hpp"

namespace rdmavideo::nmos {
namespace {

using namespace std::chrono_literals;
constexpr std::string_view kRegisterType = "_nmos-register._tcp";
constexpr std::string_view kNodeType = "_nmos-node._tcp";
constexpr const char* kBase = "/x-nmos/registration/v1.3";

// The ver_* key of a resource type.
std::string version_key(const std::string& type) {
  if (type == "node") return "ver_slf";
  if (type == "source") return "ver_src";
  if (type == "flow") return "ver_flw";
  if (type == "device") return "ver_dvc";
  if (type == "sender") return "ver_snd";
  return "ver_rcv";
}

std::unique_ptr<httplib::Client> client_for(const std::string& host, uint16_t port) {
  auto c = std::make_unique<httplib::Client>(host, port);
  c->set_connection_timeout(1, 0);
  c->set_read_timeout(2, 0);
  c->set_write_timeout(2, 0);
  return c;
}

// "http://host:port" (a path after it ignored).
std::optional<std::pair<std::string, uint16_t>> parse_url(const std::string& url) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos) return std::make_pair(std::string(rest), uint16_t{80});
  unsigned port = 0;
  auto p = rest.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || port == 0 || port > 65535) return std::nullopt;
  std::string host(rest.substr(0, colon));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return std::make_pair(host, static_cast<uint16_t>(port));
}

}  // namespace

std::string Registrar::Registry::url() const {
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}", host, port)
                                             : fmt::format("http://{}:{}", host, port);
}

Registrar::Registrar(const NodeOptions& options, uint16_t api_port,
                     std::function<std::vector<Registered>()> snapshot)
    : options_(options), api_port_(api_port), snapshot_(std::move(snapshot)) {
  for (const char* k : {"ver_slf", "ver_src", "ver_flw", "ver_dvc", "ver_snd", "ver_rcv"})
    versions_[k] = 0;
  thread_ = std::thread([this] { loop(); });
}

Registrar::~Registrar() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Registrar::changed(const Registered& resource) {
  {
    std::lock_guard lock(mu_);
    updates_.push_back(resource);
    ++versions_[version_key(resource.type)];
  }
  wake_.notify_all();
}

std::string Registrar::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void Registrar::set_state(std::string state) {
  std::lock_guard lock(mu_);
  if (state != state_) log().info("NMOS: {}", state);
  state_ = std::move(state);
}

// _nmos-node._tcp, with its ver_* record, peer-to-peer only (IS-04 "Node API peer-to-peer");
// withdrawn once registered.
void Registrar::advertise(bool peer_to_peer) {
  if (!options_.dnssd) return;
  if (!peer_to_peer) {  // registered: the registry is where the node is found
    node_advert_.reset();
    return;
  }
  discovery::Txt txt{{"api_proto", "http"}, {"api_ver", "v1.3"}, {"api_auth", "false"}};
  if (peer_to_peer) {
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : versions_) txt.emplace_back(k, std::to_string(v));
  }
  if (node_advert_) {
    if (auto ok = node_advert_->update(txt); !ok) log().warn("NMOS: {}", ok.error().message());
    return;
  }
  auto ad = discovery::Advertiser::start(
      {options_.label.empty() ? "rdmavideo" : options_.label, kNodeType, api_port_, txt});
  if (!ad) {
    if (!advert_failed_)
      log().info("NMOS: not advertised as {} ({})", kNodeType, ad.error().message());
    advert_failed_ = true;
    return;
  }
  node_advert_ = std::move(*ad);
}

std::vector<Registrar::Registry> Registrar::candidates() {
  std::vector<Registry> out;
  int priority = 0;
  for (const auto& url : options_.registries) {
    if (auto hp = parse_url(url)) out.push_back({hp->first, hp->second, priority++});
  }
  if (!out.empty() || !options_.dnssd) return out;
  // Unicast DNS first (a facility's own servers: quick, or failing within seconds), then
  // mDNS; one list, by priority.
  std::vector<discovery::Service> found;
  for (const auto& domain :
       options_.domains.empty() ? discovery::search_domains() : options_.domains) {
    auto listed = discovery::browse_unicast(kRegisterType, domain);
    if (listed) {
      found.insert(found.end(), listed->begin(), listed->end());
    } else if (unicast_failed_.insert(domain).second) {
      log().info("NMOS: no registry looked up in {}: {}", domain, listed.error().message());
    }
  }
  if (auto seen = discovery::browse(kRegisterType, 1500ms)) {
    found.insert(found.end(), seen->begin(), seen->end());
  }
  static std::mt19937 random{std::random_device{}()};
  std::shuffle(found.begin(), found.end(), random);  // equal priorities: at random
  for (const auto& s : found) {
    const auto proto = discovery::txt_value(s.txt, "api_proto").value_or("http");
    const auto versions = discovery::txt_value(s.txt, "api_ver").value_or("");
    if (proto != "http" || versions.find("v1.3") == std::string::npos) continue;
    int pri = 100;
    const auto p = discovery::txt_value(s.txt, "pri").value_or("100");
    std::from_chars(p.data(), p.data() + p.size(), pri);
    std::string address = s.address;
    if (const auto pct = address.find('%'); pct != std::string::npos) continue;  // link-local
    const bool twice = std::any_of(out.begin(), out.end(), [&](const Registry& r) {
      return r.host == address && r.port == s.port;
    });
    if (!twice) out.push_back({address, s.port, pri});  // seen over both
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Registry& a, const Registry& b) { return a.priority < b.priority; });
  return out;
}

bool Registrar::post(const Registry& r, const Registered& resource, int* status) {
  auto c = client_for(r.host, r.port);
  const json body = {{"type", resource.type}, {"data", resource.data}};
  auto res = c->Post(fmt::format("{}/resource", kBase), body.dump(), "application/json");
  if (status) *status = res ? res->status : 0;
  if (!res) return false;
  if (res->status == 200 || res->status == 201) return true;
  if (res->status >= 500) return false;
  log().warn("NMOS: {} refused the {} {}: {} {}", r.url(), resource.type,
             resource.data.value("id", ""), res->status, res->body);
  return true;  // a 4xx is this resource's, not the registry's failure
}

// A heartbeat: POST with an empty body and no content type; the status, 0 for no answer.
static int heartbeat(const std::string& host, uint16_t port, const std::string& node_id) {
  auto c = client_for(host, port);
  httplib::Request req;
  req.method = "POST";
  req.path = fmt::format("{}/health/nodes/{}", kBase, node_id);
  auto res = c->send(req);
  return res ? res->status : 0;
}

bool Registrar::register_all(const Registry& r) {
  auto resources = snapshot_();
  int status = 0;
  if (!post(r, resources.front(), &status)) return false;
  if (status == 200) {
    // The registry still held this node from before: delete it, and register afresh, so
    // that nothing stale is left under it.
    auto c = client_for(r.host, r.port);
    c->Delete(fmt::format("{}/resource/nodes/{}", kBase, node_id_));
    if (!post(r, resources.front(), &status)) return false;
  }
  for (size_t i = 1; i < resources.size(); ++i) {
    if (!post(r, resources[i])) return false;
  }
  return true;
}

void Registrar::deregister(const Registry& r) {
  auto resources = snapshot_();
  auto c = client_for(r.host, r.port);
  for (auto it = resources.rbegin(); it != resources.rend(); ++it) {
    c->Delete(fmt::format("{}/resource/{}s/{}", kBase, it->type, it->data.value("id", "")));
  }
  log().info("NMOS: deleted this node's {} resources from {}", resources.size(), r.url());
}

void Registrar::loop() {
  node_id_ = snapshot_().front().data.value("id", "");
  bool peer_to_peer = false;
  bool was_registered = false;
  auto wait = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, d, [&] { return stopping_; });
    return !stopping_;
  };
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    auto registries = candidates();
    bool registered = false;
    for (const auto& r : registries) {
      // After a registry failed, the next may share its records: a heartbeat first, and the
      // resources again only where it does not know the node (404).
      const int beat = was_registered ? heartbeat(r.host, r.port, node_id_) : 404;
      if (beat != 200 && (beat != 404 || !register_all(r))) {
        log().warn("NMOS: registry {} does not answer; trying the next", r.url());
        continue;
      }
      was_registered = true;
      registered = true;
      {
        std::lock_guard lock(mu_);
        current_ = r;  // resources changed meanwhile are posted again below: no harm
      }
      set_state("registered with " + r.url());
      peer_to_peer = false;
      advertise(false);
      // Heartbeats, and the resources that change meanwhile, until the registry fails.
      auto next_beat = std::chrono::steady_clock::now();
      for (;;) {
        std::deque<Registered> updates;
        {
          std::unique_lock lock(mu_);
          wake_.wait_until(lock, next_beat, [&] { return stopping_ || !updates_.empty(); });
          if (stopping_) break;
          updates.swap(updates_);
        }
        bool failed = false;
        for (const auto& u : updates) failed = failed || !post(r, u);
        if (!failed && std::chrono::steady_clock::now() >= next_beat) {
          const int status = heartbeat(r.host, r.port, node_id_);
          if (status == 404) {
            log().info("NMOS: {} no longer knows this node (404): registering again", r.url());
            failed = !register_all(r);
          } else if (status != 200) {
            failed = true;
          }
          next_beat = std::chrono::steady_clock::now() + options_.heartbeat;
        }
        if (failed) {
          log().warn("NMOS: registry {} failed; looking for another", r.url());
          break;
        }
      }
      {
        std::lock_guard lock(mu_);
        if (stopping_) break;
        current_.reset();
      }
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    if (!registered) {
      if (!peer_to_peer) {
        set_state("peer-to-peer (no registry found)");
        peer_to_peer = true;
      }
      advertise(true);
      if (!wait(registries.empty() ? 1000ms : 2000ms)) break;
    }
  }
  std::optional<Registry> current;
  {
    std::lock_guard lock(mu_);
    current = current_;
  }
  if (current) deregister(*current);
  node_advert_.reset();
}

}  // namespace rdmavideo::nmos
