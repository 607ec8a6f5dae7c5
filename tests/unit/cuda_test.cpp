// SPDX-License-Identifier: Apache-2.0
// The CUDA loader against the stand-in driver (tests/fakecuda): what it reports, how each
// missing piece is named, and that device memory round-trips without the CPU touching it.
// A real GPU runs the same calls in the `gpu` tests.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "fake_cuda.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::cuda {
namespace {

#ifndef RDMAVIDEO_REAL_GPU

const FakeCudaCounters& counters() {
  void* lib = dlopen(RDMAVIDEO_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr);
  auto fn = reinterpret_cast<const FakeCudaCounters* (*)()>(dlsym(lib, "fake_cuda_counters"));
  dlclose(lib);
  return *fn();
}

// Sets an environment variable of the fake driver for one test.
class FakeEnv {
 public:
  FakeEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~FakeEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

std::shared_ptr<Driver> load_fake() {
  auto driver = Driver::load(RDMAVIDEO_FAKE_CUDA);
  EXPECT_TRUE(driver) << driver.error().message();
  return driver ? *driver : nullptr;
}

// The stand-in's device 0, opened as the environment now describes it (it keeps its driver).
std::shared_ptr<Device> fake_device() {
  auto driver = load_fake();
  if (!driver) return nullptr;
  auto device = driver->open(0);
  EXPECT_TRUE(device) << device.error().message();
  return device ? *device : nullptr;
}

TEST(CudaDriver, AMissingLibrarySaysThereIsNoDriver) {
  auto driver = Driver::load("libcuda-that-is-not-here.so.1");
  ASSERT_FALSE(driver);
  EXPECT_EQ(driver.error().code(), ErrorCode::unsupported);
  EXPECT_NE(driver.error().message().find("no CUDA driver (libcuda-that-is-not-here.so.1"),
            std::string::npos)
      << driver.error().message();
}

TEST(CudaDriver, ReportsVersionDevicesAndFacts) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->version(), 13000);
  EXPECT_EQ(driver->version_text(), "13.0");
  EXPECT_EQ(driver->device_count(), 1);
  EXPECT_NE(driver->library().find("libcuda.so.1"), std::string::npos);
  auto facts = driver->facts(0);
  ASSERT_TRUE(facts) << facts.error().message();
  EXPECT_EQ(facts->name, "Fake GPU 0");
  EXPECT_EQ(facts->pci_bus_id, "0000:41:00.0");
  EXPECT_EQ(facts->compute_major, 9);
  EXPECT_TRUE(facts->dmabuf_supported);
  EXPECT_EQ(facts->rdma_writes_ordering, 100);
  EXPECT_FALSE(needs_rdma_flush(*facts));
}

// Why loading the stand-in fails with `name` set to `value`.
std::string load_error(const char* name, const char* value) {
  FakeEnv env(name, value);
  auto driver = Driver::load(RDMAVIDEO_FAKE_CUDA);
  EXPECT_FALSE(driver);
  return driver ? std::string() : driver.error().message();
}

TEST(CudaDriver, NoDeviceIsNamedWithTheDriverVersion) {
  EXPECT_EQ(load_error("FAKE_CUDA_INIT", "100"),
            "CUDA driver 13.0: cuInit failed: CUDA_ERROR_NO_DEVICE (100); no CUDA device is visible");
}

TEST(CudaDriver, AnOrdinalBeyondTheDevicesNamesHowManyThereAre) {
  FakeEnv devices("FAKE_CUDA_DEVICES", "2");
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  auto device = driver->open(2);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().message(), "no CUDA device 2: the driver sees 2 (cuda:0..cuda:1)");
  EXPECT_TRUE(driver->open(1));
}

TEST(CudaDriver, ARequiredEntryPointMissingNamesItAndItsVersion) {
  EXPECT_EQ(load_error("FAKE_CUDA_MISSING", "cuMemcpyDtoHAsync"),
            "CUDA driver 13.0 lacks cuMemcpyDtoHAsync (ABI 3.2): update the NVIDIA driver");
}

TEST(CudaDriver, OptionalEntryPointsMissingDisableOnlyTheirFeature) {
  FakeEnv missing("FAKE_CUDA_MISSING", "cuMemGetHandleForAddressRange,cuFlushGPUDirectRDMAWrites");
  FakeEnv version("FAKE_CUDA_VERSION", "11040");
  FakeEnv ordering("FAKE_CUDA_ORDERING", "0");
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  EXPECT_FALSE(driver->has("cuMemGetHandleForAddressRange"));
  EXPECT_TRUE(driver->has("cuMemAlloc"));
  auto device = driver->open(0);
  ASSERT_TRUE(device) << device.error().message();
  auto memory = (*device)->allocate(1 << 20);
  ASSERT_TRUE(memory);
  auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().message(),
            "CUDA driver 11.4 has no cuMemGetHandleForAddressRange (11.7 or newer exports dma-bufs)");
  auto flushed = (*device)->flush_rdma_writes();
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().message().find("needs RDMA writes flushed"), std::string::npos);
}

TEST(CudaDevice, MemoryRoundTripsAndIs64KiBAligned) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  const uint64_t live = counters().allocations_live;
  {
    auto memory = device->allocate(3 * 65536 + 7);
    ASSERT_TRUE(memory) << memory.error().message();
    EXPECT_EQ(**memory % 65536, 0u);
    EXPECT_EQ(counters().allocations_live, live + 1);
    std::vector<std::byte> in(3 * 65536 + 7);
    std::iota(reinterpret_cast<uint8_t*>(in.data()), reinterpret_cast<uint8_t*>(in.data()) + in.size(),
              uint8_t{1});
    ASSERT_TRUE(device->upload(**memory, in));
    std::vector<std::byte> out(in.size());
    ASSERT_TRUE(device->download(out, **memory));
    EXPECT_EQ(in, out);
    ASSERT_TRUE(device->fill(**memory + 10, std::byte{0xAB}, 5));
    ASSERT_TRUE(device->download(out, **memory));
    EXPECT_EQ(out[9], in[9]);
    EXPECT_EQ(out[10], std::byte{0xAB});
    EXPECT_EQ(out[14], std::byte{0xAB});
    EXPECT_EQ(out[15], in[15]);
  }
  EXPECT_EQ(counters().allocations_live, live);
}

TEST(CudaDevice, TheCpuCannotTouchDeviceMemory) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(65536);
  ASSERT_TRUE(memory);
  const auto at = **memory;
  // The stand-in maps device addresses inaccessible, as they are on a GPU: a host read of a
  // device pointer is a crash there as here.
  EXPECT_DEATH(
      {
        volatile auto* p = reinterpret_cast<volatile uint8_t*>(at);
        std::exit(*p == 0 ? 3 : 4);
      },
      "");
}

TEST(CudaDevice, OutOfDeviceMemoryIsAResourceError) {
  FakeEnv memory("FAKE_CUDA_MEMORY", "1048576");
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto big = device->allocate(2 << 20);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::resource);
  EXPECT_EQ(big.error().message(), "cuda:0: cuMemAlloc of 2 MiB failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
}

TEST(CudaDevice, DmabufExportGivesADescriptorOrSaysWhyNot) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  {
    auto device = driver->open(0);
    ASSERT_TRUE(device);
    auto memory = (*device)->allocate(1 << 20);
    ASSERT_TRUE(memory);
    auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
    ASSERT_TRUE(fd) << fd.error().message();
    EXPECT_GE(*fd, 0);
    close(*fd);
  }
  FakeEnv off("FAKE_CUDA_DMABUF", "0");
  auto device = driver->open(0);  // facts are read when the device is opened
  ASSERT_TRUE(device);
  auto memory = (*device)->allocate(1 << 20);
  ASSERT_TRUE(memory);
  auto fd = (*device)->export_dmabuf(**memory, 1 << 20);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), ErrorCode::unsupported);
  EXPECT_NE(fd.error().message().find("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0"), std::string::npos);
}

TEST(CudaDevice, FlushOnlyWhereTheDeviceDoesNotOrderRdmaWrites) {
  auto driver = load_fake();
  ASSERT_TRUE(driver);
  const uint64_t before = counters().flushes;
  {
    auto hopper = driver->open(0);  // ordering "owner": nothing to flush
    ASSERT_TRUE(hopper);
    ASSERT_TRUE((*hopper)->flush_rdma_writes());
    EXPECT_EQ(counters().flushes, before);
  }
  FakeEnv ordering("FAKE_CUDA_ORDERING", "0");
  auto older = driver->open(0);
  ASSERT_TRUE(older);
  EXPECT_TRUE(needs_rdma_flush((*older)->facts()));
  ASSERT_TRUE((*older)->flush_rdma_writes());
  EXPECT_EQ(counters().flushes, before + 1);
}

TEST(CudaStream, TicketsTellWhenCopiesFinished) {
  auto device = fake_device();
  ASSERT_TRUE(device);
  auto memory = device->allocate(4096);
  auto pinned = device->allocate_pinned(4096);
  ASSERT_TRUE(memory && pinned);
  auto stream = device->create_stream();
  ASSERT_TRUE(stream) << stream.error().message();
  std::span<std::byte> host(pinned->get(), 4096);
  std::fill(host.begin(), host.end(), std::byte{7});
  ASSERT_TRUE((*stream)->upload_async(**memory, host));
  auto first = (*stream)->mark();
  ASSERT_TRUE(first);
  std::fill(host.begin(), host.end(), std::byte{0});
  ASSERT_TRUE((*stream)->wait(*first));
  ASSERT_TRUE((*stream)->download_async(host, **memory));
  auto second = (*stream)->mark();
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *first);
  auto done = (*stream)->done(*second);
  ASSERT_TRUE(done);
  EXPECT_TRUE(*done);
  EXPECT_TRUE(*(*stream)->done(*first));  // retired earlier: done
  EXPECT_EQ(host[100], std::byte{7});
  ASSERT_TRUE((*stream)->synchronize());
}

#else  // RDMAVIDEO_REAL_GPU: cuda_gpu_test, label gpu, NVIDIA's driver

std::shared_ptr<Device> real_device() {
  auto driver = Driver::shared();
  if (!driver || (*driver)->device_count() == 0) return nullptr;
  auto device = Device::shared(0);
  return device ? *device : nullptr;
}

#define REQUIRE_GPU()                                                                         \
  auto gpu = real_device();                                                                   \
  if (!gpu)                                                                                   \
  GTEST_SKIP() << "no GPU here: "                                                             \
               << (Driver::shared() ? "the CUDA driver sees no device" : Driver::shared().error().message())

TEST(RealGpu, MemoryRoundTripsThroughTheDriverAndIs64KiBAligned) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(33177600);  // a 4K RGBA frame
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_EQ(**memory % 65536, 0u);
  std::vector<std::byte> in(33177600), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 131 + 7);
  ASSERT_TRUE(gpu->upload(**memory, in));
  ASSERT_TRUE(gpu->download(out, **memory));
  EXPECT_TRUE(in == out);
}

TEST(RealGpu, StreamCopiesThroughPinnedMemoryFinishByTheirTickets) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(1 << 24);
  auto pinned = gpu->allocate_pinned(1 << 24);
  auto stream = gpu->create_stream();
  ASSERT_TRUE(memory && pinned && stream);
  std::span<std::byte> host(pinned->get(), 1 << 24);
  std::fill(host.begin(), host.end(), std::byte{0x5a});
  ASSERT_TRUE((*stream)->upload_async(**memory, host));
  auto up = (*stream)->mark();
  ASSERT_TRUE(up);
  ASSERT_TRUE((*stream)->wait(*up));
  std::fill(host.begin(), host.end(), std::byte{0});
  ASSERT_TRUE((*stream)->download_async(host, **memory));
  auto down = (*stream)->mark();
  ASSERT_TRUE(down);
  ASSERT_TRUE((*stream)->wait(*down));
  EXPECT_EQ(host[12345], std::byte{0x5a});
  EXPECT_TRUE(*(*stream)->done(*down));
}

TEST(RealGpu, DmabufExportMatchesTheDeviceAttribute) {
  REQUIRE_GPU();
  auto memory = gpu->allocate(2 << 20);
  ASSERT_TRUE(memory);
  auto fd = gpu->export_dmabuf(**memory, 2 << 20);
  if (gpu->facts().dmabuf_supported && gpu->driver().has("cuMemGetHandleForAddressRange")) {
    ASSERT_TRUE(fd) << fd.error().message();
    EXPECT_GE(*fd, 0);
    close(*fd);
  } else {
    ASSERT_FALSE(fd);
    EXPECT_EQ(fd.error().code(), ErrorCode::unsupported);
  }
}

TEST(RealGpu, FlushIsANoOpWhereTheGpuOrdersRdmaWrites) {
  REQUIRE_GPU();
  EXPECT_TRUE(gpu->flush_rdma_writes()) << "ordering " << gpu->facts().rdma_writes_ordering;
}

#endif

}  // namespace
}  // namespace rdmavideo::cuda
