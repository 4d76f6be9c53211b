// Registered memory (chorus::memAlloc, NCCL's ncclMemAlloc): host memory every local peer can
// map, so a receiver reads a message by reference with plain loads instead of the kernel's
// process_vm_readv, and reduces straight out of the sender's buffer.
//
// Each allocation is its own memfd named "chorus-mem-<id>" (ids are never reused in a process)
// and mapped shared. The registry finds the allocation that holds an address range. A peer
// opens the allocation as /proc/<pid>/fd/<fd> (the same permission as process_vm_readv),
// checks the memfd's name against the id, maps it, and keeps the mapping in a per-process
// cache keyed by (pid, id): at most kMappedPeerAllocations, least recently used ones unmapped.
// Mapping a new allocation first unmaps those whose owners have freed them (checked the same
// way), so a freed allocation's memory lives on in a peer only until that peer maps another.
// A mapping in use (PeerMapping held) stays valid until released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace chorus::transport {

// Where a registered allocation lies in its owner's process.
struct RegisteredRange {
  std::int32_t fd = -1;  // the owner's descriptor of the memfd
  std::uint64_t id = 0;  // unique in the owner's process, from 1
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
};

// `bytes` (> 0) of zero-filled, page-aligned memory that local peers can map. Throws
// OptionError for 0 bytes and CommError when the memory cannot be had (names the errno).
void* allocateRegistered(std::size_t bytes);
// Frees memory from allocateRegistered(); nullptr is ignored. Throws OptionError for any
// other pointer (not from allocateRegistered, not its start, or freed already).
void freeRegistered(void* pointer);
// The registered allocation holding all of [address, address + bytes), if one does. One
// atomic load while nothing is registered; otherwise a lookup under a shared lock.
std::optional<RegisteredRange> findRegistered(std::uint64_t address, std::uint64_t bytes);

// A growable buffer in registered memory, for the runtime's scratch and private copies, so
// peers map those too. Falls back to the heap when registered memory cannot be had. Contents
// are not kept when it grows. Move-only.
class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  RegisteredBuffer(RegisteredBuffer&& other) noexcept;
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept;
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;
  ~RegisteredBuffer();

  // At least `bytes`, page aligned (nullptr for 0 bytes if it never grew); valid until the
  // next call that grows it.
  std::uint8_t* reserve(std::size_t bytes);

 private:
  void release();
  std::uint8_t* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool registered_ = false;
};

// One peer allocation mapped into this process; unmapped when the last holder lets go.
class PeerMapping {
 public:
  PeerMapping(const std::uint8_t* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  PeerMapping(const PeerMapping&) = delete;
  PeerMapping& operator=(const PeerMapping&) = delete;
  ~PeerMapping();
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  const std::uint8_t* data_;
  std::size_t bytes_;
};

inline constexpr std::size_t kMappedPeerAllocations = 64;

// Process `pid`'s allocation `range`, mapped here (cached). nullptr if it cannot be: the
// descriptor is gone or names another memfd, or /proc/<pid>/fd may not be opened; callers
// then fall back to process_vm_readv.
std::shared_ptr<const PeerMapping> mapPeerAllocation(int pid, const RegisteredRange& range);
// Reads of a peer's registered memory through a mapping, in this process so far (tests: the
// mapped path ran). Transports call countMappedRead() once per message piece they hand out.
void countMappedRead();
std::uint64_t mappedReads();

}  // namespace chorus::transport
