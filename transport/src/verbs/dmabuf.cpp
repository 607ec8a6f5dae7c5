// SPDX-License-Identifier: Apache-2.0
// Whether an RDMA device imports dma-bufs, asked as NCCL asks it: register fd -1 and read the
// errno. Nothing is registered either way.
#include <cerrno>

#include "verbs/verbs_transport.hpp"

namespace rdmavideo::verbs {

gpu::DmabufProbe probe_dmabuf(ibv_pd* pd) {
  errno = 0;
  ibv_mr* mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  const int err = errno;
  if (mr) {  // no driver accepts fd -1; should one, the import path is there
    ibv_dereg_mr(mr);
    return {true, "ibv_reg_dmabuf_mr(fd -1) succeeded"};
  }
  return gpu::judge_dmabuf_probe(true, err);
}

}  // namespace rdmavideo::verbs
