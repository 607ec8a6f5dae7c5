// SPDX-License-Identifier: Apache-2.0
// rdmavideo-doctor: the one command to run when sending video by RDMA does not work. Lists
// the RDMA devices, ports and GID tables, checks locked memory against the ring a receiver
// would register, tries an rdma_cm connect to a receiver (--peer), looks for CUDA and
// dma-buf support, and prints a fix for every failed check. --new-key writes a shared key;
// --discover lists the receivers and senders DNS-SD shows.
//
// Exit status: 0 when no check failed, 1 when one did, 2 on bad usage.
#include <cstdio>

#include "checks.hpp"
#include "cli.hpp"
#include "options.hpp"
#include "rdmavideo/auth.hpp"
#include "report.hpp"

namespace rdmavideo::doctor {
namespace {

// --new-key: the key file both ends of an authenticated connection use.
int new_key(const std::string& path) {
  if (auto ok = auth::create_key_file(path); !ok) {
    std::fprintf(stderr, "rdmavideo-doctor: --new-key: %s\n", ok.error().message().c_str());
    return cli::kExitFailed;
  }
  std::printf(
      "wrote a new key to %s (mode 0600): copy it to the other end as it is and give "
      "both --key-file %s\n",
      path.c_str(), path.c_str());
  return 0;
}

int run(const Options& o) {
  if (!o.new_key.empty()) return new_key(o.new_key);
  if (o.discover) return discover(o);
  Report report;
  for (auto& section : check_devices()) report.sections.push_back(std::move(section));
  report.sections.push_back(check_memlock(o));
  report.sections.push_back(check_peer(o.peer, o.ring, Timeouts{}.connect));
  report.sections.push_back(check_gpu());
  if (o.json) {
    std::fputs(to_json(report).dump(2).c_str(), stdout);
    std::fputc('\n', stdout);
  } else {
    print_text(report, o.quiet, stdout);
  }
  std::fflush(stdout);
  return report.failed() ? cli::kExitFailed : 0;
}

}  // namespace
}  // namespace rdmavideo::doctor

int main(int argc, char** argv) {
  using namespace rdmavideo::doctor;
  // Everything in run_main, option parsing too: nothing thrown leaves main.
  return rdmavideo::cli::run_main("rdmavideo-doctor", [&] {
    Options options;
    if (auto code = parse_options(argc, argv, options)) return *code;
    return run(options);
  });
}
