// What each fuzz target checks on one input, shared by the libFuzzer targets (fuzz/*.cpp) and
// the test that replays the corpus and the kept crash inputs in every test run
// (tests/unit/fuzz_regressions_test.cpp). A violated property aborts.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "chorus/error.h"
#include "ir/collective.h"
#include "ir/formats.h"
#include "transport/tcp/tcp_frame.h"

namespace chorus::fuzz {

// The frame header decoder on arbitrary bytes: never reads past the header, and every
// accepted header re-encodes to the same bytes within its kind's payload limit. The byte after
// the header, if any, picks the slot size (in KiB).
inline void checkTcpFrame(const std::uint8_t* data, std::size_t size) {
  using namespace chorus::transport;
  if (size < kFrameHeaderBytes) return;
  const std::span<const std::uint8_t, kFrameHeaderBytes> header(data, kFrameHeaderBytes);
  const std::size_t slotBytes =
      size > kFrameHeaderBytes ? std::size_t{data[kFrameHeaderBytes]} << 10 : 4096;
  FrameHeader decoded;
  if (!decodeFrameHeader(header, slotBytes, &decoded).empty()) return;
  std::uint8_t again[kFrameHeaderBytes];
  encodeFrameHeader(decoded, std::span<std::uint8_t, kFrameHeaderBytes>(again));
  if (std::memcmp(again, data, kFrameHeaderBytes) != 0) std::abort();
  if (decoded.bytes > maxFramePayload(decoded.kind, slotBytes)) std::abort();
}

// The plan readers (MSCCL XML, JSON, text by content) and the collective lookup: bad input
// ends in a chorus::UserError, never a crash or another exception.
inline void checkPlanReader(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const ir::Algorithm& algorithm : ir::readAlgorithms(text, "fuzz"))
      (void)ir::collectiveOf(algorithm);
  } catch (const UserError&) {
    // Rejected with a message: what bad input should get.
  }
}

}  // namespace chorus::fuzz
