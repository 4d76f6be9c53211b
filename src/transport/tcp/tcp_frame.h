// The TCP transport's wire format. Every message on a connection is a frame: a 32-byte header,
// then `bytes` of payload. The header is checked on receipt (magic, version, kind, sizes,
// checksum), so a stray or corrupted byte stream is an error naming the peer, never data.
//
// Header (little-endian): u32 magic "CHTF", u8 version, u8 kind, u16 reserved (0),
// u32 channel, u32 bytes, u32 count, u64 tag, u32 FNV-1a checksum of the first 28 bytes.
//   hello   count = sender rank, channel = which of the pair's connections (0 for the first),
//           tag = group id hash, payload = auth token (first frame)
//   data    channel, payload = one FIFO slot, tag = the sender's call tag
//   credit  channel, count = slots the receiver released since its last credit
//   call    payload = the sender's published call description (<= 200 bytes)
//   abort   payload = the reason the sender's group failed
//   bye     the sender leaves cleanly; it sends nothing more; tag = collectives it started
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace chorus::transport {

inline constexpr std::size_t kFrameHeaderBytes = 32;
inline constexpr std::uint32_t kFrameMagic = 0x46544843;  // "CHTF"
inline constexpr std::uint8_t kFrameVersion = 1;
inline constexpr std::uint32_t kMaxTcpChannel = 1 << 16;

enum class FrameKind : std::uint8_t {
  hello = 1,
  data = 2,
  credit = 3,
  call = 4,
  abort = 5,
  bye = 6
};

struct FrameHeader {
  FrameKind kind = FrameKind::data;
  std::uint32_t channel = 0;
  std::uint32_t bytes = 0;
  std::uint32_t count = 0;
  std::uint64_t tag = 0;
};

// The largest payload each kind may carry, `slotBytes` for data.
std::size_t maxFramePayload(FrameKind kind, std::size_t slotBytes);

void encodeFrameHeader(const FrameHeader& header, std::span<std::uint8_t, kFrameHeaderBytes> out);

// Decodes and checks `in`; empty string on success, else what is wrong ("bad magic 0x...: not
// a chorus tcp frame", "checksum mismatch", "data frame of 300000 bytes exceeds the 262144-byte
// slot", ...). Never reads outside `in`.
std::string decodeFrameHeader(std::span<const std::uint8_t, kFrameHeaderBytes> in,
                              std::size_t slotBytes, FrameHeader* header);

// The name of a kind for messages ("data", "credit", ...; "kind 9" for unknown values).
std::string frameKindName(std::uint8_t kind);

}  // namespace chorus::transport
