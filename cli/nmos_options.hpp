// SPDX-License-Identifier: Apache-2.0
// --nmos ADDRESS:PORT, --nmos-registry URL and --nmos-domain DOMAIN: both programs' NMOS node
// (docs/nmos.md), wired once, as EndOptions wires the options both ends have.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rdmavideo/nmos.hpp"

namespace rdmavideo::cli {

class NmosOptions {
 public:
  /// Adds them to `app`; `what` says what the node offers ("with an NMOS receiver per
  /// stream it takes").
  NmosOptions(CLI::App& app, const std::string& what);
  NmosOptions(const NmosOptions&) = delete;
  NmosOptions& operator=(const NmosOptions&) = delete;
  /// The node's options where --nmos was given (its address and registries, and what the
  /// program is: `role` "receiver" or "sender", `product` "rdmavideo-recv"), else nullopt in
  /// `node`; a bad value, or --nmos-registry without --nmos, is a usage error: the exit code.
  std::optional<int> apply(const CLI::App& app, const std::string& role, const std::string& product,
                           std::optional<nmos::NodeOptions>& node) const;

 private:
  std::string at_;
  std::vector<std::string> registries_;
  std::vector<std::string> domains_;
};

}  // namespace rdmavideo::cli
