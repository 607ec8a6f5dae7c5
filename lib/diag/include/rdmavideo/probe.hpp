// SPDX-License-Identifier: Apache-2.0
// Probes for diagnosing a setup (rdmavideo-doctor): what the transports would do, asked
// without sending a frame, through the library's own code paths, so a diagnosis and the real
// thing cannot drift apart. Each probe reports facts; judging them and writing the fix is the
// caller's business.
//
// Every function is thread-safe and blocks for at most the timeout it is given.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/result.hpp"
#include "rdmavideo/transport.hpp"

namespace rdmavideo::probe {

/// Whether this build has the verbs transport and this machine an RDMA device.
bool have_rdma_devices();

/// Bytes a verbs receiver registers (locks) for one connection: its ring of `ring_size`
/// slots of `frame_bytes` frames, and its control message buffers.
struct LockedMemory {
  uint64_t slot_bytes = 0;     ///< one slot: the frame, rounded up to a page
  uint64_t ring_bytes = 0;     ///< every slot
  uint64_t control_bytes = 0;  ///< send and receive buffers of the control messages
};
LockedMemory verbs_receiver_locked_memory(uint64_t frame_bytes, uint32_t ring_size);

/// What happened when a sender's first steps were tried against `peer` over rdma_cm and
/// stopped before the protocol starts: resolve the address and route, create a small RC
/// queue pair, connect with the sender's ConnectRequest as private data (so a receiver
/// checks and accepts it as it would a sender's), and disconnect at once.
struct VerbsReach {
  enum class Step {
    no_device,        ///< no RDMA device (or a build without verbs)
    resolve_name,     ///< the host name does not resolve
    loopback,         ///< the address is this machine's loopback; RDMA does not run over lo
    event_channel,    ///< rdma_create_event_channel or rdma_create_id failed
    resolve_address,  ///< rdma_resolve_addr or its event
    resolve_route,    ///< rdma_resolve_route or its event
    create_qp,        ///< rdma_create_qp
    connect,          ///< rdma_connect or its event: rejected, unreachable, no answer
    connected,        ///< every step passed
  };
  Step reached = Step::no_device;  ///< the step that failed, or `connected`
  std::string error;               ///< the failure's text
  int error_errno = 0;             ///< for a failed call
  std::vector<std::string> steps;  ///< what succeeded, in order, for a report
  std::string device;              ///< the device the address resolved to
  int port_num = 0;
  std::string local_address;  ///< our address on that device
  uint32_t path_mtu = 0;      ///< from the route, 0 when unknown
  std::string event;          ///< the last rdma_cm event, or "timeout"
  int status = 0;             ///< its status (an IB CM REJ reason for REJECTED)
  std::string reject_reason;  ///< a reject's private-data text (an rdmavideo receiver's why)
  uint16_t min_version = 0;   ///< the versions the ConnectRequest offered
  uint16_t max_version = 0;
};
VerbsReach reach_verbs_receiver(const Endpoint& peer, uint32_t credits_requested,
                                std::chrono::milliseconds timeout);

/// IB CM REJ reasons worth naming (IBTA 12.6.7.2): nothing listens (8), the application
/// rejected (28).
inline constexpr int kRejectInvalidServiceId = 8;
inline constexpr int kRejectConsumerDefined = 28;
/// The name of an IB CM REJ reason, "reason" when it is not one we know.
const char* reject_reason_name(int status);

/// Whether a TCP listener answers at `peer` (a connect and a close: costs a receiver there
/// one refused handshake).
Result<void> reach_tcp_listener(const Endpoint& peer, std::chrono::milliseconds timeout);

/// Whether RDMA devices import dma-bufs (GPU memory's first rung): each device, or only
/// `device` when it is not empty, asked with a registration of fd -1 in a new protection
/// domain. An error names a device that is not there or cannot be opened.
struct DmabufImport {
  std::string device;
  gpu::DmabufProbe probe;
};
Result<std::vector<DmabufImport>> probe_dmabuf_import(const std::string& device = {});

}  // namespace rdmavideo::probe
