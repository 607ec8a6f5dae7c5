// SPDX-License-Identifier: Apache-2.0
// A private file on Windows: its access list lets no one read it but its owner, SYSTEM and
// the Administrators group. A new one is created with exactly that list (no inherited ACEs).
#include <windows.h>
// windows.h first: the security headers need its types.
#include <aclapi.h>
#include <sddl.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "platform/files_detail.hpp"
#include "platform/win32/win32_error.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/platform/files.hpp"

namespace rdmavideo::platform {
namespace {

struct LocalFreer {
  void operator()(void* p) const noexcept { LocalFree(p); }
};
using LocalMemory = std::unique_ptr<void, LocalFreer>;

struct HandleCloser {
  void operator()(HANDLE h) const noexcept { CloseHandle(h); }
};
using UniqueWinHandle = std::unique_ptr<void, HandleCloser>;

Error windows_error(std::string_view what, DWORD code) {
  return Error(code == ERROR_FILE_NOT_FOUND || code == ERROR_PATH_NOT_FOUND
                   ? ErrorCode::invalid_argument
                   : ErrorCode::system,
               fmt::format("{}: {}", what, win32::error_text(code)));
}

bool is_well_known(PSID sid, WELL_KNOWN_SID_TYPE type) {
  return IsWellKnownSid(sid, type) != FALSE;
}

std::string account_name(PSID sid) {
  wchar_t name[256], domain[256];
  DWORD name_size = 256, domain_size = 256;
  SID_NAME_USE use{};
  if (LookupAccountSidW(nullptr, sid, name, &name_size, domain, &domain_size, &use)) {
    const std::wstring wide = domain_size ? std::wstring(domain) + L"\\" + name : name;
    return std::filesystem::path(wide).string();
  }
  wchar_t* text = nullptr;
  if (ConvertSidToStringSidW(sid, &text)) {
    const LocalMemory owned(text);
    return std::filesystem::path(text).string();
  }
  return "an unknown account";
}

std::string make_private_hint(const std::filesystem::path& path) {
  return fmt::format("icacls \"{}\" /inheritance:r /grant:r \"%USERNAME%:R\"", path.string());
}

// The current user's SID as text ("S-1-5-21-...").
std::optional<std::wstring> current_user_sid() {
  HANDLE token = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) return std::nullopt;
  const UniqueWinHandle owned(token);
  DWORD size = 0;
  GetTokenInformation(token, TokenUser, nullptr, 0, &size);
  std::vector<std::byte> buffer(size);
  if (!size || !GetTokenInformation(token, TokenUser, buffer.data(), size, &size)) {
    return std::nullopt;
  }
  wchar_t* text = nullptr;
  if (!ConvertSidToStringSidW(reinterpret_cast<TOKEN_USER*>(buffer.data())->User.Sid, &text)) {
    return std::nullopt;
  }
  const LocalMemory freed(text);
  return std::wstring(text);
}

}  // namespace

Result<uint64_t> check_private_file(const std::filesystem::path& path, std::string_view what) {
  const std::wstring wide = path.wstring();
  WIN32_FILE_ATTRIBUTE_DATA attributes{};
  if (!GetFileAttributesExW(wide.c_str(), GetFileExInfoStandard, &attributes)) {
    return Unexpected(windows_error(what, GetLastError()));
  }
  if (attributes.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)) {
    return make_error(ErrorCode::invalid_argument, "{} is not a regular file", what);
  }
  const uint64_t size =
      (static_cast<uint64_t>(attributes.nFileSizeHigh) << 32) | attributes.nFileSizeLow;
  PSID owner = nullptr;
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  const DWORD rc = GetNamedSecurityInfoW(wide.c_str(), SE_FILE_OBJECT,
                                         OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                         &owner, nullptr, &dacl, nullptr, &descriptor);
  const LocalMemory freed(descriptor);
  if (rc != ERROR_SUCCESS || !owner) {
    // A file system without access lists (FAT, a network share that hides them).
    log().warn(
        "{}: who may read it cannot be checked here ({}); keep it where only you can "
        "read it",
        what, rc != ERROR_SUCCESS ? win32::error_text(rc) : "it has no owner");
    return size;
  }
  if (!dacl) {
    return make_error(ErrorCode::invalid_argument,
                      "{} has no access list, so everyone may read it; the key must be private: "
                      "{}",
                      what, make_private_hint(path));
  }
  constexpr ACCESS_MASK kReads = FILE_READ_DATA | GENERIC_READ | GENERIC_ALL;
  for (DWORD i = 0; i < dacl->AceCount; ++i) {
    void* ace = nullptr;
    if (!GetAce(dacl, i, &ace)) continue;
    const auto* header = static_cast<const ACE_HEADER*>(ace);
    if (header->AceType != ACCESS_ALLOWED_ACE_TYPE) continue;
    auto* allowed = static_cast<ACCESS_ALLOWED_ACE*>(ace);
    PSID sid = &allowed->SidStart;
    if ((allowed->Mask & kReads) == 0 || EqualSid(sid, owner) ||
        is_well_known(sid, WinLocalSystemSid) || is_well_known(sid, WinBuiltinAdministratorsSid) ||
        is_well_known(sid, WinCreatorOwnerSid)) {
      continue;
    }
    return make_error(ErrorCode::invalid_argument,
                      "{} may be read by {} (its access list); the key must be private: {}", what,
                      account_name(sid), make_private_hint(path));
  }
  return size;
}

Result<size_t> read_file_into(const std::filesystem::path& path, std::span<std::byte> into,
                              std::string_view what) {
  UniqueWinHandle file(CreateFileW(path.wstring().c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr,
                                   OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr));
  if (file.get() == INVALID_HANDLE_VALUE) {
    (void)file.release();
    return Unexpected(windows_error(what, GetLastError()));
  }
  size_t got = 0;
  while (got < into.size()) {
    DWORD n = 0;
    if (!ReadFile(file.get(), into.data() + got, static_cast<DWORD>(into.size() - got), &n,
                  nullptr)) {
      return Unexpected(windows_error(fmt::format("{}: read", what), GetLastError()));
    }
    if (n == 0) break;
    got += n;
  }
  return got;
}

Result<void> write_private_file(const std::filesystem::path& path, std::span<const std::byte> bytes,
                                std::string_view what) {
  const auto user = current_user_sid();
  if (!user) return Unexpected(windows_error(fmt::format("{}: who am I", what), GetLastError()));
  // Protected (no inherited ACEs): full access for this user, SYSTEM and Administrators.
  const std::wstring sddl = L"D:P(A;;FA;;;" + *user + L")(A;;FA;;;SY)(A;;FA;;;BA)";
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl.c_str(), SDDL_REVISION_1,
                                                            &descriptor, nullptr)) {
    return Unexpected(windows_error(fmt::format("{}: access list", what), GetLastError()));
  }
  const LocalMemory freed(descriptor);
  SECURITY_ATTRIBUTES attributes{sizeof attributes, descriptor, FALSE};
  const std::wstring wide = path.wstring();
  UniqueWinHandle file(CreateFileW(wide.c_str(), GENERIC_WRITE, 0, &attributes, CREATE_NEW,
                                   FILE_ATTRIBUTE_NORMAL, nullptr));
  if (file.get() == INVALID_HANDLE_VALUE) {
    (void)file.release();
    return Unexpected(windows_error(what, GetLastError()));
  }
  DWORD written = 0;
  const bool ok =
      WriteFile(file.get(), bytes.data(), static_cast<DWORD>(bytes.size()), &written, nullptr) &&
      written == bytes.size() && FlushFileBuffers(file.get());
  const DWORD err = GetLastError();
  file.reset();
  if (!ok) {
    DeleteFileW(wide.c_str());
    return Unexpected(windows_error(fmt::format("{}: write", what), err));
  }
  return {};
}

}  // namespace rdmavideo::platform
