// SPDX-License-Identifier: Apache-2.0
// check_memlock: registering memory pins it, and the kernel charges pinned pages to
// RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK (ib_umem_get). A receiver registers its
// whole ring at once (slots rounded up to pages, as verbs_receiver lays them out) plus its
// control buffers, so a default `ulimit -l` of 8 MiB fails at the first StreamStart with
// ENOMEM from ibv_reg_mr.
#include <sys/resource.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "checks.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/probe.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::doctor {
namespace {

bool has_cap_ipc_lock() { return memory::can_lock_beyond_limit(); }

}  // namespace

RingNeed ring_need(const Options& o) {
  RingNeed n;
  n.slots = o.ring;
  if (auto layout = canonical_layout(o.pix_fmt, o.width, o.height)) {  // checked by the parser
    n.frame_bytes = layout->frame_bytes;
  }
  const auto locked = probe::verbs_receiver_locked_memory(n.frame_bytes, n.slots);
  n.slot_bytes = locked.slot_bytes;
  n.ring_bytes = locked.ring_bytes;
  n.control_bytes = locked.control_bytes;
  return n;
}

Section check_memlock(const Options& o) {
  Section s{"Locked memory (ulimit -l)", "memlock", {}, nullptr};
  const RingNeed need = ring_need(o);
  const std::string needs = fmt::format(
      "a receiver's ring of {} slot{} x {} bytes ({}x{} {}: {} bytes a frame, page-rounded) = {} "
      "bytes, + {} bytes of control buffers = {} bytes ({})",
      need.slots, need.slots == 1 ? "" : "s", need.slot_bytes, o.width, o.height, name(o.pix_fmt),
      need.frame_bytes, need.ring_bytes, need.control_bytes, need.total(),
      format_bytes(need.total()));
  Check c{"memlock", "memlock", Status::ok, "", "", {}};
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) {
    c.status = Status::fail;
    c.detail = system_error("getrlimit(RLIMIT_MEMLOCK)", errno).message();
    c.fix = "check the process limits: cat /proc/self/limits";
    s.checks.push_back(std::move(c));
    return s;
  }
  const bool unlimited = limit.rlim_cur == RLIM_INFINITY;
  const bool hard_unlimited = limit.rlim_max == RLIM_INFINITY;
  const bool cap = has_cap_ipc_lock();
  s.facts = {{"unlimited", unlimited},
             {"limit_bytes", unlimited ? nlohmann::json(nullptr) : nlohmann::json(limit.rlim_cur)},
             {"hard_limit_bytes",
              hard_unlimited ? nlohmann::json(nullptr) : nlohmann::json(limit.rlim_max)},
             {"cap_ipc_lock", cap},
             {"width", o.width},
             {"height", o.height},
             {"pix_fmt", name(o.pix_fmt)},
             {"slots", need.slots},
             {"frame_bytes", need.frame_bytes},
             {"slot_bytes", need.slot_bytes},
             {"ring_bytes", need.ring_bytes},
             {"control_bytes", need.control_bytes},
             {"needed_bytes", need.total()}};
  if (unlimited) {
    c.detail = "unlimited; " + needs;
    s.checks.push_back(std::move(c));
    return s;
  }
  const uint64_t cur = limit.rlim_cur;
  const std::string have =
      fmt::format("limit {} bytes ({}, ulimit -l {})", cur, format_bytes(cur), cur / 1024);
  if (cur >= need.total()) {
    c.detail = fmt::format("{} is enough for {}", have, needs);
    s.checks.push_back(std::move(c));
    return s;
  }
  const uint64_t kib = (need.total() + 1023) / 1024;
  if (hard_unlimited || limit.rlim_max >= need.total()) {
    c.fix = fmt::format(
        "ulimit -l unlimited (or ulimit -l {}) in the shell that starts "
        "rdmavideo-recv and rdmavideo-send, or set memlock in "
        "/etc/security/limits.conf (e.g. \"* - memlock unlimited\", then log in "
        "again)",
        kib);
  } else {
    c.fix = fmt::format(
        "ulimit -l unlimited, or set memlock in /etc/security/limits.conf (the hard "
        "limit is {}: e.g. \"* - memlock unlimited\", then log in again); for a "
        "systemd service LimitMEMLOCK=infinity, for docker --ulimit memlock=-1",
        format_bytes(limit.rlim_max));
  }
  if (cap) {
    c.status = Status::warn;
    c.detail = fmt::format(
        "{} is less than {}; this process has CAP_IPC_LOCK (root), which lifts "
        "the limit, but a user without it gets ENOMEM from ibv_reg_mr",
        have, needs);
  } else {
    c.status = Status::fail;
    c.detail = fmt::format("{} is less than {}: ibv_reg_mr of the ring would fail with ENOMEM",
                           have, needs);
  }
  s.checks.push_back(std::move(c));
  return s;
}

}  // namespace rdmavideo::doctor
