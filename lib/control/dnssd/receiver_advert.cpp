// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/receiver_advert.hpp"

#include <algorithm>

#include "rdmavideo/log.hpp"
#include "rdmavideo/version.hpp"

namespace rdmavideo::discovery {

Result<std::unique_ptr<ReceiverAdvert>> ReceiverAdvert::start(
    const ReceiverService& service, const ReceiverAdvertOptions& options) {
  ReceiverRecord record;
  record.protocol = options.max_version;
  if (options.transport != TransportKind::verbs) record.transports.emplace_back("tcp");
  if (options.transport == TransportKind::verbs ||
      (options.transport == TransportKind::automatic && !why_not_verbs())) {
    record.transports.emplace_back("verbs");
  }
  record.key_required = options.key != nullptr;
  if (options.key) record.key_id = auth::key_id(*options.key);
  record.max_streams = options.max_streams;
  record.version = std::string(version());
  auto advert = std::unique_ptr<ReceiverAdvert>(new ReceiverAdvert(service, std::move(record)));
  advert->record_.streams_free = advert->streams_free();
  auto advertiser = Advertiser::start(Advert{
      options.name, kReceiverType, service.local_endpoint().port, receiver_txt(advert->record_)});
  if (!advertiser) return Unexpected(advertiser.error());
  advert->advertiser_ = std::move(*advertiser);
  return advert;
}

uint32_t ReceiverAdvert::streams_free() const {
  const auto reports = service_.reports();
  const auto running = static_cast<uint32_t>(
      std::count_if(reports.begin(), reports.end(),
                    [](const StreamReport& r) { return r.state == StreamReport::State::running; }));
  return record_.max_streams > running ? record_.max_streams - running : 0;
}

void ReceiverAdvert::refresh() {
  const uint32_t free = streams_free();
  if (free == record_.streams_free) return;
  record_.streams_free = free;
  if (auto updated = advertiser_->update(receiver_txt(record_)); !updated) {
    log().warn("DNS-SD: {}", updated.error().message());
  }
}

}  // namespace rdmavideo::discovery
