// UniqueId: NCCL-style 128-byte id naming the TcpStore server of a communicator (runtime
// bootstrap). Rank 0 makes it, ships it to the others (hex text), and all connect to it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace chorus::transport {

// Layout (bytes): 0-7 magic "CHORUSID", 8-9 version (little-endian), 10 address family (4 or
// 6), 11 reserved, 12-13 port (big-endian), 14-15 reserved, 16-31 IPv4 (first 4 bytes) or IPv6
// address, 32-39 random nonce, 40-127 zero. Plain data: copy it freely.
struct UniqueId {
  std::array<std::uint8_t, 128> bytes{};
  friend bool operator==(const UniqueId&, const UniqueId&) = default;
};

// Where a unique id says the store server listens; `host` is a numeric IPv4/IPv6 address.
struct StoreAddress {
  std::string host;
  int port = 0;
};

// An id for a store server at host:port with a fresh random nonce. `host` is a numeric address
// or a host name (resolved now, IPv4 preferred) that the other ranks can reach; `port` is
// 1-65535. Throws OptionError for a wildcard or unresolvable host or a bad port.
UniqueId makeUniqueId(const std::string& host, int port);

// 256 lowercase hex digits.
std::string uniqueIdToHex(const UniqueId& id);
// Parses uniqueIdToHex's output (surrounding whitespace allowed; either case). Throws
// OptionError naming the problem if the text is not 256 hex digits or not a chorus id.
UniqueId uniqueIdFromHex(std::string_view text);

// The server address inside `id`; throws OptionError if the id's magic, version or address is
// wrong (e.g. the bytes are not a chorus id at all).
StoreAddress addressOf(const UniqueId& id);
// The random nonce inside `id`: differs between runs, so it makes a good PrefixStore prefix.
std::uint64_t nonceOf(const UniqueId& id);

}  // namespace chorus::transport
