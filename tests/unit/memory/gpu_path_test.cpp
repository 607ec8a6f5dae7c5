// SPDX-License-Identifier: Apache-2.0
// The GPU registration ladder's decisions, from facts alone: which rung, why each rung above
// it was passed over, and what a forced rung that cannot work says.
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>

#include "rdmavideo/gpu_path.hpp"
#include "temp_dir.hpp"

namespace rdmavideo::gpu {
namespace {

// A machine where every rung works.
PathFacts everything() {
  PathFacts f;
  f.rdma = true;
  f.rdma_device = "mlx5_0";
  f.gpu_exports_dmabuf = true;
  f.verbs_has_dmabuf = true;
  f.device_imports_dmabuf = true;
  f.peermem_loaded = true;
  return f;
}

TEST(GpuPath, ParsesEveryChoiceAndNothingElse) {
  EXPECT_EQ(parse_path_choice("auto"), PathChoice::automatic);
  EXPECT_EQ(parse_path_choice("dmabuf"), PathChoice::dmabuf);
  EXPECT_EQ(parse_path_choice("peermem"), PathChoice::peermem);
  EXPECT_EQ(parse_path_choice("staged"), PathChoice::staged);
  EXPECT_FALSE(parse_path_choice("dma-buf"));
  EXPECT_FALSE(parse_path_choice(""));
}

TEST(GpuPath, DmabufFirstWhereEverythingWorks) {
  auto d = choose_path(PathChoice::automatic, everything());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, Path::dmabuf);
  EXPECT_EQ(d->summary(), "dmabuf");
}

TEST(GpuPath, PeermemWhereTheRdmaDeviceCannotImportADmabuf) {
  auto f = everything();
  f.device_imports_dmabuf = false;
  f.dmabuf_probe_detail = "ibv_reg_dmabuf_mr(fd -1): Operation not supported";
  auto d = choose_path(PathChoice::automatic, f);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, Path::peermem);
  EXPECT_EQ(
      d->summary(),
      "peermem (dmabuf: mlx5_0 cannot import dma-bufs (ibv_reg_dmabuf_mr(fd -1): Operation not "
      "supported))");
}

TEST(GpuPath, StagedWhenNeitherDirectRungWorksAndBothReasonsAreKept) {
  // Soft-RoCE: no dma-buf import, and no nvidia-peermem without a GPU driver.
  auto f = everything();
  f.rdma_device = "rxe0";
  f.device_imports_dmabuf = false;
  f.dmabuf_probe_detail = "ibv_reg_dmabuf_mr(fd -1): Operation not supported";
  f.peermem_loaded = false;
  auto d = choose_path(PathChoice::automatic, f);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, Path::staged);
  ASSERT_EQ(d->passed_over.size(), 2u);
  EXPECT_EQ(d->passed_over[1], "peermem: nvidia-peermem is not loaded (modprobe nvidia-peermem)");
}

TEST(GpuPath, EachMissingPieceOfDmabufIsNamed) {
  auto f = everything();
  f.gpu_exports_dmabuf = false;
  f.gpu_dmabuf_why = "cuda:0 does not export dma-bufs";
  EXPECT_EQ(choose_path(PathChoice::automatic, f)->passed_over.at(0),
            "dmabuf: cuda:0 does not export dma-bufs");
  f = everything();
  f.verbs_has_dmabuf = false;
  EXPECT_EQ(choose_path(PathChoice::automatic, f)->passed_over.at(0),
            "dmabuf: libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer has)");
  f = everything();
  f.gpu_direct_rdma = false;
  auto d = choose_path(PathChoice::automatic, f);
  EXPECT_EQ(d->path, Path::staged);
  EXPECT_EQ(d->passed_over.at(1), "peermem: the GPU does not support GPUDirect RDMA");
}

// A receiving GPU that needs RDMA writes flushed and cannot flush them would read stale
// slots: no direct rung for it, and why; a sender (the NIC only reads its memory) still
// goes direct.
TEST(GpuPath, AGpuThatCannotSeeRdmaWritesIsNotWrittenDirectly) {
  auto f = everything();
  f.rdma_writes_not_visible =
      "cuda:0 needs RDMA writes flushed before it reads them (GPUDirect RDMA writes ordering 0) "
      "and cannot flush "
      "them (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS is 0: no host flush)";
  auto sending = choose_path(PathChoice::automatic, f);
  ASSERT_TRUE(sending);
  EXPECT_EQ(sending->path, Path::dmabuf);
  f.gpu_reads_rdma_writes = true;
  auto receiving = choose_path(PathChoice::automatic, f);
  ASSERT_TRUE(receiving);
  EXPECT_EQ(receiving->path, Path::staged);
  EXPECT_EQ(receiving->summary(), "staged (dmabuf: " + f.rdma_writes_not_visible +
                                      "; peermem: " + f.rdma_writes_not_visible + ")");
  auto forced = choose_path(PathChoice::peermem, f);
  ASSERT_FALSE(forced);
  EXPECT_EQ(forced.error().message(), "--gpu-path peermem: " + f.rdma_writes_not_visible);
}

// The facts come from the device: the writes ordering, the flush options' host bit and the
// driver's entry point.
TEST(GpuPath, WhetherWritesAreVisibleIsAskedOfTheDevice) {
#ifndef RDMAVIDEO_FAKE_CUDA
  GTEST_SKIP() << "this build has no stand-in CUDA driver (the Windows build, so far)";
#else
  auto driver = cuda::Driver::load(RDMAVIDEO_FAKE_CUDA);
  ASSERT_TRUE(driver) << driver.error().message();
  cuda::DeviceFacts f;
  f.rdma_writes_ordering = 100;  // Hopper and later: ordered, nothing to flush
  EXPECT_EQ(cuda::why_rdma_writes_not_visible(f, **driver), "");
  f.rdma_writes_ordering = 0;
  f.rdma_flush_options = 1;  // needed, and supported
  EXPECT_EQ(cuda::why_rdma_writes_not_visible(f, **driver), "");
  f.rdma_flush_options = 0;
  EXPECT_NE(cuda::why_rdma_writes_not_visible(f, **driver).find("cannot flush them"),
            std::string::npos);
  PathFacts facts = everything();
  add_gpu_facts(facts, f, **driver);
  EXPECT_EQ(facts.rdma_writes_not_visible, cuda::why_rdma_writes_not_visible(f, **driver));
#endif
}

TEST(GpuPath, TcpAlwaysStages) {
  auto f = everything();
  f.rdma = false;
  auto d = choose_path(PathChoice::automatic, f);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, Path::staged);
  EXPECT_EQ(d->summary(), "staged (TCP copies through host memory)");
  auto forced = choose_path(PathChoice::dmabuf, f);
  ASSERT_FALSE(forced);
  EXPECT_EQ(forced.error().message(), "--gpu-path dmabuf: TCP copies through host memory");
}

TEST(GpuPath, AForcedRungThatCannotWorkIsAnErrorNotAFallBack) {
  auto f = everything();
  f.peermem_loaded = false;
  auto peermem = choose_path(PathChoice::peermem, f);
  ASSERT_FALSE(peermem);
  EXPECT_EQ(peermem.error().code(), ErrorCode::unsupported);
  EXPECT_EQ(peermem.error().message(),
            "--gpu-path peermem: nvidia-peermem is not loaded (modprobe nvidia-peermem)");
  f.device_imports_dmabuf = false;
  f.dmabuf_probe_detail = "x";
  EXPECT_FALSE(choose_path(PathChoice::dmabuf, f));
  auto staged = choose_path(PathChoice::staged, everything());
  ASSERT_TRUE(staged);
  EXPECT_EQ(staged->path, Path::staged);
  EXPECT_EQ(staged->summary(), "staged (forced by --gpu-path staged)");
  EXPECT_EQ(choose_path(PathChoice::peermem, everything())->path, Path::peermem);
}

TEST(GpuPath, ARungThatFailsToRegisterIsPassedOverOnlyUnderAuto) {
  const Error refused(ErrorCode::system,
                      "verbs mlx5_0: ibv_reg_dmabuf_mr of 8 bytes of cuda:0: Bad address");
  auto d = choose_path(PathChoice::automatic, everything());
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->fall_back(PathChoice::automatic, refused));
  EXPECT_EQ(d->path, Path::staged);
  EXPECT_EQ(d->summary(),
            "staged (dmabuf: verbs mlx5_0: ibv_reg_dmabuf_mr of 8 bytes of cuda:0: Bad address)");
  auto forced = choose_path(PathChoice::dmabuf, everything());
  ASSERT_TRUE(forced);
  auto kept = forced->fall_back(PathChoice::dmabuf, refused);
  ASSERT_FALSE(kept);
  EXPECT_EQ(kept.error().message(), refused.message());
  EXPECT_EQ(forced->path, Path::dmabuf);
}

TEST(GpuPath, AnUnprobedDeviceIsTriedWithDmabuf) {
  auto f = everything();
  f.device_imports_dmabuf.reset();
  EXPECT_EQ(choose_path(PathChoice::automatic, f)->path, Path::dmabuf);
}

TEST(GpuPath, ProbeErrnoIsJudgedAsNcclDoes) {
  EXPECT_FALSE(judge_dmabuf_probe(true, EOPNOTSUPP).imports);
  EXPECT_FALSE(judge_dmabuf_probe(true, EPROTONOSUPPORT).imports);
  EXPECT_TRUE(judge_dmabuf_probe(true, EBADF).imports);
  EXPECT_EQ(judge_dmabuf_probe(true, EBADF).detail,
            "ibv_reg_dmabuf_mr(fd -1): Bad file descriptor");
  EXPECT_FALSE(judge_dmabuf_probe(false, 0).imports);
}

TEST(GpuPath, PeermemIsFoundByEitherSysfsEntry) {
  testing::TempDir sys;
  EXPECT_FALSE(peermem_loaded(sys.path()));
  std::filesystem::create_directories(sys.path() / "module/nvidia_peermem");
  EXPECT_TRUE(peermem_loaded(sys.path()));
  testing::TempDir other;
  std::filesystem::create_directories(other.path() / "kernel/mm/memory_peers/nv_mem");
  std::ofstream(other.path() / "kernel/mm/memory_peers/nv_mem/version") << "1.3\n";
  EXPECT_TRUE(peermem_loaded(other.path()));
}

}  // namespace
}  // namespace rdmavideo::gpu
