// SPDX-License-Identifier: Apache-2.0
// How GPU memory meets the network: the registration ladder.
//
// Over verbs, a ring or frame pool in CUDA memory is registered with the NIC by the first
// rung that works on this machine:
//   1. dmabuf:  the GPU exports the range as a dma-buf (cuMemGetHandleForAddressRange) and
//               the RDMA driver imports it (ibv_reg_dmabuf_mr). Whether the RDMA driver can
//               is probed as NCCL does: registering fd -1 fails with EOPNOTSUPP where it
//               cannot and with EBADF where it could.
//   2. peermem: plain ibv_reg_mr on the device pointer, which the kernel resolves through
//               nvidia-peermem (/sys/kernel/mm/memory_peers/nv_mem or
//               /sys/module/nvidia_peermem present).
//   3. staged:  pinned host slots are registered once and frames are copied between them
//               and GPU memory on a CUDA stream, double buffered, so copies overlap the
//               network.
// TCP always stages. `--gpu-path` forces a rung; a forced rung that cannot work is an
// error naming why, never a silent fall back. The decision and the reason for every rung
// passed over are reported (status line, stats JSON `gpu_path`, rdmavideo-doctor).
//
// The decision is a pure function of the facts (GpuPathFacts), so it is tested without a
// GPU or NIC; gathering the facts is the probes' business (dmabuf_import, peermem_loaded).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/result.hpp"

namespace rdmavideo::gpu {

enum class Path { dmabuf, peermem, staged };
enum class PathChoice { automatic, dmabuf, peermem, staged };

std::string_view to_string(Path path);
std::string_view to_string(PathChoice choice);
/// "auto", "dmabuf", "peermem", "staged".
std::optional<PathChoice> parse_path_choice(std::string_view text);

/// What the ladder decides from.
struct PathFacts {
  bool rdma = false;        ///< a verbs connection; false: TCP, which stages
  std::string rdma_device;  ///< "mlx5_0", for the reasons
  /// The GPU can export dma-bufs: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and a driver with
  /// cuMemGetHandleForAddressRange. `gpu_dmabuf_why` says why not.
  bool gpu_exports_dmabuf = false;
  std::string gpu_dmabuf_why;
  /// libibverbs has ibv_reg_dmabuf_mr (rdma-core 34 or newer).
  bool verbs_has_dmabuf = false;
  /// The RDMA device imports dma-bufs (probe with fd -1); nullopt when not probed.
  std::optional<bool> device_imports_dmabuf;
  std::string dmabuf_probe_detail;  ///< the probe's errno text
  bool peermem_loaded = false;
  /// The GPU says it supports GPUDirect RDMA (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED).
  bool gpu_direct_rdma = true;
  /// The GPU reads what the NIC writes (a receiver's ring, read by its sinks through CUDA).
  bool gpu_reads_rdma_writes = false;
  /// Why those reads would not see the writes: the GPU needs them flushed (writes ordering
  /// below owner, GPUs before Hopper) and cannot flush them (no host bit in its flush
  /// options, or no cuFlushGPUDirectRDMAWrites in the driver). Empty where they would.
  std::string rdma_writes_not_visible;
};

struct PathDecision {
  Path path = Path::staged;
  /// Why each rung above the one taken was passed over, in ladder order.
  std::vector<std::string> passed_over;
  /// "dmabuf", or "staged (dmabuf: ...; peermem: ...)".
  std::string summary() const;
  /// The rung taken failed to register with `error`. With `auto` it is passed over with its
  /// error and the frames are staged; a forced rung gives the error back.
  Result<void> fall_back(PathChoice choice, const Error& error);
};

/// Fills in what the GPU side knows: the device's dma-buf export (attribute and driver entry
/// point), GPUDirect RDMA support, and whether RDMA writes can be made visible to it.
void add_gpu_facts(PathFacts& facts, const cuda::DeviceFacts& device, const cuda::Driver& driver);

/// The rung to use, or, for a forced rung that cannot work, `unsupported` naming why.
Result<PathDecision> choose_path(PathChoice choice, const PathFacts& facts);
/// The same for `device`, with what a transport told (`transport`) and the device's own
/// facts added.
Result<PathDecision> choose_path(PathChoice choice, PathFacts transport,
                                 const cuda::Device& device);

/// Whether nvidia-peermem is loaded, looked up under `sysfs` ("/sys" on a real system).
bool peermem_loaded(const std::filesystem::path& sysfs = "/sys");

/// How an RDMA driver answered ibv_reg_dmabuf_mr with fd -1: EOPNOTSUPP (or a libibverbs
/// without the call, `have_call` false) means it cannot import dma-bufs; EBADF, or any other
/// refusal of the descriptor itself, means it could.
struct DmabufProbe {
  bool imports = false;
  std::string detail;  ///< "ibv_reg_dmabuf_mr(fd -1): Operation not supported"
};
DmabufProbe judge_dmabuf_probe(bool have_call, int probe_errno);

}  // namespace rdmavideo::gpu
