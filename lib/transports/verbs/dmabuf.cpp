// SPDX-License-Identifier: Apache-2.0
// GPU memory and the NIC: whether a device imports dma-bufs, asked as NCCL asks it (register
// fd -1 and read the errno; nothing is registered either way), the facts a connection gives
// the ladder, and registration by the ladder's direct rungs.
#include <unistd.h>

#include <cerrno>

#include "rdmavideo/log.hpp"
#include "verbs/link.hpp"
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

gpu::PathFacts gpu_facts(const Link& link) {
  gpu::PathFacts f;
  f.rdma = true;
  f.rdma_device = link.device_name();
  f.verbs_has_dmabuf = true;  // linked against rdma-core 34 or newer
  const gpu::DmabufProbe probe = probe_dmabuf(link.pd().get());
  f.device_imports_dmabuf = probe.imports;
  f.dmabuf_probe_detail = probe.detail;
  f.peermem_loaded = gpu::peermem_loaded();
  return f;
}

Result<UniqueMr> register_gpu(const Link& link, std::span<const std::byte> memory, gpu::Path path,
                              const cuda::Device& device, int access) {
  const uint64_t address = cuda::address(memory.data());
  UniqueMr mr;
  if (path == gpu::Path::dmabuf) {
    auto fd = device.export_dmabuf(address, memory.size());
    if (!fd) return Unexpected(fd.error());
    mr.reset(ibv_reg_dmabuf_mr(link.pd().get(), 0, memory.size(), address, *fd, access));
    const int err = errno;
    close(*fd);  // the MR holds the dma-buf
    if (!mr) {
      return Unexpected(
          system_error(fmt::format("verbs {}: ibv_reg_dmabuf_mr of {} bytes of {}",
                                   link.device_name(), memory.size(), device.describe()),
                       err));
    }
  } else {
    mr.reset(
        ibv_reg_mr(link.pd().get(), const_cast<std::byte*>(memory.data()), memory.size(), access));
    if (!mr) {
      return Unexpected(
          system_error(fmt::format("verbs {}: ibv_reg_mr (nvidia-peermem) of {} bytes of {}",
                                   link.device_name(), memory.size(), device.describe()),
                       errno));
    }
  }
  return mr;
}

}  // namespace rdmavideo::verbs
