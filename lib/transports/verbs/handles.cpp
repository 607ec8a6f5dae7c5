// SPDX-License-Identifier: Apache-2.0
#include "verbs/handles.hpp"

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "rdmavideo/log.hpp"

namespace rdmavideo::verbs {
namespace {

// ibv_* destroy calls return an errno value; rdma_* ones return -1 and set errno.
void warn_failed(const char* call, int err) noexcept {
  try {
    log().warn("{} failed: {}", call, std::strerror(err));
  } catch (...) {
  }
}

}  // namespace

void EventChannelDeleter::operator()(rdma_event_channel* channel) const noexcept {
  rdma_destroy_event_channel(channel);  // returns nothing
}

void CmIdDeleter::operator()(rdma_cm_id* id) const noexcept {
  // A QP made with rdma_create_qp is destroyed before its cm id.
  if (id->qp) rdma_destroy_qp(id);
  if (rdma_destroy_id(id) != 0) warn_failed("rdma_destroy_id", errno);
}

void PdDeleter::operator()(ibv_pd* pd) const noexcept {
  if (int rc = ibv_dealloc_pd(pd); rc != 0) warn_failed("ibv_dealloc_pd", rc);
}

void CompChannelDeleter::operator()(ibv_comp_channel* channel) const noexcept {
  if (int rc = ibv_destroy_comp_channel(channel); rc != 0) {
    warn_failed("ibv_destroy_comp_channel", rc);
  }
}

void CqDeleter::operator()(ibv_cq* cq) const noexcept {
  if (int rc = ibv_destroy_cq(cq); rc != 0) warn_failed("ibv_destroy_cq", rc);
}

void MrDeleter::operator()(ibv_mr* mr) const noexcept {
  if (int rc = ibv_dereg_mr(mr); rc != 0) warn_failed("ibv_dereg_mr", rc);
}

SharedPd make_shared_pd(ibv_pd* pd) { return SharedPd(pd, PdDeleter{}); }

Result<SharedPd> device_pd(ibv_context* context) {
  // librdmacm opens each device once per process, so its context names the device.
  static std::mutex mu;
  static std::map<ibv_context*, std::weak_ptr<ibv_pd>> pds;
  std::lock_guard lock(mu);
  std::erase_if(pds, [](const auto& entry) { return entry.second.expired(); });
  if (auto it = pds.find(context); it != pds.end()) {
    if (auto pd = it->second.lock()) return pd;
  }
  ibv_pd* pd = ibv_alloc_pd(context);
  if (!pd) return Unexpected(system_error("ibv_alloc_pd", errno));
  SharedPd shared = make_shared_pd(pd);
  pds[context] = shared;
  return shared;
}

}  // namespace rdmavideo::verbs
