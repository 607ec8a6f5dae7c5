// SPDX-License-Identifier: Apache-2.0
// The doctor's checks. Each returns the section it prints: its checks in order, a fix for
// every failure, and the facts it gathered for --json. None throws or exits: a call that
// fails becomes a failed check that names the call, the value and the cause. They run in
// this order, on one thread:
//
//   check_devices   RDMA devices, their ports (state, link layer, MTU, speed) and GID tables
//   check_memlock   RLIMIT_MEMLOCK against the ring a receiver would register
//   check_peer      an rdma_cm connect to a receiver (--peer), then a clean disconnect
//   check_gpu       CUDA driver and devices, dma-buf registration, nvidia-peermem
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "options.hpp"
#include "report.hpp"

namespace rdmavideo::doctor {

/// "RDMA devices" (what was found, and fixes when nothing usable was), then one section
/// per device. A port that is not ACTIVE, or a RoCE port without a routable GID, fails when
/// no port on the machine can carry video, and is a warning when another one can.
std::vector<Section> check_devices();

/// What a receiver registers for a ring of `options.ring` slots of the given frame size.
struct RingNeed {
  uint32_t slots = 0;
  uint64_t frame_bytes = 0;    // canonical layout's frame_bytes
  uint64_t slot_bytes = 0;     // frame_bytes rounded up to a page, as the receiver lays slots
  uint64_t ring_bytes = 0;     // slots * slot_bytes
  uint64_t control_bytes = 0;  // the connection's registered send and receive buffers
  uint64_t total() const { return ring_bytes + control_bytes; }
};
RingNeed ring_need(const Options& options);

Section check_memlock(const Options& options);

/// Skipped without a peer. `timeout` bounds each rdma_cm step (address, route, connect).
Section check_peer(const std::optional<Endpoint>& peer, uint32_t credits_requested,
                   std::chrono::milliseconds timeout);

Section check_gpu();

/// --discover: prints what DNS-SD shows; the exit status (1 where no responder answers).
int discover(const Options& options);

}  // namespace rdmavideo::doctor
