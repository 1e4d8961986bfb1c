// Names a site chose, shown to a person (core/plain_text.hpp marked_text): seen, never obeyed.
#include "core/plain_text.hpp"

#include <gtest/gtest.h>

namespace {
using leuria::core::is_utf8;
using leuria::core::marked_text;

TEST(MarkedText, PlainNamesAreUnchanged) {
  EXPECT_EQ(marked_text("Kiln & Co. <shop>"), "Kiln & Co. <shop>");  // markup is the page's job (html_escape)
  EXPECT_EQ(marked_text("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  // A zero-width joiner stays: emoji sequences need it.
  EXPECT_EQ(marked_text("\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"), "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB");
}

TEST(MarkedText, BidiControlsAndInvisiblesAreShown) {
  EXPECT_EQ(marked_text("Shop\xE2\x80\xAEgnp.exe"), "Shop[U+202E]gnp.exe");
  EXPECT_EQ(marked_text("a\xE2\x81\xA6" "b\xE2\x81\xA9"), "a[U+2066]b[U+2069]");
  EXPECT_EQ(marked_text("x\xE2\x80\x8By"), "x[U+200B]y");
  EXPECT_EQ(marked_text("\xEF\xBB\xBFz"), "[U+FEFF]z");
  EXPECT_EQ(marked_text("\xF3\xA0\x80\x81"), "[U+E0001]");  // a tag character
}

TEST(MarkedText, TerminalEscapesAreShownNotSent) {
  EXPECT_EQ(marked_text("\x1B[2J\x1B]8;;https://evil.example\x07link"), "[U+001B][2J[U+001B]]8;;https://evil.example[U+0007]link");
  EXPECT_EQ(marked_text("line\nbreak\r\t"), "line[U+000A]break[U+000D][U+0009]");
  EXPECT_EQ(marked_text("\xC2\x9B" "31m"), "[U+009B]31m");  // the C1 CSI
}

TEST(MarkedText, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(marked_text("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_TRUE(is_utf8(marked_text("\xC0\xAF\xED\xA0\x80")));
  EXPECT_FALSE(is_utf8("\xC0\xAF"));
  EXPECT_TRUE(is_utf8(""));
}

}  // namespace
