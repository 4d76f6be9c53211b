// Call tags (api layer): the 64-bit value sent with every message of a call so that a peer
// running a different call notices (transport/fifo.h). Deterministic across processes.
#pragma once

#include <cstdint>
#include <string_view>

namespace chorus::api {

// Accumulates values into a tag: FNV-1a over the bytes, finished with a SplitMix64 mix.
class CallTag {
 public:
  CallTag& add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
      addByte(static_cast<std::uint8_t>(value >> (8 * i)));
    return *this;
  }
  CallTag& add(std::string_view text) {
    add(text.size());
    for (char c : text)
      addByte(static_cast<std::uint8_t>(c));
    return *this;
  }
  std::uint64_t value() const { return mix(hash_); }

  // The tag of call number `number` of a shape whose tag is `base`: one mix instead of hashing
  // byte by byte, since it is computed on every call. Distinct numbers give distinct tags.
  static std::uint64_t numbered(std::uint64_t base, std::uint64_t number) {
    return mix(base ^ (number * 0xd6e8feb86659fd93ull));
  }

 private:
  // SplitMix64's finalizer (a bijection).
  static std::uint64_t mix(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  void addByte(std::uint8_t byte) { hash_ = (hash_ ^ byte) * 0x100000001b3ull; }
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace chorus::api
