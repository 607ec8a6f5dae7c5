// SPDX-License-Identifier: Apache-2.0
// Owners for rdma_cm and verbs handles. Each deleter logs a warning naming the handle and
// the errno text when the destroy call fails (it never throws), so a leak or a handle
// destroyed in the wrong order is visible rather than silent.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

#include "rdmavideo/result.hpp"

namespace rdmavideo::verbs {

struct EventChannelDeleter {
  void operator()(rdma_event_channel* channel) const noexcept;
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const noexcept;  // destroys the id's QP first, if any
};
struct PdDeleter {
  void operator()(ibv_pd* pd) const noexcept;
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* channel) const noexcept;
};
struct CqDeleter {
  void operator()(ibv_cq* cq) const noexcept;
};
struct MrDeleter {
  void operator()(ibv_mr* mr) const noexcept;
};
struct DeviceListDeleter {
  void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};

using UniqueEventChannel = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using UniqueCmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;
using UniquePd = std::unique_ptr<ibv_pd, PdDeleter>;
using UniqueCompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using UniqueCq = std::unique_ptr<ibv_cq, CqDeleter>;
using UniqueMr = std::unique_ptr<ibv_mr, MrDeleter>;
using UniqueDeviceList = std::unique_ptr<ibv_device*, DeviceListDeleter>;

/// A protection domain shared by a connection and the memory registered in it: ring memory
/// lent to a lease keeps its PD alive after the connection is gone.
using SharedPd = std::shared_ptr<ibv_pd>;
SharedPd make_shared_pd(ibv_pd* pd);

/// The protection domain of `context` that every caller shares while any holds it (made on
/// first use, deallocated when the last holder lets go). Thread-safe.
Result<SharedPd> device_pd(ibv_context* context);

}  // namespace rdmavideo::verbs
