// SPDX-License-Identifier: Apache-2.0
// --discover: what DNS-SD shows on the network: the receivers with what they take and the
// streams they have free, and the senders that advertise. Text for people, --json for programs.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "checks.hpp"
#include "cli.hpp"
#include "rdmavideo/discovery.hpp"

namespace rdmavideo::doctor {
namespace {

using discovery::Service;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

nlohmann::json txt_json(const discovery::Txt& txt) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : txt) out[key] = value;
  return out;
}

nlohmann::json service_json(const Service& s) {
  return {{"name", s.name}, {"host", s.host},           {"address", s.address},
          {"port", s.port}, {"interface", s.interface}, {"txt", txt_json(s.txt)}};
}

nlohmann::json receiver_json(const Service& s) {
  auto out = service_json(s);
  auto record = discovery::parse_receiver_txt(s.txt);
  if (!record) {
    out["error"] = record.error().message();
    return out;
  }
  out["protocol"] = record->protocol;
  out["transports"] = record->transports;
  out["key_required"] = record->key_required;
  if (!record->key_id.empty()) out["key_id"] = record->key_id;
  out["streams_free"] = record->streams_free;
  out["max_streams"] = record->max_streams;
  out["version"] = record->version;
  return out;
}

void print_receivers(const std::vector<Service>& receivers) {
  std::printf("%zu receiver%s (%s)\n", receivers.size(), receivers.size() == 1 ? "" : "s",
              std::string(discovery::kReceiverType).c_str());
  if (receivers.empty()) return;
  std::printf("  %-28s %-24s %-10s %-22s %-8s %s\n", "NAME", "ADDRESS", "TRANSPORT", "KEY", "FREE",
              "VERSION");
  for (const auto& s : receivers) {
    const std::string address = s.endpoint().to_string();
    auto r = discovery::parse_receiver_txt(s.txt);
    if (!r) {
      std::printf("  %-28s %-24s (%s)\n", s.name.c_str(), address.c_str(),
                  r.error().message().c_str());
      continue;
    }
    const std::string key = r->key_required ? "required " + r->key_id : "none";
    const std::string free = fmt::format("{}/{}", r->streams_free, r->max_streams);
    std::printf("  %-28s %-24s %-10s %-22s %-8s %s\n", s.name.c_str(), address.c_str(),
                joined(r->transports).c_str(), key.c_str(), free.c_str(), r->version.c_str());
  }
}

void print_senders(const std::vector<Service>& senders) {
  std::printf("%zu sender%s (%s)\n", senders.size(), senders.size() == 1 ? "" : "s",
              std::string(discovery::kSenderType).c_str());
  if (senders.empty()) return;
  std::printf("  %-28s %-18s %-24s %s\n", "NAME", "HOST", "FORMAT", "RECEIVERS");
  for (const auto& s : senders) {
    const std::string format =
        fmt::format("{} @ {}", discovery::txt_value(s.txt, "format").value_or("?"),
                    discovery::txt_value(s.txt, "rate").value_or("?"));
    std::printf("  %-28s %-18s %-24s %s\n", s.name.c_str(), s.address.c_str(), format.c_str(),
                discovery::txt_value(s.txt, "destinations").value_or("").c_str());
  }
}

}  // namespace

int discover(const Options& o) {
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(o.discover_wait_s * 1000));
  auto receivers = discovery::browse(discovery::kReceiverType, wait);
  if (!receivers) {
    std::fprintf(stderr, "rdmavideo-doctor: --discover: %s\n", receivers.error().message().c_str());
    return cli::kExitFailed;
  }
  auto senders = discovery::browse(discovery::kSenderType, wait);
  if (!senders) {
    std::fprintf(stderr, "rdmavideo-doctor: --discover: %s\n", senders.error().message().c_str());
    return cli::kExitFailed;
  }
  if (o.json) {
    nlohmann::json out{{"receivers", nlohmann::json::array()},
                       {"senders", nlohmann::json::array()}};
    for (const auto& s : *receivers) out["receivers"].push_back(receiver_json(s));
    for (const auto& s : *senders) out["senders"].push_back(service_json(s));
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_receivers(*receivers);
    print_senders(*senders);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace rdmavideo::doctor
