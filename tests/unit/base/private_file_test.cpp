// SPDX-License-Identifier: Apache-2.0
// Files only their owner may read (shared keys): made private, read back whole, and refused
// when others may read them (the mode on Linux, the access list on Windows).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rdmavideo/platform/files.hpp"

namespace rdmavideo::platform {
namespace {

namespace fs = std::filesystem;

class PrivateFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("rdmavideo-private-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::vector<std::byte> bytes_of(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

TEST_F(PrivateFile, WrittenPrivateAndReadBackWhole) {
  const auto path = dir_ / "key";
  const auto secret = bytes_of("0123456789abcdef0123456789abcdef\n");
  ASSERT_TRUE(write_private_file(path, secret, "key file"));
  auto size = check_private_file(path, "key file");
  ASSERT_TRUE(size) << size.error().message();
  EXPECT_EQ(*size, secret.size());
  auto read = read_private_file(path, *size, "key file");
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(*read, secret);
  // A size that is no longer the file's is said, not read past.
  auto shorter = read_private_file(path, *size - 1, "key file");
  ASSERT_FALSE(shorter);
  EXPECT_EQ(shorter.error().message(), "key file changed while it was read");
}

TEST_F(PrivateFile, NeverWrittenOverAnExistingFile) {
  const auto path = dir_ / "key";
  ASSERT_TRUE(write_private_file(path, bytes_of("first"), "new key file"));
  auto again = write_private_file(path, bytes_of("second"), "new key file");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message().rfind("new key file: ", 0), 0u) << again.error().message();
  auto read = read_private_file(path, 5, "key file");
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, bytes_of("first"));
}

TEST_F(PrivateFile, AFileOthersMayReadIsRefusedSayingHowToFixIt) {
  const auto path = dir_ / "shared";
  std::ofstream(path) << "0123456789abcdef0123456789abcdef\n";
  // The ordinary way leaves a file others may read (umask 022 on Linux; on Windows the
  // folder's inherited access list). Make sure of it where the mode says it.
  fs::permissions(path, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  auto checked = check_private_file(path, "key file");
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message().find("the key must be private"), std::string::npos)
      << checked.error().message();
}

TEST_F(PrivateFile, AMissingFileAndAFolderAreNamed) {
  auto missing = check_private_file(dir_ / "none", "key file none");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message().rfind("key file none: ", 0), 0u) << missing.error().message();
  auto folder = check_private_file(dir_, "key file dir");
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.error().message(), "key file dir is not a regular file");
}

}  // namespace
}  // namespace rdmavideo::platform
