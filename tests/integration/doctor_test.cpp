// SPDX-License-Identifier: Apache-2.0
// rdmavideo-doctor as a user runs it: on a machine without an RDMA device it says so plainly,
// gives a fix and exits 1; --json carries every check; the memlock check shows the ring it
// sized; usage errors are one line and exit 2. With RDMA devices (the rxe lab), --peer
// reaches a verbs receiver and fails with a fix on a port nothing listens on. The GID
// helpers are checked here too, since only a machine with RoCE ports exercises them
// through the binary.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <set>

#include "gid.hpp"
#include "process.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

bool host_has_rdma_devices() {
  std::error_code ec;
  return std::filesystem::exists("/sys/class/infiniband", ec) &&
         !std::filesystem::is_empty("/sys/class/infiniband", ec);
}

struct DoctorRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

DoctorRun run_doctor(const std::vector<std::string>& args) {
  TempDir dir;
  std::vector<std::string> argv{RDMAVIDEO_DOCTOR_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  Redirect redirect;
  redirect.stdout_path = (dir / "stdout").string();
  Process p(argv, dir / "stderr", redirect);
  const auto code = p.wait(60s);
  DoctorRun run;
  run.exit_code = code.value_or(-1);
  run.out = read_file(dir / "stdout");
  run.err = p.stderr_text();
  return run;
}

// The doctor under `sh -c 'ulimit -S -l KIB && exec doctor ARGS'`, stdout only.
DoctorRun run_doctor_with_memlock(uint64_t kib, const std::string& args) {
  TempDir dir;
  const auto out = dir / "stdout";
  DoctorRun run;
  run.exit_code = shell(fmt::format("ulimit -S -l {} && exec '{}' {} >'{}' 2>/dev/null", kib,
                                    RDMAVIDEO_DOCTOR_BIN, args, out.string()));
  run.out = read_file(out);
  return run;
}

const json* find_check(const json& report, const std::string& name) {
  for (const auto& c : report.at("checks")) {
    if (c.at("name") == name) return &c;
  }
  return nullptr;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// --- without an RDMA device ---------------------------------------------------------------

TEST(Doctor, NoRdmaDeviceSaysSoPlainlyWithAFix) {
  if (host_has_rdma_devices())
    GTEST_SKIP() << "this machine has RDMA devices (/sys/class/infiniband)";
  const DoctorRun r = run_doctor({});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "[FAIL] RDMA devices: none found (this machine has no RDMA device)"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "fix: load a driver (mlx5_ib, or for testing: modprobe rdma_rxe; rdma "
                       "link add rxe0 type rxe netdev "))
      << r.out;
  // The other sections still ran.
  for (const char* section : {"Locked memory", "Peer", "GPU memory"}) {
    EXPECT_TRUE(contains(r.out, section)) << section << "\n" << r.out;
  }
  EXPECT_TRUE(contains(r.out, "1 check failed")) << r.out;
}

TEST(Doctor, NoRdmaDeviceJsonHasAFailedRdmaDevicesCheck) {
  if (host_has_rdma_devices())
    GTEST_SKIP() << "this machine has RDMA devices (/sys/class/infiniband)";
  const DoctorRun r = run_doctor({"--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report.at("ok"), false);
  const json* devices = find_check(report, "rdma_devices");
  ASSERT_NE(devices, nullptr) << r.out;
  EXPECT_EQ(devices->at("ok"), false);
  EXPECT_EQ(devices->at("status"), "fail");
  EXPECT_TRUE(contains(devices->at("detail").get<std::string>(), "no RDMA device")) << *devices;
  EXPECT_TRUE(contains(devices->at("fix").get<std::string>(), "rdma_rxe")) << *devices;
  EXPECT_EQ(report.at("devices").at("count"), 0);
}

TEST(Doctor, PeerWithoutRdmaDeviceFailsClearly) {
  if (host_has_rdma_devices())
    GTEST_SKIP() << "this machine has RDMA devices (/sys/class/infiniband)";
  const DoctorRun r = run_doctor({"--peer", "127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out,
                       "[FAIL] peer 127.0.0.1:1: cannot try an rdma_cm connect: no RDMA "
                       "device on this machine"))
      << r.out;
  const auto peer = r.out.find("[FAIL] peer 127.0.0.1:1");
  ASSERT_NE(peer, std::string::npos);
  EXPECT_NE(r.out.find("fix: load an RDMA driver first", peer), std::string::npos) << r.out;
}

TEST(Doctor, QuietPrintsOnlyFailures) {
  if (host_has_rdma_devices())
    GTEST_SKIP() << "this machine has RDMA devices (/sys/class/infiniband)";
  const DoctorRun r = run_doctor({"--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out, "[FAIL] RDMA devices")) << r.out;
  EXPECT_TRUE(contains(r.out, "fix: ")) << r.out;
  for (const char* tag : {"[ ok ]", "[skip]", "[warn]"})
    EXPECT_FALSE(contains(r.out, tag)) << r.out;
}

// --- anywhere -----------------------------------------------------------------------------

TEST(Doctor, JsonCarriesEveryCheckAndMatchesTheExitStatus) {
  const DoctorRun r = run_doctor({"--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.err;
  const json report = json::parse(r.out);
  const std::set<std::string> statuses{"ok", "warn", "fail", "skip"};
  bool any_failed = false;
  std::set<std::string> names;
  for (const auto& c : report.at("checks")) {
    ASSERT_TRUE(c.at("name").is_string() && c.at("detail").is_string() && c.at("fix").is_string())
        << c;
    EXPECT_TRUE(statuses.count(c.at("status").get<std::string>())) << c;
    EXPECT_EQ(c.at("ok").get<bool>(), c.at("status") != "fail") << c;
    EXPECT_FALSE(c.at("detail").get<std::string>().empty()) << c;
    if (c.at("status") == "fail") {
      any_failed = true;
      EXPECT_FALSE(c.at("fix").get<std::string>().empty()) << "a failure without a fix: " << c;
    }
    EXPECT_TRUE(names.insert(c.at("name").get<std::string>()).second) << "duplicate " << c;
  }
  for (const char* name : {"rdma_devices", "memlock", "peer", "cuda", "dmabuf_verbs",
                           "dmabuf_driver", "nvidia_peermem", "gpu_path"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_EQ(report.at("ok").get<bool>(), !any_failed);
  EXPECT_EQ(r.exit_code, any_failed ? 1 : 0);
}

TEST(Doctor, MemlockShowsTheRingItSized) {
  // 1920x1080 nv12: 3110400 bytes a frame, 3112960 page-rounded; 4 slots: 12451840 bytes.
  const DoctorRun r = run_doctor({"-s", "1920x1080", "--pix-fmt", "nv12", "--ring", "4"});
  EXPECT_TRUE(contains(r.out,
                       "4 slots x 3112960 bytes (1920x1080 nv12: 3110400 bytes a frame, "
                       "page-rounded) = 12451840 bytes"))
      << r.out;
  const DoctorRun j = run_doctor({"-s", "1920x1080", "--pix-fmt", "nv12", "--ring", "4", "--json"});
  const json memlock = json::parse(j.out).at("memlock");
  EXPECT_EQ(memlock.at("frame_bytes"), 3110400);
  EXPECT_EQ(memlock.at("slot_bytes"), 3112960);
  EXPECT_EQ(memlock.at("ring_bytes"), 12451840);
  EXPECT_EQ(memlock.at("needed_bytes").get<uint64_t>(),
            12451840 + memlock.at("control_bytes").get<uint64_t>());
}

TEST(Doctor, MemlockDefaultsToEightSlotsOf4kRgba) {
  const DoctorRun r = run_doctor({});
  EXPECT_TRUE(contains(r.out, "8 slots x 33177600 bytes (3840x2160 rgba")) << r.out;
  EXPECT_TRUE(contains(r.out, "= 265420800 bytes")) << r.out;
}

TEST(Doctor, MemlockJudgesTheLimit) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  constexpr uint64_t kKib = 4096;  // 4 MiB: above the control buffers, below a 4K ring
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < kKib * 1024) {
    GTEST_SKIP() << "hard RLIMIT_MEMLOCK " << limit.rlim_max << " bytes is below 4 MiB";
  }
  const DoctorRun fits = run_doctor_with_memlock(kKib, "-s 64x64 --ring 1 --json");
  const json small = json::parse(fits.out);
  const json* ok = find_check(small, "memlock");
  ASSERT_NE(ok, nullptr) << fits.out;
  EXPECT_EQ(ok->at("status"), "ok") << *ok;
  EXPECT_TRUE(contains(ok->at("detail").get<std::string>(), "limit 4194304 bytes")) << *ok;

  const DoctorRun big = run_doctor_with_memlock(kKib, "--json");
  const json report = json::parse(big.out);
  const json* tight = find_check(report, "memlock");
  ASSERT_NE(tight, nullptr) << big.out;
  // CAP_IPC_LOCK (root) lifts the limit for this process, so the doctor only warns then.
  EXPECT_EQ(tight->at("status"), report.at("memlock").at("cap_ipc_lock") ? "warn" : "fail")
      << *tight;
  EXPECT_TRUE(contains(tight->at("fix").get<std::string>(), "ulimit -l unlimited")) << *tight;
  EXPECT_TRUE(contains(tight->at("fix").get<std::string>(), "/etc/security/limits.conf")) << *tight;
}

TEST(Doctor, UsageErrorsAreOneLineAndExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--bogus"}, "--bogus"},
      {{"--peer", "10.0.0.1"}, "HOST:PORT"},
      {{"--peer", "10.0.0.1:0"}, "out of range"},
      {{"--ring", "0"}, "--ring"},
      {{"--pix-fmt", "yuv9000"}, "--pix-fmt \"yuv9000\" unknown"},
      {{"-s", "0x1080"}, "out of range"},
      {{"-s", "big"}, "-s \"big\""},
  };
  for (const auto& [args, needle] : cases) {
    const DoctorRun r = run_doctor(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(contains(r.err, needle)) << needle << " not in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(Doctor, HelpExits0) {
  const DoctorRun r = run_doctor({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "--peer")) << r.out;
}

// --- with RDMA devices (the rxe lab) ------------------------------------------------------

// The first routable IPv4 GID address of an ACTIVE port, from the doctor's own inventory.
std::optional<std::string> routable_ipv4(const json& report) {
  for (const auto& d : report.at("devices").at("devices")) {
    if (!d.contains("ports")) continue;
    for (const auto& p : d.at("ports")) {
      if (!p.contains("gids") || p.at("state") != "PORT_ACTIVE") continue;
      for (const auto& g : p.at("gids")) {
        if (g.at("routable") && g.at("ipv4")) return g.at("address").get<std::string>();
      }
    }
  }
  return std::nullopt;
}

// --- GPU, through the stand-in driver (tests/fakecuda) ---------------------------------------

TEST(DoctorGpu, ReportsTheGpuAndWhichPathEachRdmaDeviceWouldTake) {
  WithFakeCuda fake;
  const DoctorRun r = run_doctor({"--json"});
  const json report = json::parse(r.out);
  const json& gpu = report.at("gpu");
  EXPECT_EQ(gpu.at("cuda_driver_version"), "13.0");
  ASSERT_EQ(gpu.at("cuda_devices").size(), 1u) << gpu;
  EXPECT_EQ(gpu.at("cuda_devices")[0].at("name"), "Fake GPU 0");
  EXPECT_EQ(gpu.at("cuda_devices")[0].at("pci_bus_id"), "0000:41:00.0");
  EXPECT_EQ(gpu.at("gpu_path").at("tcp"), "staged");
  const json* cuda = find_check(report, "cuda");
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->at("status"), "ok");
  EXPECT_EQ(cuda->at("detail"), "CUDA driver 13.0, 1 device: Fake GPU 0");
  // Hopper's answers: writes ordered for the owner, and the flush supported besides.
  EXPECT_EQ(gpu.at("cuda_devices")[0].at("rdma_writes_ordering"), 100);
  EXPECT_EQ(gpu.at("cuda_devices")[0].at("rdma_flush_needed"), false);
  EXPECT_EQ(gpu.at("cuda_devices")[0].at("rdma_flush_supported"), true);
  EXPECT_TRUE(contains(cuda->at("info")[0],
                       "RDMA writes ordered (no flush) (ordering 100, flush supported)"))
      << *cuda;
  if (!host_has_rdma_devices()) return;
  // In the Soft-RoCE lab: rxe imports no dma-buf, so the ladder says so and stages.
  ASSERT_TRUE(gpu.contains("dmabuf_import")) << gpu;
  for (const auto& [device, imports] : gpu.at("dmabuf_import").items()) {
    EXPECT_FALSE(imports.get<bool>()) << device;
    const std::string path = gpu.at("gpu_path").at(device);
    EXPECT_TRUE(contains(
        path, "staged (dmabuf: " + device + " cannot import dma-bufs (ibv_reg_dmabuf_mr(fd -1): "))
        << path;
    EXPECT_TRUE(contains(path, "peermem: nvidia-peermem is not loaded")) << path;
  }
  const json* path = find_check(report, "gpu_path");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->at("status"), "warn");
  EXPECT_FALSE(path->at("fix").get<std::string>().empty());
}

// A GPU before Hopper whose driver cannot flush RDMA writes: the doctor warns, names why, and
// the rings it would receive into are staged.
TEST(DoctorGpu, AGpuThatNeedsAFlushItCannotMakeIsAWarning) {
  WithFakeCuda fake;
  WithEnv ordering("FAKE_CUDA_ORDERING", "0");
  WithEnv options("FAKE_CUDA_FLUSH_OPTIONS", "0");
  const DoctorRun r = run_doctor({"--json"});
  const json report = json::parse(r.out);
  const json& device = report.at("gpu").at("cuda_devices")[0];
  EXPECT_EQ(device.at("rdma_flush_options"), 0);
  EXPECT_EQ(device.at("rdma_flush_needed"), true);
  EXPECT_EQ(device.at("rdma_flush_supported"), false);
  const json* cuda = find_check(report, "cuda");
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->at("status"), "warn");
  EXPECT_TRUE(contains(cuda->at("info")[0],
                       "need a flush it cannot make: rings it receives into are staged"))
      << *cuda;
  EXPECT_TRUE(contains(cuda->at("fix"), "cuFlushGPUDirectRDMAWrites")) << *cuda;
}

TEST(DoctorGpu, WithoutADriverTheGpuChecksSkipAndSayWhy) {
  const DoctorRun r = run_doctor({"--json"});
  const json report = json::parse(r.out);
  const json* cuda = find_check(report, "cuda");
  ASSERT_TRUE(cuda);
  if (cuda->at("status") == "ok") GTEST_SKIP() << "this machine has a CUDA driver and GPU";
  EXPECT_EQ(cuda->at("status"), "skip");
  EXPECT_TRUE(contains(cuda->at("detail"), "frames use host memory")) << *cuda;
  EXPECT_EQ(find_check(report, "gpu_path")->at("detail"),
            "no GPU: --memory cuda is not available here");
}

TEST(DoctorWithRdma, PeerReachesAVerbsReceiverAndFailsWithAFixWhereNothingListens) {
  if (!host_has_rdma_devices()) GTEST_SKIP() << "no RDMA device on this machine";
  const json inventory = json::parse(run_doctor({"--json"}).out);
  const auto address = routable_ipv4(inventory);
  if (!address) GTEST_SKIP() << "no ACTIVE port with a routable IPv4 RoCE v2 GID";

  TempDir dir;
  Process recv({RDMAVIDEO_RECV_BIN, "--listen", *address + ":0", "--transport", "verbs", "--quiet"},
               dir / "recv.stderr");
  const auto port = recv.wait_for_stderr(R"(listening on [0-9.]+:(\d+))", std::chrono::seconds(30));
  ASSERT_TRUE(port) << recv.stderr_text();
  const std::string peer = *address + ":" + *port;

  const DoctorRun good = run_doctor({"--peer", peer, "--json"});
  const json report = json::parse(good.out);
  const json* ok = find_check(report, "peer");
  ASSERT_NE(ok, nullptr) << good.out;
  EXPECT_EQ(ok->at("status"), "ok") << *ok;
  EXPECT_EQ(report.at("peer").at("established"), true) << report.at("peer");
  EXPECT_EQ(report.at("peer").at("event"), "RDMA_CM_EVENT_ESTABLISHED");

  const DoctorRun bad = run_doctor({"--peer", *address + ":1"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  const auto line = bad.out.find("[FAIL] peer " + *address + ":1");
  ASSERT_NE(line, std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("fix: ", line), std::string::npos) << bad.out;

  // The receiver took the probe as one failed sender and still listens.
  EXPECT_FALSE(recv.wait(100ms)) << recv.stderr_text();
}

// --- GID helpers --------------------------------------------------------------------------

doctor::GidBytes gid_of(std::initializer_list<uint8_t> bytes) {
  doctor::GidBytes gid{};
  std::copy(bytes.begin(), bytes.end(), gid.begin());
  return gid;
}

TEST(DoctorGid, Ipv4MappedRoceV2IsRoutable) {
  const auto gid = gid_of({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1});
  EXPECT_EQ(doctor::format_gid(gid), "0000:0000:0000:0000:0000:ffff:0a63:0001");
  const auto v2 = doctor::describe_gid(gid, doctor::GidType::roce_v2, true);
  EXPECT_EQ(v2.text, "10.99.0.1");
  EXPECT_TRUE(v2.ipv4);
  EXPECT_TRUE(v2.routable);
  EXPECT_FALSE(doctor::describe_gid(gid, doctor::GidType::ib_roce_v1, true).routable);
}

TEST(DoctorGid, LinkLocalIpv6IsNotRoutableGlobalIs) {
  const auto link_local =
      gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56});
  const auto ll = doctor::describe_gid(link_local, doctor::GidType::roce_v2, true);
  EXPECT_EQ(ll.text, "fe80::5054:ff:fe12:3456");
  EXPECT_TRUE(ll.link_local);
  EXPECT_FALSE(ll.routable);
  const auto global = gid_of({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  const auto g = doctor::describe_gid(global, doctor::GidType::roce_v2, true);
  EXPECT_EQ(g.text, "2001:db8::1");
  EXPECT_TRUE(g.routable);
}

TEST(DoctorGid, InfinibandGidHasNoAddress) {
  const auto gid =
      gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0c, 0x42, 0xa1, 0x03, 0, 0x12, 0x34, 0x56});
  const auto ib = doctor::describe_gid(gid, doctor::GidType::ib_roce_v1, false);
  EXPECT_TRUE(ib.text.empty());
  EXPECT_FALSE(ib.routable);
  EXPECT_TRUE(doctor::is_zero(doctor::GidBytes{}));
  EXPECT_FALSE(doctor::is_zero(gid));
}

TEST(DoctorGid, SysfsTypeText) {
  EXPECT_EQ(doctor::parse_gid_type("RoCE v2\n"), doctor::GidType::roce_v2);
  EXPECT_EQ(doctor::parse_gid_type("IB/RoCE v1\n"), doctor::GidType::ib_roce_v1);
  EXPECT_EQ(doctor::parse_gid_type(""), doctor::GidType::unknown);
  EXPECT_EQ(doctor::to_string(doctor::GidType::roce_v2), "RoCE v2");
}

}  // namespace
}  // namespace rdmavideo::testing
