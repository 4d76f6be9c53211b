#include "transport/unique_id.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <random>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {

namespace {

constexpr std::array<std::uint8_t, 8> kIdMagic = {'C', 'H', 'O', 'R', 'U', 'S', 'I', 'D'};
constexpr std::uint16_t kIdVersion = 1;
constexpr std::size_t kVersionAt = 8;
constexpr std::size_t kFamilyAt = 10;
constexpr std::size_t kPortAt = 12;
constexpr std::size_t kAddressAt = 16;
constexpr std::size_t kNonceAt = 32;
constexpr std::uint8_t kFamilyIpv4 = 4;
constexpr std::uint8_t kFamilyIpv6 = 6;

// Fills the family and address fields of `id` from `host`; false if it does not resolve.
bool putAddress(UniqueId& id, const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    id.bytes[kFamilyAt] = kFamilyIpv4;
    std::memcpy(&id.bytes[kAddressAt], &v4, sizeof(v4));
    return true;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    id.bytes[kFamilyAt] = kFamilyIpv6;
    std::memcpy(&id.bytes[kAddressAt], &v6, sizeof(v6));
    return true;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return false;
  const addrinfo* chosen = nullptr;
  for (auto* info = list; info; info = info->ai_next) {
    if (info->ai_family == AF_INET) {
      chosen = info;
      break;
    }
    if (info->ai_family == AF_INET6 && !chosen) chosen = info;
  }
  if (chosen && chosen->ai_family == AF_INET) {
    id.bytes[kFamilyAt] = kFamilyIpv4;
    std::memcpy(&id.bytes[kAddressAt], &reinterpret_cast<sockaddr_in*>(chosen->ai_addr)->sin_addr,
                4);
  } else if (chosen) {
    id.bytes[kFamilyAt] = kFamilyIpv6;
    std::memcpy(&id.bytes[kAddressAt], &reinterpret_cast<sockaddr_in6*>(chosen->ai_addr)->sin6_addr,
                16);
  }
  ::freeaddrinfo(list);
  return chosen != nullptr;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

UniqueId makeUniqueId(const std::string& host, int port) {
  if (port < 1 || port > 65535) {
    throw OptionError(fmt::format(
        "unique id: port {} is out of range; pass the store server's bound port (1-65535)", port));
  }
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") {
    throw OptionError(fmt::format(
        "unique id: '{}' is not an address other ranks can reach; pass rank 0's IP address or "
        "host name",
        host));
  }
  UniqueId id;
  std::memcpy(id.bytes.data(), kIdMagic.data(), kIdMagic.size());
  id.bytes[kVersionAt] = kIdVersion & 0xff;
  id.bytes[kVersionAt + 1] = kIdVersion >> 8;
  id.bytes[kPortAt] = static_cast<std::uint8_t>(port >> 8);
  id.bytes[kPortAt + 1] = static_cast<std::uint8_t>(port & 0xff);
  if (!putAddress(id, host)) {
    throw OptionError(fmt::format(
        "unique id: cannot resolve host '{}'; pass a numeric IP address or a resolvable name",
        host));
  }
  std::random_device random;
  for (std::size_t i = 0; i < 8; ++i) {
    id.bytes[kNonceAt + i] = static_cast<std::uint8_t>(random() & 0xff);
  }
  return id;
}

std::string uniqueIdToHex(const UniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * id.bytes.size());
  for (std::uint8_t byte : id.bytes) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 0xf]);
  }
  return text;
}

UniqueId uniqueIdFromHex(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  auto first = text.find_first_not_of(kSpace);
  text = first == std::string_view::npos ? std::string_view() : text.substr(first);
  text = text.substr(0, text.find_last_not_of(kSpace) + 1);
  UniqueId id;
  if (text.size() != 2 * id.bytes.size()) {
    throw OptionError(fmt::format(
        "unique id: expected {} hex digits, got {} characters; pass the whole id that rank 0 "
        "printed",
        2 * id.bytes.size(), text.size()));
  }
  for (std::size_t i = 0; i < id.bytes.size(); ++i) {
    int high = hexValue(text[2 * i]);
    int low = hexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) {
      throw OptionError(fmt::format("unique id: character {} ('{}') is not a hex digit",
                                    high < 0 ? 2 * i : 2 * i + 1,
                                    high < 0 ? text[2 * i] : text[2 * i + 1]));
    }
    id.bytes[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  addressOf(id);  // rejects well-formed hex that is not a chorus id
  return id;
}

StoreAddress addressOf(const UniqueId& id) {
  if (std::memcmp(id.bytes.data(), kIdMagic.data(), kIdMagic.size()) != 0) {
    throw OptionError(
        "unique id: bad magic (the bytes are not a chorus unique id); pass the id made by "
        "makeUniqueId on rank 0, unchanged");
  }
  int version = id.bytes[kVersionAt] | id.bytes[kVersionAt + 1] << 8;
  if (version != kIdVersion) {
    throw OptionError(fmt::format(
        "unique id: version {} but this chorus reads version {}; run the same chorus build on "
        "every rank",
        version, kIdVersion));
  }
  int port = id.bytes[kPortAt] << 8 | id.bytes[kPortAt + 1];
  char text[INET6_ADDRSTRLEN] = {};
  std::uint8_t family = id.bytes[kFamilyAt];
  bool ok =
      port != 0 &&
      ((family == kFamilyIpv4 && ::inet_ntop(AF_INET, &id.bytes[kAddressAt], text, sizeof(text))) ||
       (family == kFamilyIpv6 && ::inet_ntop(AF_INET6, &id.bytes[kAddressAt], text, sizeof(text))));
  if (!ok) {
    throw OptionError(fmt::format(
        "unique id: corrupt address (family {}, port {}); pass the id made by makeUniqueId on "
        "rank 0, unchanged",
        family, port));
  }
  return StoreAddress{text, port};
}

std::uint64_t nonceOf(const UniqueId& id) {
  std::uint64_t nonce = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    nonce |= static_cast<std::uint64_t>(id.bytes[kNonceAt + i]) << (8 * i);
  }
  return nonce;
}

}  // namespace chorus::transport
