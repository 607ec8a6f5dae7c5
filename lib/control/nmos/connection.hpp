// SPDX-License-Identifier: Apache-2.0
// One sender's or receiver's IS-05 v1.1 endpoints: constraints, staged, active, and what a
// PATCH of staged does (stage, activate now or at a time, cancel), with the status codes and
// error bodies the specification gives for each bad request. What an activation means is the
// owner's (`Apply`); this file keeps the state and the rules.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nmos/clock.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::nmos {

using json = nlohmann::json;

/// An HTTP answer: status, JSON body, and a Location where one is due.
// The check flags the implicit members of any struct holding an nlohmann::json.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Reply {
  int status = 200;
  json body;
  std::string location;
};
/// The error body of IS-04 and IS-05 (error.json): code, error, debug.
Reply error_reply(int status, std::string error, std::string debug = "");

/// One transport parameter of a leg: how its values are checked (the type, beside the
/// constraint the constraints endpoint shows), its value before anything is staged, and how
/// "auto" becomes a value on activation.
struct Param {
  enum class Kind { ip, ip_or_null, port, flag, text, text_or_null };
  Kind kind = Kind::text;
  json constraint = json::object();  ///< enum, minimum, maximum (constraint-schema.json)
  json initial;
  bool auto_allowed = false;
  std::function<json()> resolve_auto;  ///< "auto" on activation; unset: keeps the staged value
};

/// Runs scheduled activations at their TAI times on one thread of its own.
class Scheduler {
 public:
  Scheduler();
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  /// Calls `run` at `when`; returns a ticket for cancel().
  uint64_t at(TaiTime when, std::function<void()> run);
  /// Whether it was still pending (and now never runs).
  bool cancel(uint64_t ticket);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable wake_;
  std::multimap<int64_t, std::pair<uint64_t, std::function<void()>>> due_;
  uint64_t next_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

class Connection {
 public:
  enum class Side { sender, receiver };
  /// Called with the new active endpoint's body before it becomes active; an error refuses
  /// the activation (500, and the active endpoint stays as it was).
  using Apply = std::function<Result<void>(const json& active)>;

  Connection(Side side, std::vector<std::pair<std::string, Param>> leg, Scheduler& scheduler,
             Apply apply, std::function<void()> changed);
  ~Connection();

  Reply constraints() const;
  Reply staged() const;
  Reply active() const;
  /// PATCH /staged: 200 (staged, or activated now), 202 (scheduled), 400 (a bad body, naming
  /// what is wrong), 423 (an activation is pending and this does not cancel it), 500 (the
  /// owner refused).
  Reply patch(const json& body);
  /// The same as one entry of a bulk request: {id, code[, error, debug]}.
  json bulk_result(const std::string& id, const json& params);

  /// The stream ended by itself: active, master_enable false; the owner's state changed.
  void disabled();
  /// A copy of the active endpoint's body.
  json active_body() const;

 private:
  json staged_body_locked() const;
  std::optional<std::string> check(const json& body) const;
  Result<void> activate_locked(const json& activation, std::unique_lock<std::mutex>& lock);
  void scheduled(uint64_t ticket);

  const Side side_;
  const std::vector<std::pair<std::string, Param>> leg_;
  Scheduler& scheduler_;
  const Apply apply_;
  const std::function<void()> changed_;

  mutable std::mutex mu_;
  std::condition_variable applied_;
  json staged_;  // peer id, master_enable, transport_params (one leg), transport_file
  json staged_activation_;
  json active_;
  std::optional<uint64_t> pending_;  // the scheduled activation's ticket
  bool applying_ = false;
};

}  // namespace rdmavideo::nmos
