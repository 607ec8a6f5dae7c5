// SPDX-License-Identifier: Apache-2.0
// The node: its resources, the Node API and the Connection API over HTTP (cpp-httplib), and
// its registration. Every request is answered by route(), which knows the APIs' paths.
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "nmos/connection.hpp"
#include "nmos/registration.hpp"
#include "nmos/resources.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/nmos.hpp"

namespace rdmavideo::nmos {
namespace {

constexpr const char* kResourceTypes[] = {"sources", "flows", "devices", "senders", "receivers"};

json listing(std::initializer_list<const char*> items) {
  json out = json::array();
  for (const char* i : items) out.push_back(i);
  return out;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < path.size()) {
    const auto slash = path.find('/', at);
    const auto end = slash == std::string::npos ? path.size() : slash;
    if (end > at) out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// A path that takes GET alone: `value`, or 405 for another method.
Reply only_get(const std::string& method, const std::string& path, json value) {
  if (method != "GET") return error_reply(405, method + " is not allowed on " + path);
  return Reply{200, std::move(value), {}};
}

// BCP-002-01: "<group>:<role>", neither with a colon of its own.
std::string group_hint(std::string group, std::string role) {
  std::replace(group.begin(), group.end(), ':', ' ');
  std::replace(role.begin(), role.end(), ':', ' ');
  return group + ":" + role;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// The check flags the implicit members of any struct holding an nlohmann::json.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct SenderEntry {
  json source, flow, sender;
  std::optional<json> audio_source, audio_flow;
  std::unique_ptr<Connection> connection;
};
// NOLINTNEXTLINE(bugprone-exception-escape): as above
struct ReceiverEntry {
  json receiver;
  std::unique_ptr<Connection> connection;
};

class NodeImpl final : public Node {
 public:
  explicit NodeImpl(NodeOptions options) : options_(std::move(options)) {}

  Result<void> begin() {
    const std::string hostname = host_name();
    if (options_.seed.empty()) options_.seed = hostname + "/" + options_.label;
    node_id_ = make_id(options_.seed + "/node");
    device_id_ = make_id(options_.seed + "/device");
    ifs_ = interfaces();
    host_ = options_.advertise_host;
    if (host_.empty()) host_ = options_.listen.host;
    if (host_.empty() || host_ == "0.0.0.0" || host_ == "::") {
      host_ = "127.0.0.1";
      for (const auto& i : ifs_) {
        if (!i.address.empty()) {
          host_ = i.address;
          break;
        }
      }
    }
    for (const auto& i : ifs_) {
      if (i.address == host_) bindings_ = {i.name};
    }
    if (bindings_.empty() && !ifs_.empty()) bindings_ = {ifs_.front().name};

    server_.set_payload_max_length(1 << 20);
    server_.set_keep_alive_max_count(100);
    const auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      serve(req, res);
    };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    server_.Patch(".*", handler);
    server_.Delete(".*", handler);
    server_.Options(".*", handler);
    const std::string listen_host = options_.listen.host.empty() ? "0.0.0.0" : options_.listen.host;
    if (options_.listen.port == 0) {
      const int port = server_.bind_to_any_port(listen_host);
      if (port <= 0)
        return make_error(ErrorCode::system, "--nmos {}: cannot listen",
                          options_.listen.to_string());
      port_ = static_cast<uint16_t>(port);
    } else {
      if (!server_.bind_to_port(listen_host, options_.listen.port))
        return make_error(ErrorCode::system, "--nmos {}: cannot listen (in use?)",
                          options_.listen.to_string());
      port_ = options_.listen.port;
    }
    server_thread_ = std::thread([this] { server_.listen_after_bind(); });
    node_ = node_resource({node_id_, options_.label, options_.description}, host_, port_, hostname,
                          ifs_);
    device_ = device_resource({device_id_, options_.label, options_.description}, node_id_, {}, {},
                              host_, port_);
    // BCP-002-02: what the node and its device are, so a controller tells them apart.
    for (json* r : {&node_, &device_}) {
      (*r)["tags"]["urn:x-nmos:tag:asset:manufacturer/v1.0"] = {"rdmavideo"};
      (*r)["tags"]["urn:x-nmos:tag:asset:product/v1.0"] = {options_.product};
      (*r)["tags"]["urn:x-nmos:tag:asset:instance-id/v1.0"] = {node_id_};
    }
    if (!options_.function.empty())
      device_["tags"]["urn:x-nmos:tag:asset:function/v1.0"] = {options_.function};
    return {};
  }

  ~NodeImpl() override {
    registrar_.reset();  // deletes the node's resources from the registry
    server_.stop();
    if (server_thread_.joinable()) server_thread_.join();
    std::lock_guard lock(mu_);
    senders_.clear();
    receivers_.clear();
  }

  void start_registering() {
    registrar_ = std::make_unique<Registrar>(options_, port_, [this] { return snapshot(); });
  }

  std::string add_sender(const std::string& label, const VideoFormat& video,
                         const std::optional<AudioFormat>& audio,
                         std::function<Result<void>(const SenderActivation&)> activate) override {
    std::unique_lock lock(mu_);
    const std::string base = options_.seed + "/sender/" + std::to_string(senders_.size());
    auto e = std::make_unique<SenderEntry>();
    std::string id = make_id(base);
    e->source = video_source({make_id(base + "/source"), label, "video"}, device_id_, video.rate);
    e->flow =
        video_flow({make_id(base + "/flow"), label, "video"}, e->source["id"], device_id_, video);
    e->sender =
        sender_resource({id, label, options_.description}, e->flow["id"], device_id_, bindings_);
    e->sender["tags"]["urn:x-nmos:tag:grouphint/v1.0"] = {group_hint(label, "Video 1")};
    if (audio) {
      e->audio_source = audio_source({make_id(base + "/audio-source"), label + " sound", "sound"},
                                     device_id_, *audio);
      e->audio_flow = audio_flow({make_id(base + "/audio-flow"), label + " sound", "sound"},
                                 (*e->audio_source)["id"], device_id_, *audio);
      // The sound travels on the sender's connection with its picture: say so on both.
      (*e->audio_flow)["tags"]["urn:x-rdmavideo:sender"] = {id};
      // json::array: braces around one json are that json itself under clang (a copy), an
      // array under GCC.
      e->sender["tags"]["urn:x-rdmavideo:audio_flow"] = json::array({(*e->audio_flow)["id"]});
    }
    e->connection = std::make_unique<Connection>(
        Connection::Side::sender, sender_leg(label), scheduler_,
        [activate, label](const json& active) -> Result<void> {
          return activate(sender_activation(active, label));
        },
        [this, id] { subscription_changed("sender", id); });
    std::vector<Registered> fresh{{"source", e->source}};
    if (e->audio_source) fresh.push_back({"source", *e->audio_source});
    fresh.push_back({"flow", e->flow});
    if (e->audio_flow) fresh.push_back({"flow", *e->audio_flow});
    fresh.push_back({"sender", e->sender});
    senders_.emplace(id, std::move(e));
    added(lock, "senders", id, std::move(fresh));
    return id;
  }

  std::string add_receiver(
      const std::string& label, const Endpoint& listening, TransportKind transport,
      std::function<Result<void>(const ReceiverActivation&)> activate) override {
    std::unique_lock lock(mu_);
    std::string id = make_id(options_.seed + "/receiver/" + std::to_string(receivers_.size()));
    auto e = std::make_unique<ReceiverEntry>();
    e->receiver = receiver_resource({id, label, options_.description}, device_id_, bindings_);
    e->receiver["tags"]["urn:x-nmos:tag:grouphint/v1.0"] = {group_hint(label, "Video 1")};
    e->connection = std::make_unique<Connection>(
        Connection::Side::receiver, receiver_leg(listening, transport), scheduler_,
        [activate](const json& active) -> Result<void> {
          ReceiverActivation a;
          a.enable = active["master_enable"].get<bool>();
          if (active["sender_id"].is_string()) a.sender_id = active["sender_id"];
          return activate(a);
        },
        [this, id] { subscription_changed("receiver", id); });
    std::vector<Registered> fresh{{"receiver", e->receiver}};
    receivers_.emplace(id, std::move(e));
    added(lock, "receivers", id, std::move(fresh));
    return id;
  }

  void sender_stopped(const std::string& sender_id) override {
    Connection* c = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = senders_.find(sender_id);
      if (it != senders_.end()) c = it->second->connection.get();
    }
    if (c) c->disabled();
  }

  Endpoint local_endpoint() const override { return Endpoint{host_, port_}; }
  std::string node_id() const override { return node_id_; }
  std::string registration() const override {
    return registrar_ ? registrar_->state() : "not registering";
  }

 private:
  // The vendor transport's leg, in the parameters IS-05 v1.1's schemas know (RTP's address
  // and port parameters) and ext_ ones of its own; docs/nmos.md.
  std::vector<std::pair<std::string, Param>> sender_leg(const std::string& label) const {
    const std::string host = host_;
    Param source_ip{Param::Kind::ip, json::object(), "auto", true, [host] { return json(host); }};
    Param destination_ip{Param::Kind::ip, json::object(), "127.0.0.1", true,
                         [] { return json("127.0.0.1"); }};
    Param source_port{Param::Kind::port, {{"minimum", 0}, {"maximum", 65535}}, "auto", true, [] {
                        return json(0);
                      }};
    Param destination_port{Param::Kind::port, {{"minimum", 1}, {"maximum", 65535}}, 5000, true, [] {
                             return json(5000);
                           }};
    Param enabled{Param::Kind::flag, json::object(), true, false, {}};
    // "any" is rdmavideo's `auto` (verbs where there is a route, else TCP): IS-05 keeps the word
    // auto for values a device resolves on activation, and this one is resolved per connection.
    Param transport{Param::Kind::text, {{"enum", {"any", "tcp", "verbs"}}}, "any", false, {}};
    Param stream_name{Param::Kind::text, json::object(), label, false, {}};
    Param destination_name{Param::Kind::text_or_null, json::object(), nullptr, false, {}};
    return {{"source_ip", source_ip},         {"destination_ip", destination_ip},
            {"source_port", source_port},     {"destination_port", destination_port},
            {"rtp_enabled", enabled},         {"ext_transport", transport},
            {"ext_stream_name", stream_name}, {"ext_destination_name", destination_name}};
  }

  std::vector<std::pair<std::string, Param>> receiver_leg(const Endpoint& listening,
                                                          TransportKind kind) const {
    const std::string host =
        listening.host.empty() || listening.host == "0.0.0.0" || listening.host == "::"
            ? host_
            : listening.host;
    const uint16_t port = listening.port;
    Param source_ip{Param::Kind::ip_or_null, json::object(), nullptr, false, {}};
    Param interface_ip{
        Param::Kind::ip, {{"enum", {host}}}, "auto", true, [host] { return json(host); }};
    Param destination_port{
        Param::Kind::port, {{"enum", {port}}}, "auto", true, [port] { return json(port); }};
    Param enabled{Param::Kind::flag, json::object(), true, false, {}};
    const std::string t = kind == TransportKind::automatic ? "any" : std::string(to_string(kind));
    Param transport{Param::Kind::text, {{"enum", {t}}}, t, false, {}};
    return {{"source_ip", source_ip},
            {"interface_ip", interface_ip},
            {"destination_port", destination_port},
            {"rtp_enabled", enabled},
            {"ext_transport", transport}};
  }

  static SenderActivation sender_activation(const json& active, const std::string& label) {
    SenderActivation a;
    const json& leg = active["transport_params"][0];
    a.enable = active["master_enable"].get<bool>() && leg["rtp_enabled"].get<bool>();
    if (active["receiver_id"].is_string()) a.receiver_id = active["receiver_id"];
    if (leg["ext_destination_name"].is_string() &&
        !leg["ext_destination_name"].get<std::string>().empty()) {
      a.destination = Endpoint{leg["ext_destination_name"], 0, true};
    } else {
      a.destination = Endpoint{leg["destination_ip"], leg["destination_port"].get<uint16_t>()};
    }
    a.transport =
        parse_transport(leg["ext_transport"].get<std::string>()).value_or(TransportKind::automatic);
    a.stream_name =
        leg["ext_stream_name"].is_string() ? leg["ext_stream_name"].get<std::string>() : label;
    return a;
  }

  void subscription_changed(const std::string& type, const std::string& id) {
    Registered changed;
    {
      std::lock_guard lock(mu_);
      if (type == "sender") {
        auto& e = *senders_.at(id);
        const json active = e.connection->active_body();
        e.sender["subscription"] = {{"receiver_id", active["receiver_id"]},
                                    {"active", active["master_enable"]}};
        e.sender["version"] = next_version();
        changed = {"sender", e.sender};
      } else {
        auto& e = *receivers_.at(id);
        const json active = e.connection->active_body();
        e.receiver["subscription"] = {{"sender_id", active["sender_id"]},
                                      {"active", active["master_enable"]}};
        e.receiver["version"] = next_version();
        changed = {"receiver", e.receiver};
      }
    }
    if (registrar_) registrar_->changed(changed);
  }

  // A sender or receiver added (under `lock`): its device lists it, and a registry is given
  // the device and the new resources, parents first (the rest it holds already).
  void added(std::unique_lock<std::mutex>& lock, const char* list, const std::string& id,
             std::vector<Registered> fresh) {
    device_[list].push_back(id);
    device_["version"] = next_version();
    fresh.insert(fresh.begin(), Registered{"device", device_});
    lock.unlock();
    if (registrar_) {
      for (const auto& r : fresh) registrar_->changed(r);
    }
  }

  std::vector<Registered> snapshot() const {
    std::lock_guard lock(mu_);
    std::vector<Registered> out{{"node", node_}, {"device", device_}};
    for (const auto& [id, e] : senders_) {
      out.push_back({"source", e->source});
      if (e->audio_source) out.push_back({"source", *e->audio_source});
    }
    for (const auto& [id, e] : senders_) {
      out.push_back({"flow", e->flow});
      if (e->audio_flow) out.push_back({"flow", *e->audio_flow});
    }
    for (const auto& [id, e] : senders_) out.push_back({"sender", e->sender});
    for (const auto& [id, e] : receivers_) out.push_back({"receiver", e->receiver});
    return out;
  }

  // ---- HTTP ----

  void serve(const httplib::Request& req, httplib::Response& res) {
    res.set_header("Access-Control-Allow-Origin", "*");
    res.set_header("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, HEAD, OPTIONS, DELETE");
    res.set_header("Access-Control-Allow-Headers", "Content-Type, Accept");
    res.set_header("Access-Control-Max-Age", "3600");
    if (req.method == "OPTIONS") {
      res.status = 200;
      return;
    }
    Reply r;
    try {
      r = route(req.method == "HEAD" ? "GET" : req.method, req.path, req.body);
    } catch (const std::exception& e) {  // nothing a client sends may end the node
      r = error_reply(500, "internal error", e.what());
    }
    res.status = r.status;
    if (!r.location.empty()) res.set_header("Location", r.location);
    res.set_content(r.body.is_null() ? std::string() : r.body.dump(), "application/json");
  }

  Reply route(const std::string& method, const std::string& path, const std::string& body) {
    const auto s = split_path(path);
    auto get_only = [&](json value) { return only_get(method, path, std::move(value)); };
    if (s.empty()) return get_only(listing({"x-nmos/"}));
    if (s[0] != "x-nmos") return error_reply(404, path + " is not a path of this node");
    if (s.size() == 1) return get_only(listing({"node/", "connection/"}));
    if (s[1] == "node") return node_api(method, path, s, body);
    if (s[1] == "connection") return connection_api(method, path, s, body);
    return error_reply(404, path + " is not a path of this node");
  }

  Reply node_api(const std::string& method, const std::string& path,
                 const std::vector<std::string>& s, const std::string& body) {
    auto get_only = [&](json value) { return only_get(method, path, std::move(value)); };
    if (s.size() == 2) return get_only(listing({"v1.3/"}));
    if (s[2] != "v1.3")
      return error_reply(404, "Node API version " + s[2] + " is not served (v1.3)");
    if (s.size() == 3)
      return get_only(
          listing({"self/", "sources/", "flows/", "devices/", "senders/", "receivers/"}));
    const std::string& type = s[3];
    if (type == "self" && s.size() == 4) {
      std::lock_guard lock(mu_);
      return get_only(node_);
    }
    if (std::find(std::begin(kResourceTypes), std::end(kResourceTypes), type) ==
        std::end(kResourceTypes)) {
      return error_reply(404, path + " is not a path of the Node API");
    }
    const std::string singular = type.substr(0, type.size() - 1);
    if (s.size() == 4) {
      json out = json::array();
      for (const auto& r : snapshot()) {
        if (r.type == singular) out.push_back(r.data);
      }
      return get_only(out);
    }
    const std::string& id = s[4];
    if (s.size() == 6 && type == "receivers" && s[5] == "target") {
      if (method != "PUT") return error_reply(405, method + " is not allowed on " + path);
      return receiver_target(id, body);
    }
    if (s.size() > 5) return error_reply(404, path + " is not a path of the Node API");
    for (const auto& r : snapshot()) {
      if (r.type == singular && r.data.value("id", "") == id) return get_only(r.data);
    }
    if (method != "GET") return error_reply(405, method + " is not allowed on " + path);
    return error_reply(404, "no " + singular + " " + id + " on this node");
  }

  // IS-04 v1.3's PUT /receivers/{id}/target (deprecated beside IS-05, which it goes through):
  // a sender to take, or {} to take none.
  Reply receiver_target(const std::string& id, const std::string& body) {
    Connection* c = connection("receivers", id);
    if (!c) return error_reply(404, "no receiver " + id + " on this node");
    const json sender = json::parse(body, nullptr, false);
    if (sender.is_discarded() || !sender.is_object())
      return error_reply(400, "the body must be a sender object, or {}");
    const bool take = sender.contains("id");
    if (take && !(sender["id"].is_string() && is_id(sender["id"].get<std::string>())))
      return error_reply(400, "the sender's id is not an id");
    Reply r = c->patch({{"sender_id", take ? sender["id"] : json(nullptr)},
                        {"master_enable", take},
                        {"activation", {{"mode", "activate_immediate"}}}});
    if (r.status != 200) return r;
    return Reply{202, sender, {}};
  }

  Connection* connection(const std::string& type, const std::string& id) {
    std::lock_guard lock(mu_);
    if (type == "senders") {
      auto it = senders_.find(id);
      return it == senders_.end() ? nullptr : it->second->connection.get();
    }
    auto it = receivers_.find(id);
    return it == receivers_.end() ? nullptr : it->second->connection.get();
  }

  std::vector<std::string> ids(const std::string& type) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    if (type == "senders") {
      for (const auto& [id, e] : senders_) out.push_back(id);
    } else {
      for (const auto& [id, e] : receivers_) out.push_back(id);
    }
    return out;
  }

  Reply connection_api(const std::string& method, const std::string& path,
                       const std::vector<std::string>& s, const std::string& body) {
    auto get_only = [&](json value) { return only_get(method, path, std::move(value)); };
    if (s.size() == 2) return get_only(listing({"v1.1/"}));
    if (s[2] != "v1.1")
      return error_reply(404, "Connection API version " + s[2] + " is not served (v1.1)");
    if (s.size() == 3) return get_only(listing({"bulk/", "single/"}));
    if (s[3] == "bulk") {
      if (s.size() == 4) return get_only(listing({"senders/", "receivers/"}));
      if (s.size() != 5 || (s[4] != "senders" && s[4] != "receivers"))
        return error_reply(404, path + " is not a path of the Connection API");
      if (method != "POST") return error_reply(405, method + " is not allowed on " + path);
      return bulk(s[4], body);
    }
    if (s[3] != "single") return error_reply(404, path + " is not a path of the Connection API");
    if (s.size() == 4) return get_only(listing({"senders/", "receivers/"}));
    const std::string& type = s[4];
    if (type != "senders" && type != "receivers")
      return error_reply(404, path + " is not a path of the Connection API");
    if (s.size() == 5) {
      json out = json::array();
      for (const auto& id : ids(type)) out.push_back(id + "/");
      return get_only(out);
    }
    Connection* c = connection(type, s[5]);
    if (!c) {
      if (method != "GET" && method != "PATCH") return error_reply(405, method + " is not allowed");
      return error_reply(404,
                         "no " + type.substr(0, type.size() - 1) + " " + s[5] + " on this node");
    }
    if (s.size() == 6) {
      return get_only(
          type == "senders"
              ? listing({"constraints/", "staged/", "active/", "transportfile/", "transporttype/"})
              : listing({"constraints/", "staged/", "active/", "transporttype/"}));
    }
    if (s.size() != 7) return error_reply(404, path + " is not a path of the Connection API");
    const std::string& what = s[6];
    if (what == "staged") {
      if (method == "GET") return c->staged();
      if (method != "PATCH") return error_reply(405, method + " is not allowed on " + path);
      const json patch = json::parse(body, nullptr, false);
      if (patch.is_discarded()) return error_reply(400, "the body is not JSON");
      return c->patch(patch);
    }
    if (what == "constraints") return get_only(c->constraints().body);
    if (what == "active") return get_only(c->active().body);
    if (what == "transporttype") return get_only(std::string(kTransport));
    if (what == "transportfile" && type == "senders") {
      if (method != "GET") return error_reply(405, method + " is not allowed on " + path);
      return error_reply(404,
                         "this transport has no transport file: its transport parameters "
                         "(/active) are all a receiver needs");
    }
    return error_reply(404, path + " is not a path of the Connection API");
  }

  Reply bulk(const std::string& type, const std::string& body) {
    const json requests = json::parse(body, nullptr, false);
    if (requests.is_discarded() || !requests.is_array())
      return error_reply(400, "the body must be an array of {id, params}");
    for (const auto& r : requests) {
      if (!r.is_object() || !r.contains("id") || !r["id"].is_string() || !r.contains("params") ||
          !r["params"].is_object())
        return error_reply(400, "every entry must be an object with an id and params");
    }
    json out = json::array();
    for (const auto& r : requests) {
      const std::string id = r["id"];
      Connection* c = connection(type, id);
      if (!c) {
        out.push_back({{"id", id},
                       {"code", 404},
                       {"error", "no such " + type.substr(0, type.size() - 1)},
                       {"debug", nullptr}});
        continue;
      }
      out.push_back(c->bulk_result(id, r["params"]));
    }
    return Reply{200, out, {}};
  }

  NodeOptions options_;
  std::string node_id_, device_id_, host_;
  uint16_t port_ = 0;
  std::vector<Interface> ifs_;
  std::vector<std::string> bindings_;
  mutable std::mutex mu_;
  json node_, device_;
  std::map<std::string, std::unique_ptr<SenderEntry>> senders_;
  std::map<std::string, std::unique_ptr<ReceiverEntry>> receivers_;
  Scheduler scheduler_;
  httplib::Server server_;
  std::thread server_thread_;
  std::unique_ptr<Registrar> registrar_;
};

}  // namespace

Result<std::unique_ptr<Node>> Node::start(NodeOptions options) {
  auto node = std::make_unique<NodeImpl>(std::move(options));
  if (auto ok = node->begin(); !ok) return Unexpected(ok.error());
  node->start_registering();
  return std::unique_ptr<Node>(std::move(node));
}

}  // namespace rdmavideo::nmos
