// SPDX-License-Identifier: Apache-2.0
// printable(): what a peer sends is escaped where it could rewrite a terminal or a log, and
// passed through where it is ordinary text, UTF-8 included.
#include <gtest/gtest.h>

#include "rdmavideo/text.hpp"

namespace rdmavideo {
namespace {

TEST(Printable, OrdinaryTextPassesThrough) {
  EXPECT_EQ(printable("cam 1 - studio (left)"), "cam 1 - studio (left)");
  EXPECT_EQ(printable("cam\xc3\xa9 \xe6\x91\x84\xe5\x83\x8f \xf0\x9f\x8e\xa5"),
            "cam\xc3\xa9 \xe6\x91\x84\xe5\x83\x8f \xf0\x9f\x8e\xa5");  // é, CJK, an emoji
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, EscapesC0AndDelete) {
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("line\nbreak\x7f"), "line\\x0abreak\\x7f");
  EXPECT_EQ(printable(std::string_view("nul\0x", 5)), "nul\\x00x");
}

TEST(Printable, EscapesC1EvenWhenWellFormed) {
  EXPECT_EQ(printable("a\xc2\x9b"
                      "31mb"),
            "a\\u009b31mb");  // U+009B, the 8-bit CSI
  EXPECT_EQ(printable("a\x9b"
                      "31mb"),
            "a\\x9b31mb");  // a lone 0x9b is no UTF-8
}

TEST(Printable, EscapesBidirectionalControls) {
  EXPECT_EQ(printable("evil\xe2\x80\xaegnp.exe"), "evil\\u202egnp.exe");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");   // isolates
  EXPECT_EQ(printable("\xe2\x80\x8f"), "\\u200f");                        // RIGHT-TO-LEFT MARK
  EXPECT_EQ(printable("\xe2\x80\xa8"), "\\u2028");                        // LINE SEPARATOR
}

TEST(Printable, EscapesMalformedUtf8ByteByByte) {
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable("\xe2\x80"), "\\xe2\\x80");                    // truncated
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("ok\xff"), "ok\\xff");
}

}  // namespace
}  // namespace rdmavideo

namespace rdmavideo {
namespace {

// Valid UTF-8 passes as it is; each byte that starts no well-formed sequence (a stray
// continuation, an overlong form, a surrogate, a sequence cut short) becomes U+FFFD.
TEST(ValidUtf8, ReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(valid_utf8("cam \xc3\xa9\xe2\x80\xae"), "cam \xc3\xa9\xe2\x80\xae");
  EXPECT_EQ(valid_utf8("a\xe9z"), "a\xef\xbf\xbdz");                              // Latin-1
  EXPECT_EQ(valid_utf8("\x80"), "\xef\xbf\xbd");                                  // continuation
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(valid_utf8("ab\xc3"), "ab\xef\xbf\xbd");                              // cut short
  EXPECT_EQ(valid_utf8(""), "");
}

}  // namespace
}  // namespace rdmavideo
