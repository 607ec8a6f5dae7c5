// SPDX-License-Identifier: Apache-2.0
// check_gpu: GPU memory as a frame source or ring, all informational (skip or warn, never
// fail: host memory works without any of it). It asks the library what the senders and
// receivers would do: the CUDA driver as they load it (rdmavideo/cuda.hpp), each RDMA
// device's dma-buf import as the verbs transport probes it, and the registration ladder's
// decision (rdmavideo/gpu_path.hpp) for every RDMA device.
#include <dlfcn.h>

#include <memory>
#include <string>

#include "checks.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/gpu_path.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/memory.hpp"
#include "rdmavideo/probe.hpp"

namespace rdmavideo::doctor {
namespace {

struct GpuFacts {
  std::shared_ptr<cuda::Driver> driver;
  std::vector<cuda::DeviceFacts> devices;
  bool verbs_has_dmabuf = false;
  std::vector<probe::DmabufImport> imports;
  bool peermem = false;
};

Check check_cuda(GpuFacts& facts, nlohmann::json& json) {
  Check c{"cuda", "CUDA", Status::ok, "", "", {}};
  auto driver = cuda::Driver::load();
  if (!driver) {
    c.status = Status::skip;
    c.detail = driver.error().message() + "; frames use host memory";
    json["cuda_error"] = driver.error().message();
    return c;
  }
  facts.driver = *driver;
  json["cuda_driver"] = facts.driver->library();
  json["cuda_driver_version"] = facts.driver->version_text();
  if (facts.driver->device_count() == 0) {
    c.status = Status::skip;
    c.detail = fmt::format("CUDA driver {} found, no CUDA device", facts.driver->version_text());
    return c;
  }
  nlohmann::json devices = nlohmann::json::array();
  std::string names;
  for (int i = 0; i < facts.driver->device_count(); ++i) {
    auto f = facts.driver->facts(i);
    if (!f) {
      c.status = Status::warn;
      c.info.push_back(f.error().message());
      continue;
    }
    names += (names.empty() ? "" : ", ") + f->name;
    const bool flush_supported = cuda::can_flush_rdma_writes(*f, *facts.driver);
    const std::string not_visible = cuda::why_rdma_writes_not_visible(*f, *facts.driver);
    c.info.push_back(fmt::format(
        "cuda:{} {} at {}: {} memory, compute {}.{}, dma-buf export {}, GPUDirect RDMA {}, RDMA "
        "writes {} "
        "(ordering {}, flush {})",
        i, f->name, f->pci_bus_id, memory::format_bytes(f->total_memory), f->compute_major,
        f->compute_minor, f->dmabuf_supported ? "yes" : "no",
        f->gpudirect_rdma_supported ? "yes" : "no",
        !cuda::needs_rdma_flush(*f) ? "ordered (no flush)"
        : not_visible.empty()       ? "flushed before kernels read a slot"
                              : "need a flush it cannot make: rings it receives into are staged",
        f->rdma_writes_ordering, flush_supported ? "supported" : "not supported"));
    if (!not_visible.empty()) {
      c.status = Status::warn;
      c.fix =
          "GPUDirect RDMA into this GPU needs cuFlushGPUDirectRDMAWrites: update the NVIDIA driver";
    }
    devices.push_back({{"ordinal", i},
                       {"name", f->name},
                       {"pci_bus_id", f->pci_bus_id},
                       {"total_memory", f->total_memory},
                       {"dmabuf_supported", f->dmabuf_supported},
                       {"gpudirect_rdma_supported", f->gpudirect_rdma_supported},
                       {"rdma_writes_ordering", f->rdma_writes_ordering},
                       {"rdma_flush_options", f->rdma_flush_options},
                       {"rdma_flush_needed", cuda::needs_rdma_flush(*f)},
                       {"rdma_flush_supported", flush_supported}});
    facts.devices.push_back(std::move(*f));
  }
  json["cuda_devices"] = devices;
  c.detail = fmt::format("CUDA driver {}, {} device{}: {}", facts.driver->version_text(),
                         facts.driver->device_count(), facts.driver->device_count() == 1 ? "" : "s",
                         names);
  if (c.status == Status::warn && c.fix.empty())
    c.fix = "nvidia-smi shows whether every GPU is visible and healthy";
  return c;
}

Check check_dmabuf_verbs(GpuFacts& facts) {
  Check c{"dmabuf_verbs", "dma-buf (libibverbs)", Status::ok, "", "", {}};
  // Asked of the library as loaded, not of the headers this was built with.
  std::unique_ptr<void, int (*)(void*)> verbs(dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD),
                                              dlclose);
  facts.verbs_has_dmabuf = verbs && dlsym(verbs.get(), "ibv_reg_dmabuf_mr") != nullptr;
  if (facts.verbs_has_dmabuf) {
    c.detail = "libibverbs has ibv_reg_dmabuf_mr: GPU memory can be registered as a dma-buf";
    return c;
  }
  c.status = facts.devices.empty() ? Status::skip : Status::warn;
  c.detail = "libibverbs has no ibv_reg_dmabuf_mr (rdma-core older than 34)";
  if (!facts.devices.empty()) c.fix = "upgrade rdma-core to 34 or newer, or load nvidia-peermem";
  return c;
}

Check check_dmabuf_driver(GpuFacts& facts, nlohmann::json& json) {
  Check c{"dmabuf_driver", "dma-buf (RDMA driver)", Status::ok, "", "", {}};
  auto imports = probe::probe_dmabuf_import();
  if (!imports) {
    c.status = Status::skip;
    c.detail = fmt::format("not probed: {}", imports.error().message());
    return c;
  }
  facts.imports = *imports;
  std::vector<std::string> yes, no;
  for (const auto& i : facts.imports) {
    (i.probe.imports ? yes : no).push_back(i.device);
    c.info.push_back(fmt::format("{}: {} ({})", i.device,
                                 i.probe.imports ? "imports dma-bufs" : "no dma-buf import",
                                 i.probe.detail));
    json["dmabuf_import"][i.device] = i.probe.imports;
  }
  if (no.empty()) {
    c.detail = "every RDMA device imports dma-bufs";
  } else if (yes.empty()) {
    c.status = facts.devices.empty() ? Status::skip : Status::warn;
    c.detail = fmt::format("no RDMA device here imports dma-bufs ({} asked)", no.size());
    if (!facts.devices.empty())
      c.fix = "a NIC driver with dma-buf import (mlx5 on Linux 5.12+), or nvidia-peermem";
  } else {
    c.status = facts.devices.empty() ? Status::ok : Status::warn;
    c.detail =
        fmt::format("{} of {} RDMA devices import dma-bufs", yes.size(), facts.imports.size());
    if (!facts.devices.empty())
      c.fix = "give GPU streams a device that imports dma-bufs (--rdma-device)";
  }
  return c;
}

Check check_peermem(GpuFacts& facts) {
  Check c{"nvidia_peermem", "nvidia-peermem", Status::ok, "", "", {}};
  facts.peermem = gpu::peermem_loaded();
  if (facts.peermem) {
    c.detail = "module loaded: ibv_reg_mr takes CUDA device pointers";
    return c;
  }
  if (facts.devices.empty()) {
    c.status = Status::skip;
    c.detail = "module not loaded (not needed without a GPU)";
    return c;
  }
  c.status = Status::warn;
  c.detail = "module not loaded: GPUDirect RDMA goes through dma-buf only";
  c.fix = "modprobe nvidia-peermem, if the RDMA driver cannot import dma-bufs";
  return c;
}

// What `--memory cuda` would use on each RDMA device, for the first GPU.
Check check_path(const GpuFacts& facts, nlohmann::json& json) {
  Check c{"gpu_path", "GPU memory path", Status::ok, "", "", {}};
  if (facts.devices.empty()) {
    c.status = Status::skip;
    c.detail = "no GPU: --memory cuda is not available here";
    return c;
  }
  const cuda::DeviceFacts& gpu0 = facts.devices.front();
  gpu::PathFacts f;
  gpu::add_gpu_facts(f, gpu0, *facts.driver);
  f.verbs_has_dmabuf = facts.verbs_has_dmabuf;
  f.peermem_loaded = facts.peermem;
  f.rdma = false;
  json["gpu_path"]["tcp"] =
      std::string(gpu::to_string(gpu::choose_path(gpu::PathChoice::automatic, f)->path));
  bool staged_only = true;
  for (const auto& i : facts.imports) {
    f.rdma = true;
    f.rdma_device = i.device;
    f.device_imports_dmabuf = i.probe.imports;
    f.dmabuf_probe_detail = i.probe.detail;
    f.gpu_reads_rdma_writes = false;
    auto d = gpu::choose_path(gpu::PathChoice::automatic, f);
    f.gpu_reads_rdma_writes = true;
    auto received = gpu::choose_path(gpu::PathChoice::automatic, f);
    if (d->summary() == received->summary()) {
      c.info.push_back(fmt::format("cuda:0 over {}: {}", i.device, d->summary()));
    } else {
      c.info.push_back(fmt::format("cuda:0 over {}: sending {}; receiving {}", i.device,
                                   d->summary(), received->summary()));
    }
    json["gpu_path"][i.device] = d->summary();
    json["gpu_path_receiving"][i.device] = received->summary();
    if (d->path != gpu::Path::staged) staged_only = false;
  }
  if (facts.imports.empty()) {
    c.detail = "cuda:0 over TCP: staged through pinned host memory (no RDMA device)";
    return c;
  }
  c.detail = staged_only ? "cuda:0 is staged through pinned host memory on every RDMA device"
                         : "cuda:0 goes GPUDirect on at least one RDMA device";
  if (staged_only) {
    c.status = Status::warn;
    c.fix = "load nvidia-peermem, or use a NIC whose driver imports dma-bufs, for GPUDirect RDMA";
  }
  return c;
}

}  // namespace

Section check_gpu() {
  Section s{"GPU memory (informational)", "gpu", {}, nlohmann::json::object()};
  GpuFacts facts;
  s.checks.push_back(check_cuda(facts, s.facts));
  s.checks.push_back(check_dmabuf_verbs(facts));
  s.checks.push_back(check_dmabuf_driver(facts, s.facts));
  s.checks.push_back(check_peermem(facts));
  s.checks.push_back(check_path(facts, s.facts));
  s.facts["ibv_reg_dmabuf_mr"] = facts.verbs_has_dmabuf;
  s.facts["nvidia_peermem"] = facts.peermem;
  return s;
}

}  // namespace rdmavideo::doctor
