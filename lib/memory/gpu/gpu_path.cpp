// SPDX-License-Identifier: Apache-2.0
#include <cerrno>
#include <cstring>

#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::gpu {

std::string_view to_string(Path path) {
  switch (path) {
    case Path::dmabuf: return "dmabuf";
    case Path::peermem: return "peermem";
    case Path::staged: return "staged";
  }
  return "unknown";
}

std::string_view to_string(PathChoice choice) {
  switch (choice) {
    case PathChoice::automatic: return "auto";
    case PathChoice::dmabuf: return "dmabuf";
    case PathChoice::peermem: return "peermem";
    case PathChoice::staged: return "staged";
  }
  return "unknown";
}

std::optional<PathChoice> parse_path_choice(std::string_view text) {
  for (auto c :
       {PathChoice::automatic, PathChoice::dmabuf, PathChoice::peermem, PathChoice::staged}) {
    if (text == to_string(c)) return c;
  }
  return std::nullopt;
}

std::string PathDecision::summary() const {
  std::string s(to_string(path));
  if (passed_over.empty()) return s;
  s += " (";
  for (size_t i = 0; i < passed_over.size(); ++i) s += (i ? "; " : "") + passed_over[i];
  return s + ")";
}

Result<void> PathDecision::fall_back(PathChoice choice, const Error& error) {
  if (choice != PathChoice::automatic) return Unexpected(error);
  passed_over.push_back(fmt::format("{}: {}", to_string(path), error.message()));
  path = Path::staged;
  return {};
}

namespace {

// Why a rung cannot be used; empty when it can.
std::string why_not_dmabuf(const PathFacts& f) {
  if (!f.rdma) return "dmabuf: TCP copies through host memory";
  if (!f.gpu_direct_rdma) return "dmabuf: the GPU does not support GPUDirect RDMA";
  if (f.gpu_reads_rdma_writes && !f.rdma_writes_not_visible.empty())
    return "dmabuf: " + f.rdma_writes_not_visible;
  if (!f.gpu_exports_dmabuf) return "dmabuf: " + f.gpu_dmabuf_why;
  if (!f.verbs_has_dmabuf)
    return "dmabuf: libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer has)";
  if (f.device_imports_dmabuf && !*f.device_imports_dmabuf) {
    return fmt::format("dmabuf: {} cannot import dma-bufs ({})",
                       f.rdma_device.empty() ? "the RDMA device" : f.rdma_device,
                       f.dmabuf_probe_detail);
  }
  return {};
}

std::string why_not_peermem(const PathFacts& f) {
  if (!f.rdma) return "peermem: TCP copies through host memory";
  if (!f.gpu_direct_rdma) return "peermem: the GPU does not support GPUDirect RDMA";
  if (f.gpu_reads_rdma_writes && !f.rdma_writes_not_visible.empty())
    return "peermem: " + f.rdma_writes_not_visible;
  if (!f.peermem_loaded) return "peermem: nvidia-peermem is not loaded (modprobe nvidia-peermem)";
  return {};
}

}  // namespace

void add_gpu_facts(PathFacts& facts, const cuda::DeviceFacts& device, const cuda::Driver& driver) {
  facts.gpu_direct_rdma = device.gpudirect_rdma_supported;
  facts.gpu_exports_dmabuf = device.dmabuf_supported && driver.has("cuMemGetHandleForAddressRange");
  if (!device.dmabuf_supported) {
    facts.gpu_dmabuf_why = fmt::format("cuda:{} does not export dma-bufs", device.ordinal);
  } else if (!facts.gpu_exports_dmabuf) {
    facts.gpu_dmabuf_why =
        fmt::format("CUDA driver {} has no cuMemGetHandleForAddressRange", driver.version_text());
  }
  facts.rdma_writes_not_visible = cuda::why_rdma_writes_not_visible(device, driver);
}

Result<PathDecision> choose_path(PathChoice choice, const PathFacts& facts) {
  PathDecision d;
  const std::string dmabuf = why_not_dmabuf(facts);
  const std::string peermem = why_not_peermem(facts);
  switch (choice) {
    case PathChoice::dmabuf:
      if (!dmabuf.empty()) return make_error(ErrorCode::unsupported, "--gpu-path {}", dmabuf);
      d.path = Path::dmabuf;
      return d;
    case PathChoice::peermem:
      if (!peermem.empty()) return make_error(ErrorCode::unsupported, "--gpu-path {}", peermem);
      d.path = Path::peermem;
      return d;
    case PathChoice::staged:
      d.path = Path::staged;
      d.passed_over.emplace_back("forced by --gpu-path staged");
      return d;
    case PathChoice::automatic: break;
  }
  if (dmabuf.empty()) {
    d.path = Path::dmabuf;
    return d;
  }
  if (!facts.rdma) {
    d.path = Path::staged;
    d.passed_over.emplace_back("TCP copies through host memory");
    return d;
  }
  d.passed_over.push_back(dmabuf);
  if (peermem.empty()) {
    d.path = Path::peermem;
    return d;
  }
  d.passed_over.push_back(peermem);
  d.path = Path::staged;
  return d;
}

Result<PathDecision> choose_path(PathChoice choice, PathFacts transport,
                                 const cuda::Device& device) {
  add_gpu_facts(transport, device.facts(), device.driver());
  return choose_path(choice, transport);
}

bool peermem_loaded(const std::filesystem::path& sysfs) {
  std::error_code ec;
  return std::filesystem::exists(sysfs / "kernel/mm/memory_peers/nv_mem/version", ec) ||
         std::filesystem::exists(sysfs / "module/nvidia_peermem", ec);
}

DmabufProbe judge_dmabuf_probe(bool have_call, int probe_errno) {
  if (!have_call) return {false, "libibverbs has no ibv_reg_dmabuf_mr"};
  const std::string detail =
      fmt::format("ibv_reg_dmabuf_mr(fd -1): {}", std::strerror(probe_errno));
  // EOPNOTSUPP: the provider has no dma-buf import; EPROTONOSUPPORT comes from kernels
  // whose uverbs lacks the method.
  if (probe_errno == EOPNOTSUPP || probe_errno == EPROTONOSUPPORT || probe_errno == ENOSYS) {
    return {false, detail};
  }
  return {true, detail};
}

}  // namespace rdmavideo::gpu
