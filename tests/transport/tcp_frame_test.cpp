// The TCP transport's frame header (transport/tcp/tcp_frame.h): round trips, and every kind of
// damage is refused with a message instead of being read as data.
#include "transport/tcp/tcp_frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

namespace chorus::transport {
namespace {

using ::testing::HasSubstr;

using Header = std::array<std::uint8_t, kFrameHeaderBytes>;

Header encoded(const FrameHeader& h) {
  Header bytes{};
  encodeFrameHeader(h, bytes);
  return bytes;
}

TEST(TcpFrame, HeaderRoundTrips) {
  FrameHeader h;
  h.kind = FrameKind::data;
  h.channel = 65535;
  h.bytes = 4096;
  h.count = 7;
  h.tag = 0x0123456789abcdefull;
  FrameHeader back;
  EXPECT_EQ(decodeFrameHeader(encoded(h), 4096, &back), "");
  EXPECT_EQ(back.kind, h.kind);
  EXPECT_EQ(back.channel, h.channel);
  EXPECT_EQ(back.bytes, h.bytes);
  EXPECT_EQ(back.count, h.count);
  EXPECT_EQ(back.tag, h.tag);
}

TEST(TcpFrame, EveryFlippedBitIsRefused) {
  FrameHeader h;
  h.kind = FrameKind::credit;
  h.channel = 3;
  h.count = 2;
  const Header good = encoded(h);
  for (std::size_t byte = 0; byte < kFrameHeaderBytes; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      Header bad = good;
      bad[byte] ^= static_cast<std::uint8_t>(1 << bit);
      FrameHeader out;
      EXPECT_NE(decodeFrameHeader(bad, 4096, &out), "") << "byte " << byte << " bit " << bit;
    }
}

TEST(TcpFrame, ForeignBytesAreNotAChorusFrame) {
  Header text{};
  const std::string request = "GET / HTTP/1.1\r\nHost: chorus.example\r\n\r\n";
  ASSERT_GE(request.size(), kFrameHeaderBytes);
  std::copy_n(request.begin(), kFrameHeaderBytes, text.begin());
  FrameHeader out;
  EXPECT_THAT(decodeFrameHeader(text, 4096, &out), HasSubstr("not a chorus tcp frame"));
}

TEST(TcpFrame, PayloadsAboveTheirKindsLimitAreRefused) {
  FrameHeader h;
  h.kind = FrameKind::data;
  h.bytes = 4097;
  FrameHeader out;
  EXPECT_THAT(decodeFrameHeader(encoded(h), 4096, &out), HasSubstr("CHORUS_SLOT_BYTES"));
  h.kind = FrameKind::credit;
  h.bytes = 1;
  EXPECT_THAT(decodeFrameHeader(encoded(h), 4096, &out), HasSubstr("credit frame of 1 bytes"));
  h.kind = FrameKind::call;
  h.bytes = 201;
  EXPECT_NE(decodeFrameHeader(encoded(h), 4096, &out), "");
  h.kind = FrameKind::data;
  h.bytes = 0;
  h.channel = kMaxTcpChannel;
  EXPECT_THAT(decodeFrameHeader(encoded(h), 4096, &out), HasSubstr("out of range"));
}

}  // namespace
}  // namespace chorus::transport
