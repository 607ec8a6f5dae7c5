// SPDX-License-Identifier: Apache-2.0
// A ReceiverService advertised by DNS-SD (`_rdmavideo._tcp`): its name and port, and a TXT
// record that says what it takes and follows its streams (discovery.hpp, docs/discovery.md).
#pragma once

#include <memory>
#include <string>

#include "rdmavideo/discovery.hpp"
#include "rdmavideo/receiver_service.hpp"

namespace rdmavideo::discovery {

struct ReceiverAdvertOptions {
  std::string name;  ///< the instance name; empty: the host's name, as the responder has it
  TransportKind transport = TransportKind::automatic;
  std::shared_ptr<const auth::SharedKey> key;  ///< its id is advertised, never the key
  uint32_t max_streams = 1;
  uint16_t max_version = proto::kVersion;
};

class ReceiverAdvert {
 public:
  /// Advertises `service` (which must outlive this) on its bound port.
  static Result<std::unique_ptr<ReceiverAdvert>> start(const ReceiverService& service,
                                                       const ReceiverAdvertOptions& options);
  /// Brings the TXT record's streams_free up to date when it changed; cheap, call it often.
  void refresh();
  /// The name as established (after a rename: "studio recorder #2").
  std::string name() const { return advertiser_->name(); }
  /// The record as advertised now.
  ReceiverRecord record() const { return record_; }

 private:
  ReceiverAdvert(const ReceiverService& service, ReceiverRecord record)
      : service_(service), record_(std::move(record)) {}
  uint32_t streams_free() const;

  const ReceiverService& service_;
  ReceiverRecord record_;
  std::unique_ptr<Advertiser> advertiser_;
};

}  // namespace rdmavideo::discovery
