#include "transport/tcp/tcp_frame.h"

#include <fmt/format.h>

#include <cstring>

namespace chorus::transport {
namespace {

constexpr std::size_t kChecksummed = 28;

void put32(std::uint8_t* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    at[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put64(std::uint8_t* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    at[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint32_t get32(const std::uint8_t* at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | at[i];
  return v;
}

std::uint64_t get64(const std::uint8_t* at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | at[i];
  return v;
}

std::uint32_t fnv1a(const std::uint8_t* data, std::size_t n) {
  std::uint32_t hash = 2166136261u;
  for (std::size_t i = 0; i < n; ++i) {
    hash ^= data[i];
    hash *= 16777619u;
  }
  return hash;
}

}  // namespace

std::size_t maxFramePayload(FrameKind kind, std::size_t slotBytes) {
  switch (kind) {
    case FrameKind::hello:
      return 1024;
    case FrameKind::data:
      return slotBytes;
    case FrameKind::credit:
    case FrameKind::bye:
      return 0;
    case FrameKind::call:
      return 200;
    case FrameKind::abort:
      return 4096;
  }
  return 0;
}

void encodeFrameHeader(const FrameHeader& header, std::span<std::uint8_t, kFrameHeaderBytes> out) {
  std::uint8_t* p = out.data();
  std::memset(p, 0, kFrameHeaderBytes);
  put32(p, kFrameMagic);
  p[4] = kFrameVersion;
  p[5] = static_cast<std::uint8_t>(header.kind);
  put32(p + 8, header.channel);
  put32(p + 12, header.bytes);
  put32(p + 16, header.count);
  put64(p + 20, header.tag);
  put32(p + kChecksummed, fnv1a(p, kChecksummed));
}

std::string frameKindName(std::uint8_t kind) {
  switch (static_cast<FrameKind>(kind)) {
    case FrameKind::hello:
      return "hello";
    case FrameKind::data:
      return "data";
    case FrameKind::credit:
      return "credit";
    case FrameKind::call:
      return "call";
    case FrameKind::abort:
      return "abort";
    case FrameKind::bye:
      return "bye";
  }
  return fmt::format("kind {}", kind);
}

std::string decodeFrameHeader(std::span<const std::uint8_t, kFrameHeaderBytes> in,
                              std::size_t slotBytes, FrameHeader* header) {
  const std::uint8_t* p = in.data();
  const std::uint32_t magic = get32(p);
  if (magic != kFrameMagic)
    return fmt::format(
        "bad magic 0x{:08x}: not a chorus tcp frame (another program, or a "
        "stream out of step)",
        magic);
  if (p[4] != kFrameVersion)
    return fmt::format(
        "frame version {} (this chorus speaks {}); run the same chorus on every "
        "rank",
        p[4], kFrameVersion);
  const std::uint32_t checksum = get32(p + kChecksummed);
  if (checksum != fnv1a(p, kChecksummed))
    return "header checksum mismatch: the stream is corrupted";
  const std::uint8_t kind = p[5];
  if (kind < static_cast<std::uint8_t>(FrameKind::hello) ||
      kind > static_cast<std::uint8_t>(FrameKind::bye))
    return fmt::format("unknown frame {}", frameKindName(kind));
  if (p[6] != 0 || p[7] != 0) return "reserved header bytes are not zero";
  FrameHeader h;
  h.kind = static_cast<FrameKind>(kind);
  h.channel = get32(p + 8);
  h.bytes = get32(p + 12);
  h.count = get32(p + 16);
  h.tag = get64(p + 20);
  if (h.channel >= kMaxTcpChannel)
    return fmt::format("channel {} is out of range (0..{})", h.channel, kMaxTcpChannel - 1);
  const std::size_t limit = maxFramePayload(h.kind, slotBytes);
  if (h.bytes > limit)
    return fmt::format("{} frame of {} bytes exceeds its limit of {} bytes{}", frameKindName(kind),
                       h.bytes, limit,
                       h.kind == FrameKind::data ? " (the slot size: do the ranks agree on "
                                                   "CHORUS_SLOT_BYTES?)"
                                                 : "");
  *header = h;
  return {};
}

}  // namespace chorus::transport
