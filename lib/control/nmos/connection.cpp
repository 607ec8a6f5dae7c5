// SPDX-License-Identifier: Apache-2.0
#include "nmos/connection.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include "rdmavideo/log.hpp"

namespace rdmavideo::nmos {
namespace {

json no_activation() {
  return {{"mode", nullptr}, {"requested_time", nullptr}, {"activation_time", nullptr}};
}

bool is_ip(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

bool is_auto(const json& v) { return v.is_string() && v.get_ref<const std::string&>() == "auto"; }

// Why `value` is not a value `param` takes; nullopt when it is.
std::optional<std::string> bad_value(const std::string& name, const Param& param,
                                     const json& value) {
  const auto said = [&](std::string_view what) {
    return fmt::format("transport_params: {} {} is {}", name, value.dump(), what);
  };
  if (param.auto_allowed && is_auto(value)) return std::nullopt;
  switch (param.kind) {
    case Param::Kind::ip:
      if (!is_ip(value)) return said("not an IP address");
      break;
    case Param::Kind::ip_or_null:
      if (!value.is_null() && !is_ip(value)) return said("not an IP address or null");
      break;
    case Param::Kind::port:
      if (!value.is_number_integer()) return said("not a port number");
      break;
    case Param::Kind::flag:
      if (!value.is_boolean()) return said("not true or false");
      break;
    case Param::Kind::text:
      if (!value.is_string()) return said("not a string");
      break;
    case Param::Kind::text_or_null:
      if (!value.is_null() && !value.is_string()) return said("not a string or null");
      break;
  }
  const json& c = param.constraint;
  if (c.contains("enum")) {
    bool found = false;
    for (const auto& e : c["enum"]) found = found || e == value;
    if (!found) return said(fmt::format("not one of {}", c["enum"].dump()));
  }
  if (value.is_number()) {
    if (c.contains("minimum") && value.get<double>() < c["minimum"].get<double>())
      return said(fmt::format("below the minimum {}", c["minimum"].dump()));
    if (c.contains("maximum") && value.get<double>() > c["maximum"].get<double>())
      return said(fmt::format("above the maximum {}", c["maximum"].dump()));
  }
  return std::nullopt;
}

bool is_uuid_or_null(const json& v) {
  return v.is_null() || (v.is_string() && is_id(v.get_ref<const std::string&>()));
}

}  // namespace

Reply error_reply(int status, std::string error, std::string debug) {
  Reply r;
  r.status = status;
  r.body = {{"code", status}, {"error", std::move(error)}, {"debug", nullptr}};
  if (!debug.empty()) r.body["debug"] = std::move(debug);
  return r;
}

// ---- Scheduler ----

Scheduler::Scheduler() : thread_([this] { loop(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t Scheduler::at(TaiTime when, std::function<void()> run) {
  std::lock_guard lock(mu_);
  const uint64_t ticket = next_++;
  due_.emplace(when.total_ns(), std::make_pair(ticket, std::move(run)));
  wake_.notify_all();
  return ticket;
}

bool Scheduler::cancel(uint64_t ticket) {
  std::lock_guard lock(mu_);
  for (auto it = due_.begin(); it != due_.end(); ++it) {
    if (it->second.first == ticket) {
      due_.erase(it);
      return true;
    }
  }
  return false;
}

void Scheduler::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (due_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const int64_t now = tai_now().total_ns();
    const int64_t first = due_.begin()->first;
    if (first > now) {
      wake_.wait_for(lock, std::min<std::chrono::nanoseconds>(std::chrono::nanoseconds(first - now),
                                                              std::chrono::hours(1)));
      continue;
    }
    auto run = std::move(due_.begin()->second.second);
    due_.erase(due_.begin());
    lock.unlock();
    run();
    lock.lock();
  }
}

// ---- Connection ----

Connection::Connection(Side side, std::vector<std::pair<std::string, Param>> leg,
                       Scheduler& scheduler, Apply apply, std::function<void()> changed)
    : side_(side),
      leg_(std::move(leg)),
      scheduler_(scheduler),
      apply_(std::move(apply)),
      changed_(std::move(changed)) {
  json params = json::object();
  json resolved = json::object();
  for (const auto& [name, p] : leg_) {
    params[name] = p.initial;
    resolved[name] = is_auto(p.initial) && p.resolve_auto ? p.resolve_auto() : p.initial;
  }
  const char* peer = side_ == Side::sender ? "receiver_id" : "sender_id";
  staged_ = {{peer, nullptr}, {"master_enable", false}, {"transport_params", params}};
  if (side_ == Side::receiver) staged_["transport_file"] = {{"data", nullptr}, {"type", nullptr}};
  staged_activation_ = no_activation();
  active_ = {{peer, nullptr},
             {"master_enable", false},
             {"activation", no_activation()},
             {"transport_params", json::array({resolved})}};
  if (side_ == Side::receiver) active_["transport_file"] = staged_["transport_file"];
}

Connection::~Connection() {
  std::lock_guard lock(mu_);
  if (pending_) scheduler_.cancel(*pending_);
}

Reply Connection::constraints() const {
  json leg = json::object();
  for (const auto& [name, p] : leg_) leg[name] = p.constraint;
  return Reply{200, json::array({leg}), {}};
}

json Connection::staged_body_locked() const {
  json body = staged_;
  body["transport_params"] = json::array({staged_["transport_params"]});
  body["activation"] = staged_activation_;
  return body;
}

Reply Connection::staged() const {
  std::lock_guard lock(mu_);
  return Reply{200, staged_body_locked(), {}};
}

Reply Connection::active() const {
  std::lock_guard lock(mu_);
  return Reply{200, active_, {}};
}

json Connection::active_body() const {
  std::lock_guard lock(mu_);
  return active_;
}

std::optional<std::string> Connection::check(const json& body) const {
  if (!body.is_object()) return "the body must be a JSON object";
  const char* peer = side_ == Side::sender ? "receiver_id" : "sender_id";
  for (const auto& [key, value] : body.items()) {
    if (key == peer) {
      if (!is_uuid_or_null(value))
        return fmt::format("{} {} is not an id or null", key, value.dump());
    } else if (key == "master_enable") {
      if (!value.is_boolean())
        return fmt::format("master_enable {} is not true or false", value.dump());
    } else if (key == "activation") {
      if (!value.is_object()) return "activation must be an object";
      if (!value.contains("mode")) return "activation has no mode";
      for (const auto& [k, v] : value.items()) {
        if (k == "mode") {
          if (!v.is_null() && v != "activate_immediate" && v != "activate_scheduled_absolute" &&
              v != "activate_scheduled_relative") {
            return fmt::format(
                "activation mode {} is not one of activate_immediate, "
                "activate_scheduled_absolute, activate_scheduled_relative or null",
                v.dump());
          }
        } else if (k == "requested_time") {
          if (!v.is_null() && !(v.is_string() && parse_tai(v.get<std::string>()))) {
            return fmt::format("activation requested_time {} is not <seconds>:<nanoseconds>",
                               v.dump());
          }
        } else {
          return fmt::format("activation has an unknown key \"{}\"", k);
        }
      }
      const auto& mode = value["mode"];
      const bool scheduled =
          mode == "activate_scheduled_absolute" || mode == "activate_scheduled_relative";
      const bool has_time = value.contains("requested_time") && !value["requested_time"].is_null();
      if (scheduled && !has_time)
        return fmt::format("{} needs a requested_time", mode.get<std::string>());
    } else if (key == "transport_params") {
      if (!value.is_array()) return "transport_params must be an array (one object a leg)";
      if (value.size() != 1)
        return fmt::format("transport_params has {} legs; this {} has 1", value.size(),
                           side_ == Side::sender ? "sender" : "receiver");
      if (!value[0].is_object()) return "transport_params' leg must be an object";
      for (const auto& item : value[0].items()) {
        const std::string& name = item.key();
        const json& v = item.value();
        const auto it =
            std::find_if(leg_.begin(), leg_.end(), [&](const auto& p) { return p.first == name; });
        if (it == leg_.end())
          return fmt::format("transport_params: \"{}\" is not a parameter of this transport", name);
        if (auto why = bad_value(name, it->second, v)) return why;
      }
    } else if (key == "transport_file" && side_ == Side::receiver) {
      if (!value.is_object()) return "transport_file must be an object";
      for (const auto& [k, v] : value.items()) {
        if ((k != "data" && k != "type") || !(v.is_null() || v.is_string()))
          return fmt::format("transport_file: {} {} is not allowed", k, v.dump());
      }
    } else {
      return fmt::format("\"{}\" is not a key of /staged", key);
    }
  }
  return std::nullopt;
}

Reply Connection::patch(const json& body) {
  if (auto why = check(body)) return error_reply(400, *why);
  std::unique_lock lock(mu_);
  const bool cancels = body.contains("activation") && body["activation"]["mode"].is_null();
  if (pending_ && !cancels) {
    return error_reply(423, fmt::format("an activation is scheduled for {}; PATCH an activation "
                                        "with mode null to cancel it first",
                                        staged_activation_["activation_time"].dump()));
  }
  if (pending_) {
    scheduler_.cancel(*pending_);
    pending_.reset();
  }
  for (const auto& [key, value] : body.items()) {
    if (key == "transport_params") {
      for (const auto& [name, v] : value[0].items()) staged_["transport_params"][name] = v;
    } else if (key == "transport_file") {
      for (const auto& [k, v] : value.items()) staged_["transport_file"][k] = v;
    } else if (key != "activation") {
      staged_[key] = value;
    }
  }
  if (!body.contains("activation") || body["activation"]["mode"].is_null()) {
    staged_activation_ = no_activation();
    return Reply{200, staged_body_locked(), {}};
  }
  const auto& a = body["activation"];
  const std::string mode = a["mode"];
  const TaiTime now = tai_now();
  if (mode == "activate_immediate") {
    const json activation = {
        {"mode", mode}, {"requested_time", nullptr}, {"activation_time", now.to_string()}};
    if (auto done = activate_locked(activation, lock); !done) {
      return error_reply(500, "the activation failed", done.error().message());
    }
    json reply = staged_body_locked();
    reply["activation"] = activation;
    staged_activation_ = no_activation();
    return Reply{200, reply, {}};
  }
  const TaiTime requested = *parse_tai(a["requested_time"].get<std::string>());
  const TaiTime when = mode == "activate_scheduled_absolute"
                           ? requested
                           : TaiTime::from_ns(now.total_ns() + requested.total_ns());
  staged_activation_ = {{"mode", mode},
                        {"requested_time", a["requested_time"]},
                        {"activation_time", when.to_string()}};
  auto ticket = std::make_shared<uint64_t>(0);
  *ticket = scheduler_.at(when, [this, ticket] { scheduled(*ticket); });
  pending_ = *ticket;
  return Reply{202, staged_body_locked(), {}};
}

void Connection::scheduled(uint64_t ticket) {
  std::unique_lock lock(mu_);
  if (pending_ != ticket) return;  // cancelled, or another took its place
  pending_.reset();
  const json activation = staged_activation_;
  if (auto done = activate_locked(activation, lock); !done) {
    log().error("NMOS: the scheduled activation at {} failed: {}",
                activation["activation_time"].dump(), done.error().message());
  }
  staged_activation_ = no_activation();
}

Result<void> Connection::activate_locked(const json& activation,
                                         std::unique_lock<std::mutex>& lock) {
  const char* peer = side_ == Side::sender ? "receiver_id" : "sender_id";
  json resolved = json::object();
  for (const auto& [name, p] : leg_) {
    const json& v = staged_["transport_params"][name];
    resolved[name] = is_auto(v) && p.resolve_auto ? p.resolve_auto() : v;
  }
  json next = {{peer, staged_[peer]},
               {"master_enable", staged_["master_enable"]},
               {"activation", activation},
               {"transport_params", json::array({resolved})}};
  if (side_ == Side::receiver) next["transport_file"] = staged_["transport_file"];
  applied_.wait(lock, [this] { return !applying_; });
  applying_ = true;
  lock.unlock();
  Result<void> done = apply_(next);
  lock.lock();
  applying_ = false;
  applied_.notify_all();
  if (!done) return done;
  active_ = std::move(next);
  lock.unlock();
  changed_();  // the IS-04 resource's subscription follows; it reads active_body()
  lock.lock();
  return {};
}

void Connection::disabled() {
  {
    std::lock_guard lock(mu_);
    if (applying_ || !active_["master_enable"].get<bool>()) return;
    active_["master_enable"] = false;
  }
  changed_();
}

json Connection::bulk_result(const std::string& id, const json& params) {
  const Reply r = patch(params);
  json out = {{"id", id}, {"code", r.status}};
  if (r.status >= 400) {
    out["error"] = r.body.value("error", "");
    out["debug"] = r.body.value("debug", json(nullptr));
  }
  return out;
}

}  // namespace rdmavideo::nmos
