// SPDX-License-Identifier: Apache-2.0
#include "trace.hpp"

#include <cerrno>

#include "rdmavideo/log.hpp"

namespace rdmavideo::send_cli {

Result<std::unique_ptr<FrameTrace>> FrameTrace::open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) return Unexpected(system_error(fmt::format("--trace {}", path), errno));
  return std::unique_ptr<FrameTrace>(new FrameTrace(file));
}

FrameTrace::~FrameTrace() { std::fclose(file_); }

double FrameTrace::ms(TimePoint t) {
  if (!zero_) zero_ = t;
  return std::chrono::duration<double, std::milli>(t - *zero_).count();
}

void FrameTrace::source(uint64_t sequence, TimePoint due, TimePoint woke, TimePoint filled,
                        TimePoint done, std::string_view outcome) {
  std::lock_guard lock(mu_);
  const double d = ms(due);
  std::fprintf(file_,
               "{\"seq\":%llu,\"due\":%.3f,\"woke\":%.3f,\"filled\":%.3f,\"done\":%.3f,"
               "\"outcome\":\"%.*s\"}\n",
               static_cast<unsigned long long>(sequence), d, ms(woke), ms(filled), ms(done),
               static_cast<int>(outcome.size()), outcome.data());
}

void FrameTrace::destination(const FrameTiming& t) {
  std::lock_guard lock(mu_);
  const double ready = ms(t.ready);
  const std::string dropped =
      t.dropped ? fmt::format(",\"dropped\":\"{}\"", stats::to_string(*t.dropped)) : "";
  std::fprintf(file_,
               "{\"seq\":%llu,\"dest\":%u,\"ready\":%.3f,\"taken\":%.3f,\"credited\":%.3f,"
               "\"written\":%.3f%s}\n",
               static_cast<unsigned long long>(t.sequence), t.destination, ready, ms(t.taken),
               ms(t.credited), ms(t.written), dropped.c_str());
}

}  // namespace rdmavideo::send_cli
