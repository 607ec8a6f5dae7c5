// SPDX-License-Identifier: Apache-2.0
// Memory straight from the system (zeroed, locked where asked) and libraries opened at run time:
// the same assertions on Linux and, cross-built, on Windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

#include "rdmavideo/platform/library.hpp"
#include "rdmavideo/platform/pages.hpp"

namespace rdmavideo::platform {
namespace {

TEST(Pages, ZeroedWritableAndLockedWhereAsked) {
  const size_t page = page_bytes();
  EXPECT_GE(page, 4096u);
  EXPECT_TRUE(std::has_single_bit(page));
  EXPECT_GT(physical_memory_bytes(), uint64_t{64} << 20);
  for (const bool lock : {false, true}) {
    const size_t bytes = size_t{1} << 20;  // under every default locked-memory cap
    auto at = map_pages(bytes, lock, "test pages");
    ASSERT_TRUE(at) << at.error().message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*at) % page, 0u);
    EXPECT_TRUE(std::all_of(*at, *at + bytes, [](std::byte b) { return b == std::byte{0}; }));
    std::fill(*at, *at + bytes, std::byte{0x5a});
    EXPECT_EQ((*at)[bytes - 1], std::byte{0x5a});
    unmap_pages(*at, bytes, lock);
  }
}

TEST(Pages, MoreThanTheMachineHasIsRefusedNamingWhat) {
  const uint64_t too_much = std::max<uint64_t>(physical_memory_bytes(), uint64_t{1} << 30) * 64;
  auto at = map_pages(static_cast<size_t>(too_much), true, "a huge ring");
  ASSERT_FALSE(at);
  EXPECT_EQ(at.error().message().rfind("a huge ring: ", 0), 0u) << at.error().message();
}

TEST(Library, OpensASystemLibraryAndFindsItsSymbols) {
#ifdef _WIN32
  const char* name = "kernel32.dll";
  const char* symbol = "GetTickCount64";
#else
  const char* name = "libc.so.6";
  const char* symbol = "malloc";
#endif
  auto lib = Library::open(name);
  ASSERT_TRUE(lib) << lib.error().message();
  EXPECT_NE(lib->symbol(symbol), nullptr);
  EXPECT_EQ(lib->symbol("no_such_symbol_in_any_library"), nullptr);
  EXPECT_FALSE(lib->path_of(symbol).empty());
}

TEST(Library, AMissingLibraryIsNamed) {
  auto lib = Library::open("rdmavideo-no-such-library-0");
  ASSERT_FALSE(lib);
  EXPECT_NE(lib.error().message().find("rdmavideo-no-such-library-0"), std::string::npos)
      << lib.error().message();
}

}  // namespace
}  // namespace rdmavideo::platform
