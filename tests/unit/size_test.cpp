// Byte sizes on the command line.
#include <gtest/gtest.h>

#include "support/error.h"
#include "support/size.h"

namespace chorus {
namespace {

TEST(Size, ParsesBinarySuffixes) {
  EXPECT_EQ(parseSize("8"), 8u);
  EXPECT_EQ(parseSize("64K"), 64u << 10);
  EXPECT_EQ(parseSize("1M"), 1u << 20);
  EXPECT_EQ(parseSize("1m"), 1u << 20);
  EXPECT_EQ(parseSize("2G"), 2ull << 30);
  EXPECT_EQ(parseSize("3KiB"), 3u << 10);
  EXPECT_EQ(parseSize("5B"), 5u);
}

TEST(Size, RejectsGarbageWithTheAcceptedForms) {
  for (const char* bad : {"", "K", "1.5M", "12Q", "-1", "99999999999999999999G"}) {
    try {
      parseSize(bad);
      FAIL() << bad;
    } catch (const OptionError& e) {
      EXPECT_NE(std::string(e.what()).find("64K"), std::string::npos) << e.what();
    }
  }
}

TEST(Size, FormatsWithTheLargestExactUnit) {
  EXPECT_EQ(formatSize(64u << 20), "64 MiB");
  EXPECT_EQ(formatSize(1536), "1536 B");
  EXPECT_EQ(formatSize(2048), "2 KiB");
  EXPECT_EQ(formatSize(7), "7 B");
}

}  // namespace
}  // namespace chorus
