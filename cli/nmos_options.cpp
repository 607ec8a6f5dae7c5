// SPDX-License-Identifier: Apache-2.0
#include "nmos_options.hpp"

#include "cli.hpp"

namespace rdmavideo::cli {

NmosOptions::NmosOptions(CLI::App& app, const std::string& what) {
  app.add_option("--nmos", at_,
                 "Run an NMOS node (IS-04 v1.3 Node API and registration, IS-05 v1.1 Connection "
                 "API) on ADDRESS:PORT, " +
                     what);
  app.add_option("--nmos-registry", registries_,
                 "The NMOS registry to register with, http://HOST:PORT; repeat for the next by "
                 "priority (default: found by DNS-SD, else peer-to-peer)");
  app.add_option("--nmos-domain", domains_,
                 "The unicast DNS-SD domain to look for registries in (_nmos-register._tcp."
                 "DOMAIN); repeat for more (default: the resolver's search domains; mDNS is "
                 "browsed as well)");
}

std::optional<int> NmosOptions::apply(const CLI::App& app, const std::string& role,
                                      const std::string& product,
                                      std::optional<nmos::NodeOptions>& node) const {
  node.reset();
  if (at_.empty()) {
    if (!registries_.empty()) return usage_error(app, "--nmos-registry needs --nmos");
    if (!domains_.empty()) return usage_error(app, "--nmos-domain needs --nmos");
    return std::nullopt;
  }
  auto at = parse_endpoint(at_, true);
  if (!at) return usage_error(app, "--nmos " + at.error().message());
  for (const auto& url : registries_) {
    if (!url.starts_with("http://")) {
      return usage_error(app, "--nmos-registry \"" + url + "\" is not http://HOST:PORT");
    }
  }
  for (const auto& domain : domains_) {
    if (domain.empty() || domain.find_first_of(" /:") != std::string::npos) {
      return usage_error(app, "--nmos-domain \"" + domain + "\" is not a DNS domain");
    }
  }
  nmos::NodeOptions o;
  o.domains = domains_;
  o.listen = *at;
  o.registries = registries_;
  o.description = "rdmavideo " + role;
  o.product = product;
  o.function = role == "receiver" ? "Receiver" : "Sender";
  node = std::move(o);
  return std::nullopt;
}

}  // namespace rdmavideo::cli
