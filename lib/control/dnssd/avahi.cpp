// SPDX-License-Identifier: Apache-2.0
// DNS-SD through avahi-daemon: Avahi's client library over its threaded event loop. Every
// Avahi call made outside the loop's own callbacks holds the loop's lock; what the callbacks
// find is handed to the waiting thread under a mutex of this file's own.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include <net/if.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "dnssd/names.hpp"
#include "rdmavideo/discovery.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::discovery {
namespace {

using Clock = std::chrono::steady_clock;

std::string avahi_text(int error) { return avahi_strerror(error); }

Error responder_error(int error) {
  if (error == AVAHI_ERR_NO_DAEMON) {
    return Error(ErrorCode::unsupported,
                 "no mDNS responder: avahi-daemon is not running (Avahi: Daemon not running)");
  }
  return Error(ErrorCode::system, fmt::format("Avahi: {}", avahi_text(error)));
}

// The event loop and the client on it. The loop's thread runs until destruction.
class Loop {
 public:
  using StateChange = std::function<void(AvahiClient* client, AvahiClientState state)>;

  static Result<std::unique_ptr<Loop>> start(StateChange on_state = {}) {
    auto loop = std::unique_ptr<Loop>(new Loop(std::move(on_state)));
    loop->poll_ = avahi_threaded_poll_new();
    if (!loop->poll_) return make_error(ErrorCode::resource, "Avahi: cannot make an event loop");
    int error = 0;
    // Callbacks may come from inside avahi_client_new (its first state), before it returns.
    loop->client_ = avahi_client_new(avahi_threaded_poll_get(loop->poll_), AvahiClientFlags(0),
                                     &Loop::client_changed, loop.get(), &error);
    if (!loop->client_) return Unexpected(responder_error(error));
    if (avahi_threaded_poll_start(loop->poll_) < 0) {
      return make_error(ErrorCode::resource, "Avahi: cannot start its event loop's thread");
    }
    loop->running_ = true;
    return loop;
  }

  ~Loop() {
    if (running_) avahi_threaded_poll_stop(poll_);
    if (client_) avahi_client_free(client_);  // its browsers, resolvers and groups with it
    if (poll_) avahi_threaded_poll_free(poll_);
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  AvahiClient* client() const { return client_; }
  // Holds the loop's lock: for Avahi calls from outside its callbacks.
  class Locked {
   public:
    explicit Locked(const Loop& loop) : poll_(loop.poll_) { avahi_threaded_poll_lock(poll_); }
    ~Locked() { avahi_threaded_poll_unlock(poll_); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    AvahiThreadedPoll* poll_;
  };

 private:
  explicit Loop(StateChange on_state) : on_state_(std::move(on_state)) {}
  static void client_changed(AvahiClient* client, AvahiClientState state, void* self) {
    auto* loop = static_cast<Loop*>(self);
    if (loop->on_state_) loop->on_state_(client, state);
  }

  StateChange on_state_;
  AvahiThreadedPoll* poll_ = nullptr;
  AvahiClient* client_ = nullptr;
  bool running_ = false;
};

bool link_local_v6(const AvahiAddress& a) {
  return a.proto == AVAHI_PROTO_INET6 && a.data.ipv6.address[0] == 0xfe &&
         (a.data.ipv6.address[1] & 0xc0) == 0x80;
}

std::string interface_name(AvahiIfIndex index) {
  char name[IF_NAMESIZE] = {};
  if (index >= 0 && if_indextoname(static_cast<unsigned>(index), name)) return name;
  return index >= 0 ? std::to_string(index) : std::string();
}

std::vector<std::string> strings_of(AvahiStringList* list) {
  std::vector<std::string> out;
  for (AvahiStringList* l = list; l; l = avahi_string_list_get_next(l)) {
    out.emplace_back(reinterpret_cast<const char*>(avahi_string_list_get_text(l)),
                     avahi_string_list_get_size(l));
  }
  // Avahi keeps them last first.
  return {out.rbegin(), out.rend()};
}

Service service_of(AvahiIfIndex interface, const char* name, const char* type, const char* domain,
                   const char* host, const AvahiAddress* address, uint16_t port,
                   AvahiStringList* txt) {
  Service s;
  s.name = name;
  s.type = type;
  s.domain = domain;
  s.host = host ? host : "";
  s.port = port;
  s.interface = interface_name(interface);
  if (address) {
    char text[AVAHI_ADDRESS_STR_MAX] = {};
    avahi_address_snprint(text, sizeof text, address);
    s.address = text;
    if (link_local_v6(*address) && !s.interface.empty()) s.address += "%" + s.interface;
  }
  s.txt = parse_txt(strings_of(txt));
  return s;
}

// Which of two resolutions of one instance to keep: IPv4 first, then a routable IPv6 one.
int address_rank(const std::string& address) {
  if (address.find(':') == std::string::npos) return 0;
  return address.find('%') == std::string::npos ? 1 : 2;
}

class AvahiStrings {
 public:
  static Result<AvahiStrings> of(const Txt& txt) {
    auto strings = txt_strings(txt);
    if (!strings) return Unexpected(strings.error());
    AvahiStrings out;
    // Avahi puts each string first: add them last first, so they go out in order.
    for (const auto& s : std::vector(strings->rbegin(), strings->rend())) {
      out.list_ = avahi_string_list_add_arbitrary(
          out.list_, reinterpret_cast<const uint8_t*>(s.data()), s.size());
    }
    return out;
  }
  AvahiStrings() = default;
  AvahiStrings(AvahiStrings&& o) noexcept : list_(std::exchange(o.list_, nullptr)) {}
  AvahiStrings& operator=(AvahiStrings&& o) noexcept {
    std::swap(list_, o.list_);
    return *this;
  }
  ~AvahiStrings() { avahi_string_list_free(list_); }
  AvahiStringList* get() const { return list_; }

 private:
  AvahiStringList* list_ = nullptr;
};

// ---- browsing ----

struct BrowseState {
  std::mutex mu;
  std::condition_variable changed;
  AvahiClient* client = nullptr;
  std::map<std::string, Service> found;
  int resolving = 0;
  bool all_for_now = false;
  std::optional<Error> failure;
};

void resolved(AvahiServiceResolver* r, AvahiIfIndex interface, AvahiProtocol /*protocol*/,
              AvahiResolverEvent event, const char* name, const char* type, const char* domain,
              const char* host, const AvahiAddress* address, uint16_t port, AvahiStringList* txt,
              AvahiLookupResultFlags /*flags*/, void* user) {
  auto* state = static_cast<BrowseState*>(user);
  {
    std::lock_guard lock(state->mu);
    if (event == AVAHI_RESOLVER_FOUND) {
      Service s = service_of(interface, name, type, domain, host, address, port, txt);
      auto it = state->found.find(s.name);
      if (it == state->found.end() || address_rank(s.address) < address_rank(it->second.address)) {
        state->found[s.name] = std::move(s);
      }
    }
    --state->resolving;
  }
  avahi_service_resolver_free(r);
  state->changed.notify_all();
}

void browsed(AvahiServiceBrowser* /*b*/, AvahiIfIndex interface, AvahiProtocol protocol,
             AvahiBrowserEvent event, const char* name, const char* type, const char* domain,
             AvahiLookupResultFlags /*flags*/, void* user) {
  auto* state = static_cast<BrowseState*>(user);
  std::lock_guard lock(state->mu);
  switch (event) {
    case AVAHI_BROWSER_NEW:
      // An address of the protocol it was seen over: an instance seen over IPv4 gets its IPv4
      // address (which address_rank() then prefers), not a link-local IPv6 one.
      if (avahi_service_resolver_new(state->client, interface, protocol, name, type, domain,
                                     protocol, AvahiLookupFlags(0), resolved, state)) {
        ++state->resolving;
      }
      break;
    case AVAHI_BROWSER_REMOVE: state->found.erase(name); break;
    case AVAHI_BROWSER_ALL_FOR_NOW: state->all_for_now = true; break;
    case AVAHI_BROWSER_FAILURE:
      state->failure =
          Error(ErrorCode::system, fmt::format("Avahi: browse {}: {}", type ? type : "",
                                               avahi_text(avahi_client_errno(state->client))));
      break;
    case AVAHI_BROWSER_CACHE_EXHAUSTED: break;
  }
  state->changed.notify_all();
}

// ---- finding one by name ----

struct FindState {
  std::mutex mu;
  std::condition_variable changed;
  std::optional<Service> found;
  std::optional<int> failed;  // Avahi's error
};

void found_one(AvahiServiceResolver* r, AvahiIfIndex interface, AvahiProtocol /*protocol*/,
               AvahiResolverEvent event, const char* name, const char* type, const char* domain,
               const char* host, const AvahiAddress* address, uint16_t port, AvahiStringList* txt,
               AvahiLookupResultFlags /*flags*/, void* user) {
  auto* state = static_cast<FindState*>(user);
  {
    std::lock_guard lock(state->mu);
    if (event == AVAHI_RESOLVER_FOUND) {
      state->found = service_of(interface, name, type, domain, host, address, port, txt);
    } else {
      state->failed = avahi_client_errno(avahi_service_resolver_get_client(r));
    }
  }
  state->changed.notify_all();
}

// ---- advertising ----

class AvahiAdvertiser final : public Advertiser {
 public:
  explicit AvahiAdvertiser(Advert advert) : advert_(std::move(advert)), name_(advert_.name) {}

  Result<void> begin() {
    auto txt = AvahiStrings::of(advert_.txt);
    if (!txt) return Unexpected(txt.error());
    txt_ = std::move(*txt);
    auto loop = Loop::start(
        [this](AvahiClient* client, AvahiClientState state) { client_changed(client, state); });
    if (!loop) return Unexpected(loop.error());
    loop_ = std::move(*loop);
    // Probing takes about a second; a conflict found then renames before it is established.
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(5), [this] { return established_ || failure_; });
    if (failure_ && !established_) return Unexpected(*failure_);
    return {};
  }

  ~AvahiAdvertiser() override {
    loop_.reset();  // the group freed with the client: the daemon says goodbye
  }

  Result<void> update(const Txt& txt) override {
    auto strings = AvahiStrings::of(txt);
    if (!strings) return Unexpected(strings.error());
    Loop::Locked locked(*loop_);
    txt_ = std::move(*strings);
    if (!group_ || avahi_entry_group_is_empty(group_)) return {};  // added when it is up
    std::string name = this->name();
    if (int rc = avahi_entry_group_update_service_txt_strlst(
            group_, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), name.c_str(),
            std::string(advert_.type).c_str(), nullptr, txt_.get());
        rc < 0) {
      return Unexpected(responder_error(rc).context(fmt::format("update \"{}\"", name)));
    }
    return {};
  }

  std::string name() const override {
    std::lock_guard lock(mu_);
    return name_;
  }
  uint32_t renames() const override {
    std::lock_guard lock(mu_);
    return renames_;
  }

 private:
  // On the loop's thread (or inside avahi_client_new).
  void client_changed(AvahiClient* client, AvahiClientState state) {
    switch (state) {
      case AVAHI_CLIENT_S_RUNNING: add(client); break;
      case AVAHI_CLIENT_S_COLLISION:
      case AVAHI_CLIENT_S_REGISTERING:
        if (group_) avahi_entry_group_reset(group_);
        break;
      case AVAHI_CLIENT_FAILURE: fail(responder_error(avahi_client_errno(client))); break;
      case AVAHI_CLIENT_CONNECTING: break;
    }
  }

  void add(AvahiClient* client) {
    if (!group_) group_ = avahi_entry_group_new(client, &AvahiAdvertiser::group_changed, this);
    if (!group_) {
      fail(responder_error(avahi_client_errno(client)));
      return;
    }
    if (!avahi_entry_group_is_empty(group_)) return;
    {
      std::lock_guard lock(mu_);
      const char* host = avahi_client_get_host_name(client);
      if (name_.empty() && host) name_ = host;  // unnamed: called as its host is
    }
    const std::string type(advert_.type);
    for (;;) {
      const std::string name = this->name();
      int rc = avahi_entry_group_add_service_strlst(
          group_, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), name.c_str(),
          type.c_str(), nullptr, nullptr, advert_.port, txt_.get());
      if (rc == AVAHI_ERR_COLLISION) {  // taken by a service of this host
        rename();
        continue;
      }
      if (rc < 0 || (rc = avahi_entry_group_commit(group_)) < 0) {
        fail(responder_error(rc).context(fmt::format("advertise \"{}\"", name)));
      }
      return;
    }
  }

  void rename() {
    std::lock_guard lock(mu_);
    char* next = avahi_alternative_service_name(name_.c_str());
    log().info("DNS-SD: \"{}\" is taken on the network; advertising as \"{}\"", name_, next);
    name_ = next;
    avahi_free(next);
    ++renames_;
  }

  static void group_changed(AvahiEntryGroup* group, AvahiEntryGroupState state, void* user) {
    auto* self = static_cast<AvahiAdvertiser*>(user);
    self->group_ = group;
    switch (state) {
      case AVAHI_ENTRY_GROUP_ESTABLISHED: {
        std::lock_guard lock(self->mu_);
        self->established_ = true;
        self->changed_.notify_all();
        break;
      }
      case AVAHI_ENTRY_GROUP_COLLISION:  // another host has the name
        self->rename();
        avahi_entry_group_reset(group);
        self->add(avahi_entry_group_get_client(group));
        break;
      case AVAHI_ENTRY_GROUP_FAILURE:
        self->fail(responder_error(avahi_client_errno(avahi_entry_group_get_client(group))));
        break;
      case AVAHI_ENTRY_GROUP_UNCOMMITED:
      case AVAHI_ENTRY_GROUP_REGISTERING: break;
    }
  }

  void fail(Error error) {
    {
      std::lock_guard lock(mu_);
      if (established_) log().warn("DNS-SD: \"{}\": {}", name_, error.message());
      failure_ = std::move(error);
    }
    changed_.notify_all();
  }

  const Advert advert_;
  AvahiStrings txt_;                  // under the loop's lock
  AvahiEntryGroup* group_ = nullptr;  // the loop's
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string name_;
  uint32_t renames_ = 0;
  bool established_ = false;
  std::optional<Error> failure_;
  std::unique_ptr<Loop> loop_;  // last: stopped first
};

}  // namespace

bool available() { return true; }

Result<std::unique_ptr<Advertiser>> Advertiser::start(Advert advert) {
  auto advertiser = std::make_unique<AvahiAdvertiser>(std::move(advert));
  if (auto begun = advertiser->begin(); !begun) return Unexpected(begun.error());
  return std::unique_ptr<Advertiser>(std::move(advertiser));
}

Result<std::vector<Service>> browse(std::string_view type, std::chrono::milliseconds wait) {
  BrowseState state;
  auto loop = Loop::start();
  if (!loop) return Unexpected(loop.error());
  {
    Loop::Locked locked(**loop);
    state.client = (*loop)->client();
    if (!avahi_service_browser_new(state.client, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC,
                                   std::string(type).c_str(), nullptr, AvahiLookupFlags(0), browsed,
                                   &state)) {
      return Unexpected(responder_error(avahi_client_errno(state.client)));
    }
  }
  std::vector<Service> out;
  {
    std::unique_lock lock(state.mu);
    state.changed.wait_until(lock, Clock::now() + wait, [&] {
      return state.failure || (state.all_for_now && state.resolving == 0);
    });
    if (state.failure) return Unexpected(*state.failure);
  }
  loop->reset();  // the loop's thread stopped: `state` is ours alone
  for (auto& [name, service] : state.found) out.push_back(std::move(service));
  return out;
}

Result<Service> find(std::string_view name, std::string_view type, std::chrono::milliseconds wait) {
  FindState state;
  auto loop = Loop::start();
  if (!loop) return Unexpected(loop.error());
  const auto deadline = Clock::now() + wait;
  // An IPv4 address first (a link-local IPv6 one needs its interface named to be of use),
  // then, after a second and a half, any.
  AvahiProtocol address = AVAHI_PROTO_INET;
  for (;;) {
    {
      Loop::Locked locked(**loop);
      if (!avahi_service_resolver_new((*loop)->client(), AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC,
                                      std::string(name).c_str(), std::string(type).c_str(), "local",
                                      address, AvahiLookupFlags(0), found_one, &state)) {
        return Unexpected(responder_error(avahi_client_errno((*loop)->client())));
      }
    }
    const auto until = address == AVAHI_PROTO_INET
                           ? std::min(deadline, Clock::now() + std::chrono::milliseconds(1500))
                           : deadline;
    std::unique_lock lock(state.mu);
    state.changed.wait_until(lock, until, [&] { return state.found || state.failed; });
    if (!state.found && address == AVAHI_PROTO_INET && Clock::now() < deadline) {
      address = AVAHI_PROTO_UNSPEC;
      state.failed.reset();
      continue;
    }
    if (state.found) {
      Service found = *state.found;
      lock.unlock();
      loop->reset();
      return found;
    }
    // Avahi's resolver gives up after about five seconds; ask again while time is left.
    if (!state.failed || *state.failed != AVAHI_ERR_TIMEOUT || Clock::now() >= deadline) break;
    state.failed.reset();
  }
  std::optional<int> failed;
  {
    std::lock_guard lock(state.mu);
    failed = state.failed;
  }
  loop->reset();
  if (failed && *failed != AVAHI_ERR_TIMEOUT) {
    return Unexpected(
        responder_error(*failed).context(fmt::format("find \"{}\" ({})", name, type)));
  }
  return Unexpected(nobody_answered(name, type, wait));
}

}  // namespace rdmavideo::discovery
