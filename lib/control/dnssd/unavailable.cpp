// SPDX-License-Identifier: Apache-2.0
// A Linux build without Avahi: advertising and browsing say why they cannot,
// and everything goes on by address.
#include "rdmavideo/discovery.hpp"

namespace rdmavideo::discovery {
namespace {

Error unavailable() {
  return Error(ErrorCode::unsupported,
               "DNS-SD is not built in (rdmavideo was built without Avahi's client library)");
}

}  // namespace

bool available() { return false; }

Result<std::unique_ptr<Advertiser>> Advertiser::start(Advert /*advert*/) {
  return Unexpected(unavailable());
}

Result<std::vector<Service>> browse(std::string_view /*type*/, std::chrono::milliseconds /*wait*/) {
  return Unexpected(unavailable());
}

Result<Service> find(std::string_view name, std::string_view /*type*/,
                     std::chrono::milliseconds /*wait*/) {
  return Unexpected(unavailable().context(fmt::format("find \"{}\"", name)));
}

}  // namespace rdmavideo::discovery
