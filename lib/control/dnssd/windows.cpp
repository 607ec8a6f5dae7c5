// SPDX-License-Identifier: Apache-2.0
// DNS-SD on Windows through the system's own API: dnsapi.dll's DnsServiceBrowse,
// DnsServiceResolve and DnsServiceRegister (Windows 10 1809 and later), looked up when first
// used rather than linked, so that a Windows without them (and wine, which has none) runs
// the rest: there advertising and browsing fail saying which call is missing, and everything
// goes on by address.
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "dnssd/names.hpp"
#include "dnssd/windows_records.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/library.hpp"

#ifndef DNS_REQUEST_PENDING
#define DNS_REQUEST_PENDING 9506L
#endif

namespace rdmavideo::discovery {
namespace windows {

std::string utf8(const wchar_t* text) {
  if (!text || !*text) return {};
  const int n = WideCharToMultiByte(CP_UTF8, 0, text, -1, nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<size_t>(std::max(n, 1)) - 1, '\0');
  if (n > 1) WideCharToMultiByte(CP_UTF8, 0, text, -1, out.data(), n, nullptr, nullptr);
  return out;
}

std::wstring wide(std::string_view text) {
  if (text.empty()) return {};
  const int size = static_cast<int>(text.size());
  const int n = MultiByteToWideChar(CP_UTF8, 0, text.data(), size, nullptr, 0);
  std::wstring out(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, text.data(), size, out.data(), n);
  return out;
}

namespace {

bool ends_with_nocase(std::string_view text, std::string_view tail) {
  if (tail.size() > text.size()) return false;
  return std::equal(tail.begin(), tail.end(), text.end() - static_cast<ptrdiff_t>(tail.size()),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); });
}

}  // namespace

std::vector<std::string> instances_in(const DNS_RECORDW* records, std::string_view type) {
  std::vector<std::string> out;
  const std::string suffix = fmt::format(".{}.local", type);
  for (const DNS_RECORDW* r = records; r; r = r->pNext) {
    if (r->wType != DNS_TYPE_PTR) continue;
    std::string target = utf8(r->Data.PTR.pNameHost);
    if (!target.empty() && target.back() == '.') target.pop_back();
    if (!ends_with_nocase(target, suffix)) continue;  // another type's, or a subtype's
    if (std::find(out.begin(), out.end(), target) == out.end()) out.push_back(std::move(target));
  }
  return out;
}

Service service_of(const DNS_SERVICE_INSTANCE& instance, std::string_view type) {
  Service s;
  s.name = instance_label(utf8(instance.pszInstanceName));
  s.type = std::string(type);
  s.domain = "local";
  s.host = utf8(instance.pszHostName);
  s.port = instance.wPort;
  s.interface = instance.dwInterfaceIndex ? std::to_string(instance.dwInterfaceIndex) : "";
  if (instance.ip4Address && *instance.ip4Address) {
    const auto a = reinterpret_cast<const uint8_t*>(instance.ip4Address);  // network order
    s.address = fmt::format("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
  } else if (instance.ip6Address) {
    const auto* b = reinterpret_cast<const uint8_t*>(instance.ip6Address->IP6Byte);
    std::string v6;
    for (int i = 0; i < 16; i += 2) {
      if (!v6.empty()) v6 += ':';
      v6 += fmt::format("{:x}", (b[i] << 8) | b[i + 1]);
    }
    s.address = v6;
  }
  std::vector<std::string> strings;
  for (DWORD i = 0; i < instance.dwPropertyCount; ++i) {
    const std::string key = utf8(instance.keys ? instance.keys[i] : nullptr);
    const std::string value = utf8(instance.values ? instance.values[i] : nullptr);
    strings.push_back(value.empty() ? key : key + "=" + value);
  }
  s.txt = parse_txt(strings);
  return s;
}

}  // namespace windows

namespace {

using namespace windows;
using Clock = std::chrono::steady_clock;

// dnsapi.dll's DNS-SD calls, where this Windows has them.
struct Api {
  decltype(&DnsServiceBrowse) browse = nullptr;
  decltype(&DnsServiceBrowseCancel) browse_cancel = nullptr;
  decltype(&DnsServiceResolve) resolve = nullptr;
  decltype(&DnsServiceResolveCancel) resolve_cancel = nullptr;
  decltype(&DnsServiceConstructInstance) construct = nullptr;
  decltype(&DnsServiceFreeInstance) free_instance = nullptr;
  decltype(&DnsServiceRegister) register_service = nullptr;
  decltype(&DnsServiceDeRegister) deregister = nullptr;
  decltype(&DnsFree) free = nullptr;
  std::string missing;  // the first call not found, where one is not
};

template <typename F>
void load(const platform::Library* dll, const char* name, F& into, std::string& missing) {
  into = dll ? reinterpret_cast<F>(dll->symbol(name)) : nullptr;
  if (!into && missing.empty()) missing = name;
}

const Api& api() {
  static const Api loaded = [] {
    Api a;
    // Opened as the CUDA driver is: from the system's folders only, and kept loaded.
    const auto opened = platform::Library::open("dnsapi.dll");
    const platform::Library* dll = opened ? &*opened : nullptr;
    load(dll, "DnsServiceBrowse", a.browse, a.missing);
    load(dll, "DnsServiceBrowseCancel", a.browse_cancel, a.missing);
    load(dll, "DnsServiceResolve", a.resolve, a.missing);
    load(dll, "DnsServiceResolveCancel", a.resolve_cancel, a.missing);
    load(dll, "DnsServiceConstructInstance", a.construct, a.missing);
    load(dll, "DnsServiceFreeInstance", a.free_instance, a.missing);
    load(dll, "DnsServiceRegister", a.register_service, a.missing);
    load(dll, "DnsServiceDeRegister", a.deregister, a.missing);
    load(dll, "DnsFree", a.free, a.missing);
    return a;
  }();
  return loaded;
}

Result<const Api*> usable() {
  const Api& a = api();
  if (!a.missing.empty()) {
    return make_error(ErrorCode::unsupported,
                      "DNS-SD is not available: this Windows's dnsapi.dll has no {} (Windows 10 "
                      "1809 or later has it)",
                      a.missing);
  }
  return &a;
}

Error call_failed(const char* call, DWORD status) {
  return Error(ErrorCode::system, fmt::format("{} failed (DNS status {})", call, status));
}

// One resolve: its answer, waited for. The callback holds it too (a shared_ptr of its own,
// given as the context and deleted by the callback, which comes once: the answer, a failure
// or the cancel), so a resolve given up on never leaves the callback a freed state.
struct Resolving {
  std::mutex mu;
  std::condition_variable done;
  std::optional<Service> found;
  std::optional<DWORD> status;
  std::string type;
};

VOID WINAPI resolved(DWORD status, PVOID context, PDNS_SERVICE_INSTANCE instance) {
  const std::unique_ptr<std::shared_ptr<Resolving>> held(
      static_cast<std::shared_ptr<Resolving>*>(context));
  Resolving* r = held->get();
  {
    std::lock_guard lock(r->mu);
    if (status == ERROR_SUCCESS && instance) r->found = service_of(*instance, r->type);
    r->status = status;
  }
  if (instance) api().free_instance(instance);
  r->done.notify_all();
}

Result<Service> resolve_one(const Api& a, const std::string& full, std::string_view type,
                            Clock::time_point deadline) {
  auto state = std::make_shared<Resolving>();
  state->type = std::string(type);
  std::wstring name = wide(full);
  DNS_SERVICE_RESOLVE_REQUEST request{};
  request.Version = DNS_QUERY_REQUEST_VERSION1;
  request.QueryName = name.data();
  request.pResolveCompletionCallback = resolved;
  auto held = std::make_unique<std::shared_ptr<Resolving>>(state);
  request.pQueryContext = held.get();
  DNS_SERVICE_CANCEL cancel{};
  const DNS_STATUS started = a.resolve(&request, &cancel);
  if (started != DNS_REQUEST_PENDING) return Unexpected(call_failed("DnsServiceResolve", started));
  (void)held.release();  // the callback's now
  std::unique_lock lock(state->mu);
  if (!state->done.wait_until(lock, deadline, [&] { return state->status.has_value(); })) {
    lock.unlock();
    a.resolve_cancel(&cancel);  // the callback still comes, with the cancel's status
    return make_error(ErrorCode::timeout, "{} did not resolve in time", full);
  }
  if (!state->found) return Unexpected(call_failed("DnsServiceResolve", *state->status));
  return *state->found;
}

// A browse: the instances named so far. Held by the callback as a resolve is, deleted by it
// at the cancel's call, which is its last.
struct Browsing {
  std::mutex mu;
  std::vector<std::string> instances;
  std::string type;
};

VOID WINAPI browsed(DWORD status, PVOID context, PDNS_RECORD records) {
  auto* held = static_cast<std::shared_ptr<Browsing>*>(context);
  Browsing* b = held->get();
  if (status == ERROR_SUCCESS && records) {
    auto names = instances_in(reinterpret_cast<const DNS_RECORDW*>(records), b->type);
    std::lock_guard lock(b->mu);
    for (auto& n : names) {
      if (std::find(b->instances.begin(), b->instances.end(), n) == b->instances.end())
        b->instances.push_back(std::move(n));
    }
  }
  if (records) api().free(records, DnsFreeRecordList);
  if (status == ERROR_CANCELLED) delete held;  // the last call
}

std::wstring host_name() {
  wchar_t name[256] = {};
  DWORD size = 256;
  if (!GetComputerNameExW(ComputerNameDnsHostname, name, &size)) return L"rdmavideo";
  return name;
}

class WindowsAdvertiser final : public Advertiser {
 public:
  WindowsAdvertiser(const Api& api, Advert advert) : api_(api), advert_(std::move(advert)) {}
  ~WindowsAdvertiser() override { withdraw(); }

  Result<void> publish() {
    std::lock_guard lock(mu_);
    const std::wstring full = wide(fmt::format("{}.{}.local", advert_.name, advert_.type));
    const std::wstring host = host_name() + L".local";
    auto strings = txt_strings(advert_.txt);
    if (!strings) return Unexpected(strings.error());
    std::vector<std::wstring> keys, values;
    for (const auto& [k, v] : advert_.txt) {
      keys.push_back(wide(k));
      values.push_back(wide(v));
    }
    std::vector<PCWSTR> key_ptrs, value_ptrs;
    for (size_t i = 0; i < keys.size(); ++i) {
      key_ptrs.push_back(keys[i].c_str());
      value_ptrs.push_back(values[i].c_str());
    }
    instance_ = api_.construct(full.c_str(), host.c_str(), nullptr, nullptr, advert_.port, 0, 0,
                               static_cast<DWORD>(keys.size()), key_ptrs.data(), value_ptrs.data());
    if (!instance_) return make_error(ErrorCode::resource, "DnsServiceConstructInstance failed");
    request_ = DNS_SERVICE_REGISTER_REQUEST{};
    request_.Version = DNS_QUERY_REQUEST_VERSION1;
    request_.pServiceInstance = instance_;
    request_.pRegisterCompletionCallback = registered;
    request_.pQueryContext = nullptr;  // the callback may come after this advertiser is gone
    const DWORD started = api_.register_service(&request_, nullptr);
    if (started != DNS_REQUEST_PENDING) {
      api_.free_instance(instance_);
      instance_ = nullptr;
      return Unexpected(call_failed("DnsServiceRegister", started));
    }
    return {};
  }

  Result<void> update(const Txt& txt) override {
    withdraw();
    {
      std::lock_guard lock(mu_);
      advert_.txt = txt;
    }
    return publish();
  }
  std::string name() const override { return advert_.name; }
  // Windows renames nothing it reports: a name taken is the responder's to settle.
  uint32_t renames() const override { return 0; }

 private:
  static VOID WINAPI registered(DWORD status, PVOID /*context*/, PDNS_SERVICE_INSTANCE instance) {
    if (status != ERROR_SUCCESS && instance) {
      log().warn("DNS-SD: \"{}\" was not advertised (DNS status {})",
                 utf8(instance->pszInstanceName), status);
    }
    if (instance) api().free_instance(instance);
  }

  void withdraw() {
    std::lock_guard lock(mu_);
    if (!instance_) return;
    api_.deregister(&request_, nullptr);
    api_.free_instance(instance_);
    instance_ = nullptr;
  }

  const Api& api_;
  Advert advert_;
  std::mutex mu_;
  PDNS_SERVICE_INSTANCE instance_ = nullptr;
  DNS_SERVICE_REGISTER_REQUEST request_{};
};

}  // namespace

bool available() { return api().missing.empty(); }

Result<std::unique_ptr<Advertiser>> Advertiser::start(Advert advert) {
  auto a = usable();
  if (!a) return Unexpected(a.error());
  if (advert.name.empty()) advert.name = utf8(host_name().c_str());
  auto advertiser = std::make_unique<WindowsAdvertiser>(**a, std::move(advert));
  if (auto published = advertiser->publish(); !published) return Unexpected(published.error());
  return std::unique_ptr<Advertiser>(std::move(advertiser));
}

Result<std::vector<Service>> browse(std::string_view type, std::chrono::milliseconds wait) {
  auto a = usable();
  if (!a) return Unexpected(a.error());
  const auto deadline = Clock::now() + wait;
  auto state = std::make_shared<Browsing>();
  state->type = std::string(type);
  std::wstring query = wide(fmt::format("{}.local", type));
  DNS_SERVICE_BROWSE_REQUEST request{};
  request.Version = DNS_QUERY_REQUEST_VERSION1;
  request.QueryName = query.c_str();
  request.pBrowseCallback = browsed;
  auto held = std::make_unique<std::shared_ptr<Browsing>>(state);
  request.pQueryContext = held.get();
  DNS_SERVICE_CANCEL cancel{};
  const DNS_STATUS started = (*a)->browse(&request, &cancel);
  if (started != DNS_REQUEST_PENDING) return Unexpected(call_failed("DnsServiceBrowse", started));
  (void)held.release();                                // the callback's now
  std::this_thread::sleep_until(deadline - wait / 3);  // answers gather; the rest resolves
  (*a)->browse_cancel(&cancel);
  std::vector<std::string> instances;
  {
    std::lock_guard lock(state->mu);
    instances = state->instances;
  }
  std::vector<Service> out;
  for (const auto& full : instances) {
    auto s = resolve_one(**a, full, type, std::max(deadline, Clock::now() + wait / 3));
    if (s) out.push_back(std::move(*s));
  }
  std::sort(out.begin(), out.end(),
            [](const Service& x, const Service& y) { return x.name < y.name; });
  return out;
}

Result<Service> find(std::string_view name, std::string_view type, std::chrono::milliseconds wait) {
  auto a = usable();
  if (!a) return Unexpected(a.error().context(fmt::format("find \"{}\"", name)));
  auto s = resolve_one(**a, fmt::format("{}.{}.local", name, type), type, Clock::now() + wait);
  if (!s && s.error().code() == ErrorCode::timeout) {
    return Unexpected(nobody_answered(name, type, wait));
  }
  return s;
}

}  // namespace rdmavideo::discovery
