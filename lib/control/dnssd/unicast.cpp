// SPDX-License-Identifier: Apache-2.0
// Unicast DNS-SD (RFC 6763 over ordinary DNS): the PTR records of a service type in a domain,
// each instance's SRV and TXT, and its target's address, asked of the system's name servers
// through the C library's resolver (libresolv). No responder is needed: it is how a facility
// whose network carries no multicast publishes its NMOS registries.
#include <fmt/format.h>

#include "dnssd/names.hpp"
#include "rdmavideo/discovery.hpp"

#ifdef _WIN32

namespace rdmavideo::discovery {

std::vector<std::string> search_domains() { return {}; }

Result<std::vector<Service>> browse_unicast(std::string_view type, std::string_view domain) {
  return Unexpected(
      Error(ErrorCode::unsupported,
            fmt::format("unicast DNS-SD ({}.{}) is not built in on Windows", type, domain)));
}

}  // namespace rdmavideo::discovery

#else

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <resolv.h>

#include <algorithm>
#include <array>

namespace rdmavideo::discovery {
namespace {

// A record's data: where it lies in the message that carried it, and its length.
struct Rdata {
  size_t offset = 0, size = 0;
};

// The resolver's state, its own (res_ninit reads resolv.conf: the name servers and search
// list), answering within about two seconds where a server is gone rather than the default
// 5 s times four tries.
class Resolver {
 public:
  Resolver() {
    ok_ = res_ninit(&state_) == 0;
    state_.retrans = 1;
    state_.retry = 2;
  }
  ~Resolver() {
    if (ok_) res_nclose(&state_);
  }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  bool ok() const { return ok_; }
  res_state get() { return &state_; }

  /// The answer section's records of `type` for `name` (a name as DNS writes it, dots in a
  /// label escaped), as places in `message`, which holds the answer; empty where the name or
  /// the record does not exist. Fails where no server answers.
  Result<std::vector<Rdata>> records(const std::string& name, ns_type type,
                                     std::vector<uint8_t>& message) {
    message.assign(65535, 0);
    const int n = res_nquery(&state_, name.c_str(), ns_c_in, type, message.data(),
                             static_cast<int>(message.size()));
    if (n < 0) {
      if (state_.res_h_errno == HOST_NOT_FOUND || state_.res_h_errno == NO_DATA)
        return std::vector<Rdata>{};
      // The resolver tells a server that failed or refused (it then asks the next) from one
      // that never answered only as TRY_AGAIN, for both.
      return Unexpected(
          Error(ErrorCode::timeout, name + ": no name server answered it (each failed, refused it "
                                           "or was not reached)"));
    }
    message.resize(static_cast<size_t>(n));
    ns_msg msg{};
    if (ns_initparse(message.data(), n, &msg) != 0)
      return Unexpected(Error(ErrorCode::protocol, "a DNS answer for " + name + " is malformed"));
    std::vector<Rdata> out;
    for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
      ns_rr rr{};
      if (ns_parserr(&msg, ns_s_an, i, &rr) != 0) break;
      if (ns_rr_type(rr) != type) continue;  // a CNAME on the way
      // Where the data lies: the names compressed in it point elsewhere in the message.
      out.push_back({static_cast<size_t>(ns_rr_rdata(rr) - message.data()),
                     static_cast<size_t>(ns_rr_rdlen(rr))});
    }
    return out;
  }

 private:
  struct __res_state state_ {};
  bool ok_ = false;
};

// A name in a record's data, in DNS's text form (dots in a label as "\.").
std::optional<std::string> name_at(const std::vector<uint8_t>& message, const uint8_t* at) {
  std::array<char, NS_MAXDNAME> text{};
  if (ns_name_uncompress(message.data(), message.data() + message.size(), at, text.data(),
                         text.size()) < 0)
    return std::nullopt;
  return std::string(text.data());
}

// The host's address, IPv4 first.
std::string address_of(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return {};
  std::string v4, v6;
  for (addrinfo* a = list; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET && v4.empty()) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
      v4 = text;
    } else if (a->ai_family == AF_INET6 && v6.empty()) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof text);
      v6 = text;
    }
  }
  freeaddrinfo(list);
  return v4.empty() ? v6 : v4;
}

// An instance's SRV (the one of lowest priority) and TXT, resolved; nullopt where it has no
// SRV or its target has no address.
Result<std::optional<Service>> resolve(Resolver& resolver, const std::string& instance,
                                       std::string_view type, std::string_view domain) {
  std::vector<uint8_t> message;
  auto srvs = resolver.records(instance, ns_t_srv, message);
  if (!srvs) return Unexpected(srvs.error());
  Service s;
  s.name = instance_label(instance);
  s.type = std::string(type);
  s.domain = std::string(domain);
  s.interface = "unicast DNS";
  int best = 0x10000;
  for (const Rdata& d : *srvs) {
    if (d.size < 7) continue;
    const uint8_t* at = message.data() + d.offset;
    const int priority = ns_get16(at);
    const uint16_t port = ns_get16(at + 4);
    auto target = name_at(message, at + 6);
    if (!target || priority >= best) continue;
    best = priority;
    s.port = port;
    s.host = *target;
  }
  if (s.host.empty() || s.host == ".") return std::optional<Service>{};  // RFC 2782: none here
  s.address = address_of(s.host);
  if (s.address.empty()) return std::optional<Service>{};
  auto txts = resolver.records(instance, ns_t_txt, message);
  if (txts && !txts->empty()) {
    const Rdata d = txts->front();
    const uint8_t* at = message.data() + d.offset;
    std::vector<std::string> strings;  // each a length byte and its characters
    for (size_t i = 0; i < d.size;) {
      const size_t n = at[i];
      if (i + 1 + n > d.size) break;
      strings.emplace_back(reinterpret_cast<const char*>(at + i + 1), n);
      i += 1 + n;
    }
    s.txt = parse_txt(strings);
  }
  return std::optional<Service>{std::move(s)};
}

}  // namespace

std::vector<std::string> search_domains() {
  Resolver resolver;
  std::vector<std::string> out;
  if (!resolver.ok()) return out;
  for (const char* d : resolver.get()->dnsrch) {
    if (!d) break;
    std::string domain(d);
    while (!domain.empty() && domain.back() == '.') domain.pop_back();
    if (domain.empty() || domain == "local") continue;  // mDNS's, browsed over multicast
    if (std::find(out.begin(), out.end(), domain) == out.end()) out.push_back(std::move(domain));
  }
  return out;
}

Result<std::vector<Service>> browse_unicast(std::string_view type, std::string_view domain) {
  Resolver resolver;
  if (!resolver.ok())
    return Unexpected(Error(ErrorCode::unsupported, "the system's resolver could not be read"));
  const std::string browsed = fmt::format("{}.{}", type, domain);
  std::vector<uint8_t> message;
  auto ptrs = resolver.records(browsed, ns_t_ptr, message);
  if (!ptrs) return Unexpected(ptrs.error());
  std::vector<std::string> instances;
  for (const Rdata& d : *ptrs) {
    if (auto name = name_at(message, message.data() + d.offset)) instances.push_back(*name);
  }
  std::vector<Service> out;
  for (const auto& instance : instances) {
    auto s = resolve(resolver, instance, type, domain);
    if (!s) return Unexpected(s.error().context("resolve " + instance));
    if (*s) out.push_back(std::move(**s));
  }
  std::sort(out.begin(), out.end(),
            [](const Service& a, const Service& b) { return a.name < b.name; });
  return out;
}

}  // namespace rdmavideo::discovery

#endif
